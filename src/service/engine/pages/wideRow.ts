// One row whose JSON or CSV text DuckDB cannot render even with the engine's whole memory: its
// JSON text of a 64 MB string asks for eight times the string (to_json), its CSV field and a
// blob's hex text several copies. The row's values are read as they are stored (a string, a
// blob's bytes) and its text made here, as pageQuery.ts makes it: JSON strings quoted by
// JSON.stringify, CSV fields quoted as csvField, a blob as 0x and lowercase hex; values of the
// other types (numbers, times, nested values) are small enough to be rendered by DuckDB as usual.
import { DuckDBBlobValue, DuckDBTypeId, type DuckDBConnection, type DuckDBType } from '@duckdb/node-api';
import { jsonExpr, textExpr } from './encode.ts';
import { csvField, utf8Bytes, type PagePlan, type StoredColumns } from './pageQuery.ts';

/** Types whose JSON is the quoted string of their text, and whose text is the stored string itself. */
const STRINGS = new Set<DuckDBTypeId>([DuckDBTypeId.VARCHAR, DuckDBTypeId.ENUM]);

export interface WideRowPage {
  rowCount: number;
  /** The row's JSON object or CSV line. */
  body: string;
  /** Its result_set_bytes (as rowBytesSql counts them). */
  bytes: number;
}

/** The first row of `plan` (a one-row page) made in JS from its stored values. */
export async function wideRowPage(conn: DuckDBConnection, stored: StoredColumns, plan: PagePlan, format: 'json' | 'csv'): Promise<WideRowPage> {
  const exprs = plan.cols.flatMap((i) => columnExprs(`c${i}`, stored.types[i]!));
  const reader = await conn.runAndReadAll(`SELECT ${exprs.length > 0 ? exprs.join(', ') : '1'} FROM ${plan.source} AS page ORDER BY ${plan.order} LIMIT 1`);
  const row = reader.getRows()[0];
  if (row === undefined) return { rowCount: 0, body: '', bytes: 0 };
  const json: string[] = [];
  const csv: string[] = [];
  let bytes = plan.cols.length;
  let k = 0;
  for (const i of plan.cols) {
    const type = stored.types[i]!;
    const text = textOf(row[k], type);
    const jsonText = kind(type) === 'other' ? (row[k + 1] as string | null) : text === null ? null : JSON.stringify(text);
    k += kind(type) === 'other' ? 2 : 1;
    json.push(`${JSON.stringify(stored.names[i])}:${jsonText ?? 'null'}`);
    csv.push(text === null ? '' : csvField(text));
    bytes += text === null ? 0 : utf8Bytes(text);
  }
  return { rowCount: 1, body: format === 'json' ? `{${json.join(',')}}` : csv.join(','), bytes };
}

function kind(type: DuckDBType): 'string' | 'blob' | 'other' {
  if (type.typeId === DuckDBTypeId.BLOB) return 'blob';
  return STRINGS.has(type.typeId) ? 'string' : 'other';
}

/** The expressions read for a column: the stored value itself, or its text and JSON as DuckDB renders them. */
function columnExprs(v: string, type: DuckDBType): string[] {
  switch (kind(type)) {
    case 'string':
      return [`${v}::VARCHAR`];
    case 'blob':
      return [v];
    default:
      return [textExpr(v, type), jsonExpr(v, type)];
  }
}

function textOf(value: unknown, type: DuckDBType): string | null {
  if (value === null || value === undefined) return null;
  if (kind(type) === 'blob') return `0x${Buffer.from((value as DuckDBBlobValue).bytes).toString('hex')}`;
  return String(value);
}
