import type { ColumnSpec } from '../../types/decode.ts';
import { parseType } from '../../types/parse.ts';
import type { SqlType } from '../../types/sqlType.ts';

/**
 * How DuckDB reads one column of a JSON page (`read_json(..., columns = {...})`) or a CSV page
 * (`read_csv`), and the SQL that turns what it read into the column's value, typed from
 * `column_types` (never sniffed).
 *
 * DuckDB's JSON reader casts leniently where sluice's decoders refuse: it rounds `1.5` into an
 * integer column and `"1.005"` into a `decimal(3, 2)`, reads `1` as true, and the text `"NaN"` in
 * a double column as NULL; its casts from text round too. So integers, floats, decimals and
 * booleans are read as their text, checked against a pattern (integers: digits; decimals: at most
 * `precision - scale` digits, then at most `scale`; booleans: `true` or `false`) and cast, which
 * reads `NaN` and `Infinity`; a value that does not fit stops the statement with an `error()`.
 * Lenient still, and exact: a JSON string of digits in an integer column is read as the number,
 * a JSON number in a varchar column as its text. From JSON pages, dates and timestamps are
 * read typed: DuckDB's JSON reader parses them several times faster than a cast from text does
 * (the figures: docs/performance.md); only its infinities are refused after.
 *
 * From CSV pages every column is read as text and cast by the same rules. An empty field is SQL
 * NULL and a quoted empty field the empty string (protocol.md); `<nil>`, which the real service
 * has been seen to write for NULL, is NULL too in every column whose values it cannot be (all but
 * the text ones). A timestamp with time zone ending in ` UTC` (the service's own form) is read as
 * its wall clock in UTC: DuckDB's cast of zoned text goes through ICU at some five times the cost
 * of the whole rest of the column; other zones still take that cast.
 */
export interface NativeColumn {
  readonly name: string;
  /** The DuckDB type `read_json` reads the value as. */
  readonly read: string;
  /** The SQL expression giving the column its value, of the read column (quoted `name`). */
  readonly value: string;
  /**
   * A cast of the read column computed once below `value`, which then reads its result under the
   * same name: `value` may name the column three times (null, check, result), and a cast of text
   * repeated there cost a fifth of the statement's CPU.
   */
  readonly cast?: string;
  /** The DuckDB type of the value: the type of the Parquet column DuckDB writes. */
  readonly type: string;
}

/** The columns of a result as DuckDB reads them, or why the native path cannot carry them exactly. */
export type NativeColumns = { readonly columns: readonly NativeColumn[] } | { readonly reason: string };

/** The encoding of the pages DuckDB reads: the JSON body's `result.rows`, or the CSV endpoint's page. */
export type NativePages = 'json' | 'csv';

/** Reads `columns` natively when every column has a DuckDB type that holds each of its values exactly. */
export function nativeColumns(columns: readonly ColumnSpec[], pages: NativePages = 'json'): NativeColumns {
  const seen = new Set<string>();
  const out: NativeColumn[] = [];
  for (const c of columns) {
    // DuckDB's identifiers ignore case: two columns it would take for one go the general way.
    const folded = c.name.toLowerCase();
    if (seen.has(folded)) return { reason: `columns "${c.name}" differ only in case (DuckDB would take them for one)` };
    seen.add(folded);
    const column = nativeColumn(c.name, parseType(c.type));
    if (typeof column === 'string') return { reason: `column "${c.name}" (${c.type}): ${column}` };
    out.push(pages === 'csv' ? fromCsv(column, c.name) : column);
  }
  if (out.length === 0) return { reason: 'the result has no columns' };
  return { columns: out };
}

const INTEGERS = { tinyint: 'TINYINT', smallint: 'SMALLINT', integer: 'INTEGER', bigint: 'BIGINT' } as const;

/** The column, or why DuckDB cannot hold its values as sluice's writers do (types.md). */
function nativeColumn(name: string, type: SqlType): NativeColumn | string {
  const id = quoteIdentifier(name);
  switch (type.kind) {
    case 'boolean':
      return { name, read: 'VARCHAR', type: 'BOOLEAN', value: `CASE WHEN ${id} IS NULL THEN NULL WHEN ${id} = 'true' THEN true WHEN ${id} = 'false' THEN false ELSE ${misfit(name, 'boolean', id)} END` };
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
      // Digits only: DuckDB's cast from text rounds `1.5` and reads `1e3`, `0x10` and `1_000`.
      return { name, read: 'VARCHAR', type: INTEGERS[type.kind], value: `CASE WHEN ${id} IS NULL OR regexp_full_match(${id}, '-?[0-9]+') THEN CAST(${id} AS ${INTEGERS[type.kind]}) ELSE ${misfit(name, type.kind, id)} END` };
    case 'double':
      return { name, read: 'VARCHAR', type: 'DOUBLE', value: `CAST(${id} AS DOUBLE)` };
    case 'real':
      // Through a double, as the Arrow builder rounds the JS number: text straight to float could round differently.
      return { name, read: 'VARCHAR', type: 'FLOAT', value: `CAST(CAST(${id} AS DOUBLE) AS FLOAT)` };
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
        value: `CASE WHEN ${id} IS NULL OR regexp_full_match(${id}, '-?${int}${fraction}') THEN CAST(${id} AS DECIMAL(${type.precision}, ${type.scale})) ELSE ${misfit(name, text, id)} END`,
      };
    }
    case 'varchar':
    case 'char':
    case 'uuid':
    case 'ipaddress':
      return { name, read: 'VARCHAR', type: 'VARCHAR', value: id };
    case 'date':
      return { name, read: 'DATE', type: 'DATE', value: finite(name, 'date', id) };
    case 'timestamp':
      return timestampColumn(name, id, type.precision, type.withTimeZone);
    default:
      return `no DuckDB type holds it as the ${type.kind} writer does`;
  }
}

/** The column as read from a CSV page: every value as text, dates and timestamps cast, `<nil>` as NULL where it cannot be a value. */
function fromCsv(column: NativeColumn, name: string): NativeColumn {
  const id = quoteIdentifier(name);
  if (column.type === 'VARCHAR') return column;
  const nil = (expr: string) => `CASE WHEN ${id} = '<nil>' THEN NULL ELSE ${expr} END`;
  if (column.read === 'VARCHAR') return { ...column, value: nil(column.value) };
  const cast = column.type === 'TIMESTAMPTZ' ? utcText(id) : `CAST(${id} AS ${column.type})`;
  return { ...column, read: 'VARCHAR', cast: nil(cast), value: finite(name, TYPE_TEXT[column.type] ?? column.type.toLowerCase(), id) };
}

const TYPE_TEXT: Readonly<Record<string, string>> = { DATE: 'date', TIMESTAMPTZ: 'timestamp with time zone', TIMESTAMP: 'timestamp', TIMESTAMP_MS: 'timestamp', TIMESTAMP_NS: 'timestamp' };

/** A zoned timestamp's text as TIMESTAMPTZ: ` UTC` cut and the wall clock taken as UTC, other zones by DuckDB's cast. */
function utcText(id: string): string {
  return `CASE WHEN suffix(${id}, ' UTC') THEN make_timestamptz(epoch_us(CAST(left(${id}, -4) AS TIMESTAMP))) ELSE CAST(${id} AS TIMESTAMPTZ) END`;
}

function timestampColumn(name: string, id: string, precision: number, zoned: boolean): NativeColumn | string {
  if (precision > 9) return 'more than 9 fractional digits';
  if (zoned) {
    // DuckDB keeps zoned instants in microseconds only.
    if (precision > 6) return 'DuckDB keeps zoned timestamps in microseconds';
    return { name, read: 'TIMESTAMPTZ', type: 'TIMESTAMPTZ', value: finite(name, 'timestamp with time zone', id) };
  }
  const read = precision <= 3 ? 'TIMESTAMP_MS' : precision <= 6 ? 'TIMESTAMP' : 'TIMESTAMP_NS';
  return { name, read, type: read, value: finite(name, 'timestamp', id) };
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
  return `error(${quoteString(`column "${name}" (${type}): `)} || ${id} || ${quoteString(` is not a valid ${type}`)})`;
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

/**
 * The select of a part's staged pages, as the part's statement reads them: each column's value
 * (its checks) over its cast, read by `readPages` with the columns' read types.
 */
export function pagesSelect(columns: readonly NativeColumn[], files: readonly string[], pages: NativePages): string {
  const read = readPages(files, readColumns(columns), pages);
  const select = columns.map((c) => `${c.value} AS ${quoteIdentifier(c.name)}`).join(', ');
  if (columns.every((c) => c.cast === undefined)) return `SELECT ${select} FROM ${read}`;
  const casts = columns.map((c) => (c.cast === undefined ? quoteIdentifier(c.name) : `${c.cast} AS ${quoteIdentifier(c.name)}`)).join(', ');
  return `SELECT ${select} FROM (SELECT ${casts} FROM ${read})`;
}

/**
 * The table function reading staged pages, with `columns` (`readColumns`' argument). CSV: the
 * service's dialect (protocol.md), read by position with the header line skipped, an unquoted
 * empty field as NULL and a quoted one as the empty string; a line with more or fewer fields than
 * columns stops the statement. JSON: each file a page's rows array.
 */
export function readPages(files: readonly string[], columns: string, pages: NativePages): string {
  const list = `[${files.map(quoteString).join(', ')}]`;
  if (pages !== 'csv') return `read_json(${list}, format = 'array', columns = ${columns})`;
  return `read_csv(${list}, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', nullstr = '', allow_quoted_nulls = false, strict_mode = true, columns = ${columns})`;
}
