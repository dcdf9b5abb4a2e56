import type { ColumnSpec } from '../../types/decode.ts';
import { parseType } from '../../types/parse.ts';
import type { SqlType } from '../../types/sqlType.ts';

/**
 * How DuckDB reads one column of a JSON page (`read_json(..., columns = {...})`) and the SQL that
 * turns what it read into the column's value, typed from `column_types` (never sniffed).
 *
 * DuckDB's JSON reader casts leniently where sluice's decoders refuse: it rounds `1.5` into an
 * integer column and `"1.005"` into a `decimal(3, 2)`, reads `1` as true, and the text `"NaN"` in
 * a double column as NULL; its casts from text round too. So integers, floats, decimals and
 * booleans are read as their text, checked against a pattern (integers: digits; decimals: at most
 * `precision - scale` digits, then at most `scale`; booleans: `true` or `false`) and cast, which
 * reads `NaN` and `Infinity`; a value that does not fit stops the statement with an `error()`.
 * Lenient still, and exact: a JSON string of digits in an integer column is read as the number,
 * a JSON number in a varchar column as its text. Dates and timestamps are
 * read typed: DuckDB's JSON reader parses them several times faster than a cast from text does
 * (the figures: docs/performance.md); only its infinities are refused after.
 */
export interface NativeColumn {
  readonly name: string;
  /** The DuckDB type `read_json` reads the value as. */
  readonly read: string;
  /** The select-list expression giving the column its value (aliased to its name). */
  readonly select: string;
  /** The DuckDB type of the value: the type of the Parquet column DuckDB writes. */
  readonly type: string;
}

/** The columns of a result as DuckDB reads them, or why the native path cannot carry them exactly. */
export type NativeColumns = { readonly columns: readonly NativeColumn[] } | { readonly reason: string };

/** Reads `columns` natively when every column has a DuckDB type that holds each of its values exactly. */
export function nativeColumns(columns: readonly ColumnSpec[]): NativeColumns {
  const seen = new Set<string>();
  const out: NativeColumn[] = [];
  for (const c of columns) {
    // DuckDB's identifiers ignore case: two columns it would take for one go the general way.
    const folded = c.name.toLowerCase();
    if (seen.has(folded)) return { reason: `columns "${c.name}" differ only in case (DuckDB would take them for one)` };
    seen.add(folded);
    const column = nativeColumn(c.name, parseType(c.type));
    if (typeof column === 'string') return { reason: `column "${c.name}" (${c.type}): ${column}` };
    out.push(column);
  }
  if (out.length === 0) return { reason: 'the result has no columns' };
  return { columns: out };
}

const INTEGERS = { tinyint: 'TINYINT', smallint: 'SMALLINT', integer: 'INTEGER', bigint: 'BIGINT' } as const;

/** The column, or why DuckDB cannot hold its values as sluice's writers do (types.md). */
function nativeColumn(name: string, type: SqlType): NativeColumn | string {
  const id = quoteIdentifier(name);
  const as = (expr: string) => `${expr} AS ${id}`;
  switch (type.kind) {
    case 'boolean':
      return { name, read: 'VARCHAR', type: 'BOOLEAN', select: as(`CASE WHEN ${id} IS NULL THEN NULL WHEN ${id} = 'true' THEN true WHEN ${id} = 'false' THEN false ELSE ${misfit(name, 'boolean', id)} END`) };
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
      // Digits only: DuckDB's cast from text rounds `1.5` and reads `1e3`, `0x10` and `1_000`.
      return { name, read: 'VARCHAR', type: INTEGERS[type.kind], select: as(`CASE WHEN ${id} IS NULL OR regexp_full_match(${id}, '-?[0-9]+') THEN CAST(${id} AS ${INTEGERS[type.kind]}) ELSE ${misfit(name, type.kind, id)} END`) };
    case 'double':
      return { name, read: 'VARCHAR', type: 'DOUBLE', select: as(`CAST(${id} AS DOUBLE)`) };
    case 'real':
      // Through a double, as the Arrow builder rounds the JS number: text straight to float could round differently.
      return { name, read: 'VARCHAR', type: 'FLOAT', select: as(`CAST(CAST(${id} AS DOUBLE) AS FLOAT)`) };
    case 'decimal': {
      if (type.precision > 38) return 'DuckDB decimals hold at most 38 digits';
      const whole = type.precision - type.scale;
      const int = whole === 0 ? '0' : `[0-9]{1,${whole}}`;
      const fraction = type.scale === 0 ? '' : `(\\.[0-9]{1,${type.scale}})?`;
      const text = `decimal(${type.precision}, ${type.scale})`;
      return {
        name,
        read: 'VARCHAR',
        type: `DECIMAL(${type.precision}, ${type.scale})`,
        select: as(`CASE WHEN ${id} IS NULL OR regexp_full_match(${id}, '-?${int}${fraction}') THEN CAST(${id} AS DECIMAL(${type.precision}, ${type.scale})) ELSE ${misfit(name, text, id)} END`),
      };
    }
    case 'varchar':
    case 'char':
    case 'uuid':
    case 'ipaddress':
      return { name, read: 'VARCHAR', type: 'VARCHAR', select: id };
    case 'date':
      return { name, read: 'DATE', type: 'DATE', select: as(finite(name, 'date', id)) };
    case 'timestamp':
      return timestampColumn(name, id, type.precision, type.withTimeZone);
    default:
      return `no DuckDB type holds it as the ${type.kind} writer does`;
  }
}

function timestampColumn(name: string, id: string, precision: number, zoned: boolean): NativeColumn | string {
  if (precision > 9) return 'more than 9 fractional digits';
  if (zoned) {
    // DuckDB keeps zoned instants in microseconds only.
    if (precision > 6) return 'DuckDB keeps zoned timestamps in microseconds';
    return { name, read: 'TIMESTAMPTZ', type: 'TIMESTAMPTZ', select: `${finite(name, 'timestamp with time zone', id)} AS ${id}` };
  }
  const read = precision <= 3 ? 'TIMESTAMP_MS' : precision <= 6 ? 'TIMESTAMP' : 'TIMESTAMP_NS';
  return { name, read, type: read, select: `${finite(name, 'timestamp', id)} AS ${id}` };
}

/**
 * DuckDB's reader takes `infinity` and `-infinity` for dates and timestamps, which no writer of
 * sluice's holds (the decoders refuse them, types.md): such a value stops the statement too.
 */
function finite(name: string, type: string, id: string): string {
  return `CASE WHEN ${id} IS NULL OR isfinite(${id}) THEN ${id} ELSE ${misfit(name, type, `CAST(${id} AS VARCHAR)`)} END`;
}

/** A SQL `error()` naming the column, its type and the value (DuckDB aborts the statement with it). */
function misfit(name: string, type: string, id: string): string {
  return `error(${quoteString(`column "${name}" (${type}): `)} || ${id} || ${quoteString(` is not a ${type}`)})`;
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** `read_json`'s `columns` argument: each column's name and the type it is read as. */
export function readColumns(columns: readonly NativeColumn[]): string {
  return `{${columns.map((c) => `${quoteString(c.name)}: ${quoteString(c.read)}`).join(', ')}}`;
}
