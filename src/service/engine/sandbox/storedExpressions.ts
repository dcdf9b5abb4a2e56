// Expressions DuckDB stores with a table and evaluates when the table is read or written: column
// defaults (on insert), generated columns (on every read), CHECK constraints (on every write). The
// sandbox refuses them in the CREATE TABLE it checks (columnDefinitions.ts), but a table can hold
// them from before (an older version, a restore), so every table a statement reads or writes is
// also judged by what DuckDB itself says it holds (duckdb_columns().column_default,
// duckdb_constraints().expression), each expression as a SELECT's would be, with the caller's
// rights: this check does not depend on the sandbox having read the CREATE TABLE right.
import type { DuckDBConnection } from '@duckdb/node-api';
import { selectDenial, type AccessContext } from './accessPolicy.ts';
import type { Parsed } from './sandbox.ts';

/** `catalog.schema.table` (lowercase) -> the texts of the expressions DuckDB evaluates for it. */
export type ExpressionCatalog = ReadonlyMap<string, readonly string[]>;

export async function readExpressionCatalog(conn: DuckDBConnection): Promise<ExpressionCatalog> {
  const r = await conn.runAndReadAll(
    `SELECT lower(database_name), lower(schema_name), lower(table_name), column_default FROM duckdb_columns() WHERE column_default IS NOT NULL
     UNION ALL
     SELECT lower(database_name), lower(schema_name), lower(table_name), expression FROM duckdb_constraints() WHERE constraint_type = 'CHECK' AND expression IS NOT NULL`,
  );
  const out = new Map<string, string[]>();
  for (const [db, schema, table, expr] of r.getRowsJson()) {
    const key = `${String(db)}.${String(schema)}.${String(table)}`;
    const list = out.get(key) ?? [];
    list.push(String(expr));
    out.set(key, list);
  }
  return out;
}

/** The first reason an expression stored with table `key` may not be evaluated for this caller. */
export async function storedExpressionDenial(
  key: string,
  catalog: ExpressionCatalog,
  ctx: AccessContext,
  parse: (sql: string) => Promise<Parsed>,
): Promise<string | undefined> {
  const exprs = catalog.get(key);
  if (exprs === undefined) return undefined;
  const name = key.startsWith('temp.main.') ? key.slice('temp.main.'.length) : key;
  for (const expr of exprs) {
    const parsed = await parse(`SELECT ${expr}`);
    if (parsed.kind !== 'query' || parsed.statements.length !== 1) {
      return `Not allowed: table ${name} has a default, generated column or CHECK that cannot be checked (${expr}); recreate it without`;
    }
    const d = selectDenial(parsed.statements[0], ctx);
    if (d !== undefined) return `${d.message} (in a default, generated column or CHECK of table ${name})`;
  }
  return undefined;
}
