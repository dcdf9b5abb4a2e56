// A result's column names as the service serves them. SQL allows `SELECT 1 AS a, 2 AS a`, but a
// JSON row keyed by name cannot hold both, `columns=` could pick only one, and a view's table
// cannot have both. So the stored result renames duplicates the way DuckDB names the columns of a
// table created from such a query (`a`, `a_1`; case-insensitive, as DuckDB identifiers are):
// rows, column_names, CSV headers and `service.<team>.result_<x>` all agree.

/** Column names made unique the way DuckDB does it (`a`, `a_1`, ...), so any result can be a table. */
export function uniqueColumnNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.map((n) => {
    const base = n === '' ? 'column' : n;
    let out = base;
    for (let i = 1; seen.has(out.toLowerCase()); i += 1) out = `${base}_${i}`;
    seen.add(out.toLowerCase());
    return out;
  });
}
