// Arrow pages: the rows of a page as an Arrow IPC stream, built from DuckDB's vectors column by
// column (no row objects). The schema and the Arrow layout of every value are the connector's own
// (src/types: arrowSchema, columnBuilder), so a file written from Arrow pages holds exactly the
// values of one written from JSON pages. Columns of the types whose DuckDB layout is that Arrow
// layout (integers, floats, booleans, dates, timestamps, decimals, varchar) are copied from the
// vectors' memory in bulk (arrowColumns.ts); every other column is rendered by DuckDB as its JSON
// page text (encode.ts) and decoded per value by the connector's decoder of that type (booleans,
// integers and floats taken per value as read): one definition of each value, whichever way it travels.
import duckdb from '@duckdb/node-bindings';
import { DuckDBBlobValue, DuckDBTypeId, type DuckDBConnection } from '@duckdb/node-api';
import { makeData, RecordBatch, RecordBatchStreamWriter, Struct, type Schema } from 'apache-arrow';
import { arrowSchema } from '../../../types/arrow.ts';
import { columnBuilder } from '../../../types/columns.ts';
import { compileDecoder, type ValueDecoder } from '../../../types/decode.ts';
import { parseJsonLossless } from '../../../types/json.ts';
import { parseType } from '../../../types/parse.ts';
import { vectorColumn, type VectorColumn } from './arrowColumns.ts';
import { chunkFetched } from '../memory/chunkGarbage.ts';
import { jsonExpr, textExpr } from './encode.ts';
import type { PagePlan, StoredColumns } from './pageQuery.ts';
import { protocolTypeName } from '../typeNames.ts';
import { EngineError } from '../types.ts';

/** Protocol types whose DuckDB value is the decoded JS value as is. */
const AS_READ = new Set(['boolean', 'tinyint', 'smallint', 'integer', 'bigint', 'real', 'double', 'varchar']);

/**
 * The DuckDB binding decodes text with a decoder that drops one leading U+FEFF as a byte order
 * mark: a text beginning with it is fetched with it doubled, so exactly the original arrives.
 */
function keepLeadingBom(v: string): string {
  return `(CASE WHEN starts_with(${v}, chr(65279)) THEN chr(65279) || ${v} ELSE ${v} END)`;
}

/**
 * A value the connector's Arrow mapping of its type cannot hold (an interval finer than a millisecond,
 * say): the page cannot be Arrow; its JSON page still carries the value.
 */
function unrepresentable(column: string, type: string, row: number, value: unknown, err: unknown): EngineError {
  const reason = err instanceof Error ? err.message : String(err);
  const shown = typeof value === 'string' ? value : String(value);
  return new EngineError(
    'unrepresentable',
    `column "${column}" (${type}), row ${row} of the page: the value ${JSON.stringify(shown.length > 80 ? `${shown.slice(0, 80)}...` : shown)} ${reason}, so the page cannot be Arrow; read it as JSON`,
    { cause: err },
  );
}

export interface ArrowPageBody {
  /** The IPC stream: schema, one record batch with the page's rows, end-of-stream. */
  bytes: Uint8Array;
  rowCount: number;
}

/**
 * Builds the Arrow IPC stream of a planned page. The columns vectorColumn() reads straight from
 * DuckDB's vectors are taken that way; the others per value. When a value of the first kind
 * must take the per-value path (a date outside years 1-9999, say), the page is built again with
 * every column per value.
 */
export async function buildArrowPage(conn: DuckDBConnection, stored: StoredColumns, plan: PagePlan): Promise<ArrowPageBody> {
  const schema = arrowSchema(plan.columnNames.map((name, k) => ({ name, type: plan.columnTypes[k]! })));
  const direct = plan.cols.map((i, k) =>
    protocolTypeName(stored.types[i]!) === plan.columnTypes[k] ? vectorColumn(stored.types[i]!, schema.fields[k]!.type) : undefined,
  );
  if (direct.some((c) => c !== undefined)) {
    const page = await buildPage(conn, stored, plan, schema, direct);
    if (page !== undefined) return page;
  }
  return (await buildPage(conn, stored, plan, schema, plan.cols.map(() => undefined)))!;
}

/**
 * The page with the columns of `direct` read from the vectors and the others per value;
 * undefined when a direct column refused a value.
 */
async function buildPage(
  conn: DuckDBConnection,
  stored: StoredColumns,
  plan: PagePlan,
  schema: Schema,
  direct: Array<VectorColumn | undefined>,
): Promise<ArrowPageBody | undefined> {
  // A blob is fetched as its bytes (its 0x text would be twice its size, made several times over).
  const asRead = plan.cols.map((i) => AS_READ.has(stored.protocolTypes[i]!) || stored.types[i]!.typeId === DuckDBTypeId.BLOB);
  const decoders: Array<ValueDecoder | undefined> = plan.cols.map((_, k) =>
    asRead[k] || direct[k] !== undefined ? undefined : compileDecoder(parseType(plan.columnTypes[k]!), { timestamps: 'string' }),
  );
  const builders = schema.fields.map((f, k) => (direct[k] === undefined ? columnBuilder(parseType(plan.columnTypes[k]!), f) : undefined));
  // A JSON value that is a quoted text needing no escapes (decimals, dates, timestamps, ...) is
  // fetched as that text: the decoder takes the same string without a JSON.parse per value.
  const parsed: boolean[] = [];
  const exprs = plan.cols.map((i, k) => {
    if (direct[k] !== undefined) return `c${i} AS v${k}`;
    if (asRead[k]) return `${stored.protocolTypes[i] === 'varchar' ? keepLeadingBom(`c${i}`) : `c${i}`} AS v${k}`;
    const v = `c${i}`;
    const json = jsonExpr(v, stored.types[i]!);
    const text = textExpr(v, stored.types[i]!);
    parsed[k] = json !== `('"' || ${text} || '"')`;
    return `${parsed[k] ? json : text} AS v${k}`;
  });
  const select = exprs.length === 0 ? 'NULL AS v' : exprs.join(', ');
  const result = await conn.stream(`SELECT ${select} FROM ${plan.source} AS page ORDER BY ${plan.order}`);
  let rowCount = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    chunkFetched();
    const n = chunk.rowCount;
    rowCount += n;
    for (let k = 0; k < plan.cols.length; k++) {
      const column = direct[k];
      if (column !== undefined) {
        if (!column.append(duckdb.data_chunk_get_vector(chunk.chunk, k), n)) return undefined;
        continue;
      }
      const vector = chunk.getColumnVector(k);
      const builder = builders[k]!;
      const decode = decoders[k];
      const parse = parsed[k] === true;
      for (let r = 0; r < n; r++) {
        const v = vector.getItem(r);
        try {
          if (v === null) builder.append(null);
          else if (decode === undefined) builder.append(v instanceof DuckDBBlobValue ? v.bytes : v);
          else builder.append(decode(parse ? parseJsonLossless(v as string) : v));
        } catch (err) {
          throw unrepresentable(plan.columnNames[k]!, plan.columnTypes[k]!, rowCount - n + r, v, err);
        }
      }
    }
  }
  const children = plan.cols.map((_, k) => (direct[k] ?? builders[k]!).finish());
  const batch = new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rowCount, nullCount: 0, children }));
  return { bytes: RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true), rowCount };
}
