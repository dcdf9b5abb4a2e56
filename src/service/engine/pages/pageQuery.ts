// Builds the one SQL statement that serves a page from a stored result: DuckDB filters,
// orders, slices (by rowid, so the cost does not grow with the offset), encodes each value and
// joins the page into a single JSON or CSV text.
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { EngineError, type PageRequest } from '../types.ts';
import { sqlString } from '../../sql.ts';
import { jsonExpr, jsonFromText, textExpr } from './encode.ts';
import { customUnionTag } from '../customTypes.ts';
import { parseFilters, parseSortBy, renderFilter, type ColumnRefs } from './resultFilters.ts';

export interface StoredColumns {
  /** Fully qualified stored table, e.g. "res_01H..".main.result (columns c0..cN-1). */
  table: string;
  names: string[];
  protocolTypes: string[];
  types: DuckDBType[];
  rowCount: number;
}

export interface PagePlan {
  /** One row: n (rows on the page), body (JSON rows joined by ',' or CSV lines), bytes. */
  sql: string;
  /** Counts the rows matching the filters, when there are filters. */
  countSql?: string;
  totalRowCount?: number;
  headerBytes: number;
  columnNames: string[];
  columnTypes: string[];
  /** The page's rows (columns __rn, c0..cN-1) before encoding, and their order; for Arrow pages. */
  source: string;
  order: string;
  /** Stored column indexes of the page's columns. */
  cols: number[];
}

const TEXTUAL = new Set<DuckDBTypeId>([DuckDBTypeId.VARCHAR, DuckDBTypeId.ENUM, DuckDBTypeId.UUID]);

/** Types whose text never holds ',', '"', CR or LF, so CSV fields need no quoting check. */
const CSV_SAFE = new Set<DuckDBTypeId>([
  DuckDBTypeId.BOOLEAN, DuckDBTypeId.TINYINT, DuckDBTypeId.SMALLINT, DuckDBTypeId.INTEGER,
  DuckDBTypeId.BIGINT, DuckDBTypeId.UTINYINT, DuckDBTypeId.USMALLINT, DuckDBTypeId.UINTEGER,
  DuckDBTypeId.UBIGINT, DuckDBTypeId.HUGEINT, DuckDBTypeId.UHUGEINT, DuckDBTypeId.FLOAT,
  DuckDBTypeId.DOUBLE, DuckDBTypeId.DECIMAL, DuckDBTypeId.DATE, DuckDBTypeId.TIME,
  DuckDBTypeId.TIMESTAMP, DuckDBTypeId.TIMESTAMP_S, DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP_NS, DuckDBTypeId.TIMESTAMP_TZ, DuckDBTypeId.UUID, DuckDBTypeId.BLOB,
  DuckDBTypeId.INTERVAL, DuckDBTypeId.BIGNUM,
]);

const NESTED = new Set<DuckDBTypeId>([DuckDBTypeId.LIST, DuckDBTypeId.ARRAY, DuckDBTypeId.MAP, DuckDBTypeId.STRUCT, DuckDBTypeId.UNION]);

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

export function csvField(text: string): string {
  return /[",\r\n]/.test(text) || text === '' ? `"${text.replaceAll('"', '""')}"` : text;
}

/** Index of a column by exact name, else by a case-insensitive unique match. */
function findColumn(names: string[], name: string): number | undefined {
  const exact = names.indexOf(name);
  if (exact >= 0) return exact;
  const lower = name.toLowerCase();
  const matches = names.flatMap((n, i) => (n.toLowerCase() === lower ? [i] : []));
  return matches.length === 1 ? matches[0] : undefined;
}

function comparable(col: string, type: DuckDBType): string {
  const tag = customUnionTag(type);
  return tag ? `union_extract(${col}, ${sqlString(tag)})` : col;
}

export function rowBytesSql(cols: number[], stored: StoredColumns): string {
  if (cols.length === 0) return '1';
  // A blob's text is 0x and two hex digits a byte: counted without making it (the text of a
  // 64 MB blob takes 128 MB, several times over while it is made).
  const parts = cols.map((i) =>
    stored.types[i]!.typeId === DuckDBTypeId.BLOB ? `coalesce(2 + 2 * octet_length(c${i}), 0)` : `coalesce(strlen(${textExpr(`c${i}`, stored.types[i]!)}), 0)`,
  );
  return `(${parts.join(' + ')} + ${cols.length})`;
}

export function headerBytes(names: string[]): number {
  return names.length === 0 ? 0 : names.reduce((sum, n) => sum + utf8Bytes(n), 0) + names.length;
}

/** One row's JSON object text (`{"name":value,...}`) of the given stored columns. */
export function jsonRowSql(stored: StoredColumns, cols: number[]): string {
  const fields = cols.map((i) => `${sqlString(`${JSON.stringify(stored.names[i])}:`)} || coalesce(${jsonExpr(`c${i}`, stored.types[i]!)}, 'null')`);
  return fields.length === 0 ? `'{}'` : `'{' || ${fields.join(` || ',' || `)} || '}'`;
}

/** One row's CSV line (without its line end) of the given stored columns, RFC 4180 quoted. */
export function csvRowSql(stored: StoredColumns, cols: number[]): string {
  const fields = cols.map((i) => csvFieldSql(textExpr(`c${i}`, stored.types[i]!), stored.types[i]!, `c${i} IS NULL`));
  return fields.length === 0 ? `''` : fields.join(` || ',' || `);
}

/** A value's CSV field from its text `t` ('' for NULL, which `isNull` tests), quoted when it needs to be. */
function csvFieldSql(t: string, type: DuckDBType, isNull: string): string {
  if (CSV_SAFE.has(type.typeId) || customUnionTag(type)) return `coalesce(${t}, '')`;
  // Nested values are JSON text, nearly always holding ',' or '"': always quote them
  // rather than render the (costly) text twice.
  if (NESTED.has(type.typeId)) return `coalesce('"' || replace(${t}, '"', '""') || '"', '')`;
  return `(CASE WHEN ${isNull} THEN '' WHEN ${t} = '' OR regexp_matches(${t}, '[",\\r\\n]') THEN '"' || replace(${t}, '"', '""') || '"' ELSE ${t} END)`;
}

/**
 * The rows of a stored result rendered for its encoding (encodedResult.ts): columns `rn` (the
 * rowid), `j` (the row's JSON object, as jsonRowSql), `c` (its CSV line, as csvRowSql) and `b`
 * (its result_set_bytes, as rowBytesSql), in table order, of the rows `where` keeps. Each value's
 * text is computed once, in a projection below the row's (jsonFromText, csvFieldSql): the three
 * would otherwise each render it again (measured on 1M rows x 8 columns of sample.events: about
 * half the CPU of the three expressions above). The texts are joined by concat(), which makes each
 * row's text in one piece (none of its parts is NULL). `withEnds`: the JSON object followed by ','
 * and the CSV line by '\n', as the encodings store them (made in the same piece: a second concat
 * would copy every row again, a wide row's text twice over in the instance's memory).
 */
export function renderedRowsSql(stored: StoredColumns, cols: number[], where: string, withEnds = false): string {
  const inner = ['rowid AS rn'];
  const json: string[] = [];
  const csv: string[] = [];
  const bytes: string[] = [];
  for (const i of cols) {
    const type = stored.types[i]!;
    inner.push(`${textExpr(`c${i}`, type)} AS t${i}`);
    let j = jsonFromText(`t${i}`, type);
    if (j === undefined) {
      inner.push(`c${i}`);
      j = jsonExpr(`c${i}`, type);
    }
    json.push(`${sqlString(`${JSON.stringify(stored.names[i])}:`)}, coalesce(${j}, 'null')`);
    csv.push(csvFieldSql(`t${i}`, type, `t${i} IS NULL`));
    bytes.push(`coalesce(strlen(t${i}), 0)`);
  }
  const row = cols.length === 0
    ? `'{}' AS j, '' AS c, 1::BIGINT AS b`
    : `concat('{', ${json.join(`, ',', `)}, '}'${withEnds ? ", ','" : ''}) AS j, concat(${csv.join(`, ',', `)}${withEnds ? ', chr(10)' : ''}) AS c, (${bytes.join(' + ')} + ${cols.length})::BIGINT AS b`;
  return `SELECT rn, ${row} FROM (SELECT ${inner.join(', ')} FROM ${stored.table} WHERE ${where})`;
}

export function planPage(stored: StoredColumns, req: PageRequest, format: 'json' | 'csv'): PagePlan {
  const offset = Math.max(0, Math.trunc(req.offset));
  const limit = Math.max(0, Math.trunc(req.limit));
  const cols = (req.columns ?? stored.names).map((name, k) => {
    if (req.columns === undefined) return k;
    const i = findColumn(stored.names, name);
    if (i === undefined) {
      throw new EngineError('bad_request', `columns: unknown column "${name}" (the result has: ${stored.names.join(', ')})`);
    }
    return i;
  });
  const refs: ColumnRefs = {
    compare(name) {
      const i = findColumn(stored.names, name);
      if (i === undefined) return undefined;
      const type = stored.types[i]!;
      return { sql: comparable(`c${i}`, type), textual: TEXTUAL.has(type.typeId) || type.alias?.toUpperCase() === 'JSON' };
    },
    likeText(name) {
      const i = findColumn(stored.names, name);
      return i === undefined ? undefined : textExpr(`c${i}`, stored.types[i]!);
    },
  };
  const where = req.filters !== undefined && req.filters.trim() !== '' ? renderFilter(parseFilters(req.filters), refs) : undefined;
  const sort = req.sortBy !== undefined && req.sortBy.trim() !== ''
    ? parseSortBy(req.sortBy).map((key) => {
        const ref = refs.compare(key.column);
        if (!ref) throw new EngineError('bad_request', `sort_by: unknown column "${key.column}"`);
        return `${ref.sql} ${key.descending ? 'DESC' : 'ASC'} NULLS LAST`;
      })
    : [];
  const order = [...sort, '__rn'].join(', ');
  const all = stored.names.map((_, i) => `c${i}`).join(', ');
  const select = `rowid AS __rn${all ? `, ${all}` : ''}`;

  let source: string;
  let totalRowCount: number | undefined;
  let countSql: string | undefined;
  if (req.sampleCount !== undefined) {
    const n = Math.max(0, Math.trunc(req.sampleCount));
    const sampled = `(SELECT * FROM (SELECT ${select} FROM ${stored.table}) USING SAMPLE reservoir(${n} ROWS) REPEATABLE (7))`;
    source = `(SELECT * FROM ${sampled} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset})`;
    totalRowCount = Math.min(n, stored.rowCount);
  } else if (where === undefined && sort.length === 0) {
    // rowid ranges skip straight to the row groups of the page (zonemap pushdown).
    source = `(SELECT ${select} FROM ${stored.table} WHERE rowid >= ${offset} AND rowid < ${offset + limit})`;
    totalRowCount = stored.rowCount;
  } else {
    const filtered = `SELECT ${select} FROM ${stored.table}${where ? ` WHERE ${where}` : ''}`;
    source = `(${filtered} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset})`;
    if (where) countSql = `SELECT count(*)::BIGINT AS n FROM ${stored.table} WHERE ${where}`;
    else totalRowCount = stored.rowCount;
  }

  const rowSql = format === 'json' ? jsonRowSql(stored, cols) : csvRowSql(stored, cols);
  const sep = format === 'json' ? `','` : 'chr(10)';
  const sql = `SELECT count(*)::BIGINT AS n, coalesce(string_agg(${rowSql}, ${sep} ORDER BY ${order}), '') AS body, coalesce(sum(${rowBytesSql(cols, stored)}), 0)::BIGINT AS bytes FROM ${source} AS page`;
  const plan: PagePlan = {
    sql,
    headerBytes: headerBytes(cols.map((i) => stored.names[i]!)),
    columnNames: cols.map((i) => stored.names[i]!),
    columnTypes: cols.map((i) => stored.protocolTypes[i]!),
    source,
    order,
    cols,
  };
  if (countSql !== undefined) plan.countSql = countSql;
  if (totalRowCount !== undefined) plan.totalRowCount = totalRowCount;
  return plan;
}
