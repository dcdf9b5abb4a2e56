// One Arrow record batch filled from DuckDB's result chunks: the columns vectorColumn() reads
// straight from the vectors (arrowColumns.ts), the others rendered by DuckDB as their JSON page
// text and decoded per value by the connector's decoder (arrowPage.ts says why). The SELECT list
// the chunks must have comes from batchSelect(); a page query (arrowPage.ts) feeds one batch, the
// Arrow encoder (encoding/arrowChunks.ts) one batch per chunk of a single scan. Either way the
// batch's IPC bytes are the same for the same rows.
import duckdb from '@duckdb/node-bindings';
import { DuckDBBlobValue, DuckDBTypeId, type DuckDBDataChunk } from '@duckdb/node-api';
import { makeData, RecordBatch, RecordBatchStreamWriter, Struct, type Schema } from 'apache-arrow';
import { arrowSchema } from '../../../types/arrow.ts';
import { columnBuilder, type ColumnBuilder } from '../../../types/columns.ts';
import { compileDecoder, type ValueDecoder } from '../../../types/decode.ts';
import { parseJsonLossless } from '../../../types/json.ts';
import { parseType } from '../../../types/parse.ts';
import { vectorColumn, type VectorColumn } from './arrowColumns.ts';
import { jsonExpr, textExpr } from './encode.ts';
import type { StoredColumns } from './pageQuery.ts';
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

/** What a batch holds: stored columns `cols` (indexes into `stored`), under these protocol types. */
export interface BatchColumns {
  stored: StoredColumns;
  cols: number[];
  columnNames: string[];
  columnTypes: string[];
}

/** How each column of a batch is fetched: the SELECT list over the stored columns (c0, c1, ...). */
export interface BatchLayout {
  columns: BatchColumns;
  schema: Schema;
  /** Columns read from the vectors (else per value). */
  direct: boolean[];
  /** The SELECT list, one expression `v<k>` per column, in order. */
  select: string;
  /** Per value: whether the fetched text is a JSON text to parse first. */
  parsed: boolean[];
  /** Per value: fetched as the value itself (no decoder). */
  asRead: boolean[];
}

/**
 * The layout of a batch of `columns`: with `vectors`, the columns whose DuckDB layout is their Arrow
 * layout are read from the vectors; without, every column per value (the fallback when a vector
 * column refuses a value).
 */
export function batchLayout(columns: BatchColumns, vectors: boolean): BatchLayout {
  const { stored, cols } = columns;
  const schema = arrowSchema(columns.columnNames.map((name, k) => ({ name, type: columns.columnTypes[k]! })));
  const direct = cols.map((i, k) => vectors && protocolTypeName(stored.types[i]!) === columns.columnTypes[k] && vectorColumn(stored.types[i]!, schema.fields[k]!.type, 1) !== undefined);
  // A blob is fetched as its bytes (its 0x text would be twice its size, made several times over).
  const asRead = cols.map((i) => AS_READ.has(stored.protocolTypes[i]!) || stored.types[i]!.typeId === DuckDBTypeId.BLOB);
  // A JSON value that is a quoted text needing no escapes (decimals, dates, timestamps, ...) is
  // fetched as that text: the decoder takes the same string without a JSON.parse per value.
  const parsed: boolean[] = [];
  const exprs = cols.map((i, k) => {
    if (direct[k]) return `c${i} AS v${k}`;
    if (asRead[k]) return `${stored.protocolTypes[i] === 'varchar' ? keepLeadingBom(`c${i}`) : `c${i}`} AS v${k}`;
    const v = `c${i}`;
    const json = jsonExpr(v, stored.types[i]!);
    const text = textExpr(v, stored.types[i]!);
    parsed[k] = json !== `('"' || ${text} || '"')`;
    return `${parsed[k] ? json : text} AS v${k}`;
  });
  return { columns, schema, direct, select: exprs.length === 0 ? 'NULL AS v' : exprs.join(', '), parsed, asRead };
}

/** One column of a batch, however it is filled. */
interface BatchColumn {
  vector?: VectorColumn;
  builder?: ColumnBuilder;
  decode?: ValueDecoder;
}

/** The rows of one batch, appended from DuckDB chunks of the layout's SELECT list. */
export class ArrowBatch {
  readonly #layout: BatchLayout;
  readonly #columns: BatchColumn[];
  #rows = 0;

  /** `rows`: how many rows the batch will hold, when known (its buffers are sized for them). */
  constructor(layout: BatchLayout, rows?: number) {
    this.#layout = layout;
    const { columns, schema } = layout;
    this.#columns = columns.cols.map((i, k): BatchColumn => {
      const field = schema.fields[k]!;
      if (layout.direct[k]) return { vector: vectorColumn(columns.stored.types[i]!, field.type, rows)! };
      const type = parseType(columns.columnTypes[k]!);
      const column: BatchColumn = { builder: columnBuilder(type, field) };
      if (!layout.asRead[k]) column.decode = compileDecoder(type, { timestamps: 'string' });
      return column;
    });
  }

  get rowCount(): number {
    return this.#rows;
  }

  /**
   * Appends rows [from, from + n) of `chunk`; false when a vector column refused one of them (the
   * batch is then unusable: build it again with a layout without vectors).
   */
  append(chunk: DuckDBDataChunk, from: number, n: number): boolean {
    const { direct, parsed, columns } = this.#layout;
    for (let k = 0; k < this.#columns.length; k++) {
      const column = this.#columns[k]!;
      if (direct[k]) {
        if (!column.vector!.append(duckdb.data_chunk_get_vector(chunk.chunk, k), from, n)) return false;
        continue;
      }
      const vector = chunk.getColumnVector(k);
      const builder = column.builder!;
      const decode = column.decode;
      const parse = parsed[k] === true;
      for (let r = from; r < from + n; r++) {
        const v = vector.getItem(r);
        try {
          if (v === null) builder.append(null);
          else if (decode === undefined) builder.append(v instanceof DuckDBBlobValue ? v.bytes : v);
          else builder.append(decode(parse ? parseJsonLossless(v as string) : v));
        } catch (err) {
          throw unrepresentable(columns.columnNames[k]!, columns.columnTypes[k]!, this.#rows + r - from, v, err);
        }
      }
    }
    this.#rows += n;
    return true;
  }

  /** The rows appended, as a record batch (over the columns' buffers: nothing is appended after). */
  finish(): RecordBatch {
    const children = this.#columns.map((c) => (c.vector ?? c.builder!).finish());
    const { schema } = this.#layout;
    return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: this.#rows, nullCount: 0, children }));
  }
}

/** The IPC stream of one batch (schema, the batch, end-of-stream), as one buffer. */
export function ipcStream(batch: RecordBatch): Uint8Array {
  return RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true);
}

/** A single-batch IPC stream in pieces: the schema message, the batch message, the end-of-stream marker. */
export interface IpcPieces {
  schema: Uint8Array;
  /** The record batch message as the writer's pieces: the batch's buffers are not copied into one. */
  batch: Uint8Array[];
  batchBytes: number;
}

/** The IPC stream's end-of-stream marker: a continuation token and a zero length. */
export const IPC_EOS = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);

/**
 * The schema message of a batch layout's schema, once ipcPieces has written it: the Arrow encoder
 * writes one batch per chunk, all of one layout, and encoding that message again for each chunk (a
 * flatbuffer of every field) cost about as much as the batch's own message. Kept while the layout is.
 */
const schemaMessages = new WeakMap<Schema, Uint8Array>();

/** RecordBatchStreamWriter, writing `schemaMessage` (when known) as the schema's message. */
class ChunkStreamWriter extends RecordBatchStreamWriter {
  readonly #schemaMessage: Uint8Array | undefined;

  constructor(schemaMessage: Uint8Array | undefined) {
    super();
    this.#schemaMessage = schemaMessage;
  }

  protected override _writeSchema(schema: Schema): this {
    return this.#schemaMessage === undefined ? super._writeSchema(schema) : this._write(this.#schemaMessage);
  }
}

const sameEntries = (a: Map<string, string>, b: Map<string, string>): boolean => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

/**
 * Whether the batch's schema message is that of `layout`: a RecordBatch copies the schema it is
 * given, each field cloned around the same type object; what the message holds (names,
 * nullability, types, metadata) is then the same unless the batch had to change a field.
 */
function sameSchema(batch: RecordBatch, layout: Schema): boolean {
  const { fields, metadata } = batch.schema;
  return (
    fields.length === layout.fields.length &&
    sameEntries(metadata, layout.metadata) &&
    fields.every((f, i) => {
      const l = layout.fields[i]!;
      return f.name === l.name && f.nullable === l.nullable && f.type === l.type && sameEntries(f.metadata, l.metadata);
    })
  );
}

/**
 * The bytes of ipcStream(batch), split into its messages. Each message is a continuation token
 * (0xFFFFFFFF), a little-endian int32 metadata length and the metadata, then its body; a schema
 * message has no body. Anything else is refused. `layout`: the schema the batch was built with
 * (BatchLayout.schema), whose message is then encoded once for all its batches.
 */
export async function ipcPieces(batch: RecordBatch, layout?: Schema): Promise<IpcPieces> {
  const parts: Uint8Array[] = [];
  const cached = layout !== undefined && sameSchema(batch, layout);
  const writer = new ChunkStreamWriter(cached ? schemaMessages.get(layout) : undefined);
  writer.write(batch);
  writer.finish();
  for await (const part of writer) parts.push(part);
  const head = concat(parts, 0, 8);
  const view = new DataView(head.buffer, head.byteOffset, 8);
  if (view.getUint32(0, true) !== 0xffffffff) throw new Error('Arrow chunk: not an IPC stream with continuation tokens');
  const schemaEnd = 8 + view.getInt32(4, true);
  let at = 0;
  let k = 0;
  for (; k < parts.length && at < schemaEnd; k++) at += parts[k]!.byteLength;
  const eos = parts.at(-1)!;
  if (at !== schemaEnd || k >= parts.length - 1 || !(eos.byteLength === IPC_EOS.byteLength && eos.every((b, i) => b === IPC_EOS[i]))) {
    throw new Error('Arrow chunk: not one schema message, a batch and an end-of-stream marker');
  }
  const pieces = parts.slice(k, -1);
  const schema = concat(parts.slice(0, k), 0, schemaEnd);
  if (cached && !schemaMessages.has(layout)) schemaMessages.set(layout, schema);
  return { schema, batch: pieces, batchBytes: pieces.reduce((n, p) => n + p.byteLength, 0) };
}

/** Bytes [from, to) of the pieces, as one buffer. */
function concat(parts: Uint8Array[], from: number, to: number): Uint8Array {
  const out = new Uint8Array(to - from);
  let at = 0;
  for (const p of parts) {
    const start = Math.max(from - at, 0);
    const end = Math.min(to - at, p.byteLength);
    if (end > start) out.set(p.subarray(start, end), at + start - from);
    at += p.byteLength;
    if (at >= to) break;
  }
  return out;
}
