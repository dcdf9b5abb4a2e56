// The Arrow encoding of a result, in arrow/ of its encoding directory (encodedResult.ts):
//   rows.arrow    the rows as Arrow record batch messages, one batch per chunk of `chunkRows`
//                 rows (the page size clients read by), each as an Arrow page of them has it
//   arrow.schema  the Arrow schema message every page stream starts with
//   arrow.index   records of two 12-digit hex numbers and '\n': first `chunkRows` and 0, then one
//                 per chunk and one after the last: where the chunk starts in rows.arrow, and the
//                 result_set_bytes of the rows before it (a page's result_set_bytes, as its JSON
//                 page has it, without reading the JSON encoding; each chunk's sum as the execution
//                 stored it, storedChunkBytes, else summed with the chunk, rowRangeBytes)
//   info.json     the result's ResultInfo, written last: the directory is whole
// An Arrow page of all columns, unfiltered, whose rows are whole chunks (it starts on a chunk and
// ends on one, or at the end) is the schema message, the chunks' batches and the end-of-stream
// marker: a valid IPC stream of the same values as one built per request; other Arrow pages are
// built per request. While it is written, the chunks written so far are read from the encoder's
// own index (ArrowIndex), kept in memory until it is written out at the end, and the chunks just
// written are sent from the encoder's own buffers (recentChunks.ts) rather than read back.
import { open, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { INDEX_RECORD_BYTES, parseRecord, syncFiles, writeEncodedInfo, writeRecord, type FileSlice, type WriteProgress } from './encodedResult.ts';
import { headerBytes, rowBytesSql, type StoredColumns } from '../pages/pageQuery.ts';
import { chunkBytesTable } from '../results/resultFiles.ts';
import type { ResultInfo } from '../types.ts';
import { arrowChunks, type ArrowChunk } from './arrowChunks.ts';
import { IPC_EOS as ARROW_EOS } from '../pages/arrowBatch.ts';
import { buildArrowPage } from '../pages/arrowPage.ts';
import { planPage } from '../pages/pageQuery.ts';
import { RecentChunks } from './recentChunks.ts';

const ARROW = { rows: 'rows.arrow', schema: 'arrow.schema', index: 'arrow.index' } as const;


/** Where each chunk starts in rows.arrow and the result_set_bytes before it; one entry more than chunks written. */
export interface ArrowIndex {
  chunkRows: number;
  starts: number[];
  bytes: number[];
  schema: Uint8Array | undefined;
  /** While an encoder with readers runs: the batch messages of the chunks it wrote last. */
  recent?: RecentChunks | undefined;
}

/**
 * The result_set_bytes of each chunk of `chunkRows` rows, as the execution summed them when it
 * stored the result (results/resultFiles.ts); undefined for a result stored without them (by an
 * older version, or cut to max_result_bytes) or with another chunk size.
 */
export async function storedChunkBytes(conn: DuckDBConnection, columns: StoredColumns, chunkRows: number): Promise<number[] | undefined> {
  let rows: unknown[][];
  try {
    rows = (await conn.runAndReadAll(`SELECT chunk_rows, b FROM ${chunkBytesTable(columns.table)} ORDER BY k`)).getRowsJson();
  } catch {
    return undefined;
  }
  if (rows.some((r) => Number(r[0]) !== chunkRows)) return undefined;
  return rows.map((r) => Number(r[1]));
}

/**
 * result_set_bytes of rows [offset, offset + limit) of the stored result: asked chunk by chunk, so
 * that the first chunk is not held back by a pass over the whole result (DuckDB reads only the
 * row groups of that range).
 */
export async function rowRangeBytes(conn: DuckDBConnection, columns: StoredColumns, offset: number, limit: number): Promise<number> {
  const cols = columns.names.map((_, i) => i);
  const reader = await conn.runAndReadAll(
    `SELECT coalesce(sum(${rowBytesSql(cols, columns)}), 0)::BIGINT FROM ${columns.table} WHERE rowid >= ${offset} AND rowid < ${offset + limit}`,
  );
  return Number(reader.getRowsJson()[0]![0]);
}

/**
 * Writes the Arrow encoding of the stored result `columns` (`info`) into `dir` (created and emptied
 * by the caller), in chunks of `chunkRows` rows, on `conn`. With the chunks' result_set_bytes
 * stored by the execution, the chunks come from one scan of the table (arrowChunks.ts); without
 * them (a result cut to max_result_bytes, or stored by an older version), each chunk is a page
 * query and its bytes summed beside it (rowRangeBytes), on the same connection. `live`: the
 * index to fill and the progress to tell while readers read the chunks written.
 */
export async function encodeArrow(
  conn: DuckDBConnection,
  columns: StoredColumns,
  info: ResultInfo,
  dir: string,
  chunkRows: number,
  stopped: () => boolean,
  live?: { index: ArrowIndex; progress: WriteProgress },
): Promise<void> {
  const sums = await storedChunkBytes(conn, columns, chunkRows);
  const perChunk = async (offset: number, limit: number): Promise<ArrowChunk> => streamChunk(await buildArrowPage(conn, columns, planPage(columns, { offset, limit }, 'json')));
  const opts: ArrowEncodingOptions = { info, ...live };
  if (sums !== undefined) {
    opts.sizeOf = async (offset) => sums[offset / chunkRows]!;
    await writeArrowChunks(dir, chunkRows, info.rowCount, arrowChunks(conn, columns, chunkRows, info.rowCount, perChunk), stopped, opts);
    return;
  }
  opts.sizeOf = (offset, limit) => rowRangeBytes(conn, columns, offset, limit);
  async function* chunks(): AsyncGenerator<ArrowChunk> {
    for (let offset = 0; offset < info.rowCount; offset += chunkRows) yield perChunk(offset, Math.min(chunkRows, info.rowCount - offset));
  }
  await writeArrowChunks(dir, chunkRows, info.rowCount, chunks(), stopped, opts);
}

/**
 * Writes the Arrow encoding into `dir` (created and emptied by the caller): `buildChunk(offset,
 * limit)` makes the Arrow IPC stream of those rows (schema, one batch, end) and says how many rows
 * it holds, as an Arrow page of them is built; see writeArrowChunks for the rest.
 */
export async function writeArrowEncoding(
  dir: string,
  chunkRows: number,
  rowCount: number,
  buildChunk: (offset: number, limit: number) => Promise<{ bytes: Uint8Array; rowCount: number }>,
  stopped: () => boolean,
  opts: ArrowEncodingOptions = {},
): Promise<void> {
  async function* chunks(): AsyncGenerator<ArrowChunk> {
    for (let offset = 0; offset < rowCount; offset += chunkRows) yield streamChunk(await buildChunk(offset, Math.min(chunkRows, rowCount - offset)));
  }
  await writeArrowChunks(dir, chunkRows, rowCount, chunks(), stopped, opts);
}

/** A chunk from the IPC stream of its rows (schema, one batch, end-of-stream). */
export function streamChunk({ bytes, rowCount }: { bytes: Uint8Array; rowCount: number }): ArrowChunk {
  const { schemaEnd, bodyEnd } = splitIpcStream(bytes);
  return { schema: bytes.slice(0, schemaEnd), batch: [bytes.subarray(schemaEnd, bodyEnd)], batchBytes: bodyEnd - schemaEnd, rowCount };
}

export interface ArrowEncodingOptions {
  /** The chunk's result_set_bytes (rowRangeBytes). */
  sizeOf?: (offset: number, limit: number) => Promise<number>;
  info?: ResultInfo;
  /** Filled as chunks are written, and `progress` told (readers read the chunks meanwhile). */
  index?: ArrowIndex;
  progress?: WriteProgress;
}

/**
 * Writes the Arrow encoding into `dir` (created and emptied by the caller) from `chunks`, the
 * result's chunks of `chunkRows` rows in order (fewer rows than due fails the encoding: a page
 * query interrupted ends early, as if it were whole); each chunk's batch message is appended to
 * rows.arrow, the schema message kept once. `stopped()` is asked between chunks. A chunk is
 * written while the next one is built (at most one write in flight); readers are told of it
 * once it is written, and meanwhile (with `progress`) the last chunks written are kept in the
 * index's RecentChunks for them, until the encoder ends.
 */
export async function writeArrowChunks(dir: string, chunkRows: number, rowCount: number, chunks: AsyncIterable<ArrowChunk>, stopped: () => boolean, opts: ArrowEncodingOptions = {}): Promise<void> {
  const rows = await open(join(dir, ARROW.rows), 'w');
  const index: ArrowIndex = opts.index ?? { chunkRows, starts: [], bytes: [], schema: undefined };
  index.chunkRows = chunkRows;
  index.starts = [0];
  index.bytes = [0];
  index.recent = opts.progress === undefined ? undefined : new RecentChunks();
  let writing: Promise<void> = Promise.resolve();
  let written = 0;
  try {
    let offset = 0;
    for await (const chunk of chunks) {
      if (stopped()) throw new Error('Arrow encoding stopped');
      const limit = Math.min(chunkRows, rowCount - offset);
      if (offset >= rowCount || chunk.rowCount !== limit) throw new Error(`Arrow encoding: the chunk at row ${offset} has ${chunk.rowCount} rows, not ${limit}`);
      index.schema ??= chunk.schema;
      const bytes = (await opts.sizeOf?.(offset, limit)) ?? 0;
      const [at, end] = [written, written + chunk.batchBytes];
      // The rows readable once this chunk is written (taken now: `offset` moves on before the write ends).
      const readable = offset + limit;
      written = end;
      await writing;
      writing = writeAll(rows, chunk.batch, at).then(() => {
        const k = index.starts.length - 1;
        index.recent?.add(k, chunk.batch, chunk.batchBytes);
        index.starts.push(end);
        index.bytes.push(index.bytes[k]! + bytes);
        opts.progress?.advance(readable);
      });
      // Settled here too, so that a failure while the next chunk is built is never unhandled.
      writing.catch(() => undefined);
      offset += limit;
    }
    await writing;
    if (offset !== rowCount) throw new Error(`Arrow encoding: ${offset} rows written, not ${rowCount}`);
    await rows.sync();
  } finally {
    await writing.catch(() => undefined);
    index.recent?.clear();
    index.recent = undefined;
    await rows.close();
  }
  const records = Buffer.allocUnsafe((index.starts.length + 1) * INDEX_RECORD_BYTES);
  writeRecord(records, 0, chunkRows, 0);
  index.starts.forEach((start, k) => writeRecord(records, (k + 1) * INDEX_RECORD_BYTES, start, index.bytes[k]!));
  await writeFile(join(dir, ARROW.schema), index.schema ?? new Uint8Array());
  await writeFile(join(dir, ARROW.index), records);
  await syncFiles(dir, [ARROW.schema, ARROW.index]);
  if (opts.info === undefined) return;
  await writeEncodedInfo(dir, opts.info);
}

/** Writes the pieces one after the other from `position`. */
async function writeAll(h: FileHandle, pieces: Uint8Array[], position: number): Promise<void> {
  let at = position;
  let left = pieces;
  while (left.length > 0) {
    let { bytesWritten } = await h.writev(left, at);
    at += bytesWritten;
    // A short write: the rest of the piece it stopped in, and the pieces after it.
    let k = 0;
    while (k < left.length && bytesWritten >= left[k]!.byteLength) bytesWritten -= left[k++]!.byteLength;
    left = k < left.length ? [left[k]!.subarray(bytesWritten), ...left.slice(k + 1)] : [];
  }
}

/**
 * Where a single-schema IPC stream's schema message ends and its end-of-stream marker starts.
 * Each message is a continuation token (0xFFFFFFFF), a little-endian int32 metadata length and the
 * metadata; a schema message has no body. Anything else is refused (the chunk is not stored).
 */
function splitIpcStream(stream: Uint8Array): { schemaEnd: number; bodyEnd: number } {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  if (stream.byteLength < 16 || view.getUint32(0, true) !== 0xffffffff) throw new Error('Arrow chunk: not an IPC stream with continuation tokens');
  const schemaEnd = 8 + view.getInt32(4, true);
  const bodyEnd = stream.byteLength - ARROW_EOS.byteLength;
  const eos = stream.subarray(bodyEnd);
  if (schemaEnd > bodyEnd || !eos.every((b, i) => b === ARROW_EOS[i])) throw new Error('Arrow chunk: no end-of-stream marker after the batches');
  return { schemaEnd, bodyEnd };
}

/** The index of a written Arrow encoding. */
export async function readArrowIndex(dir: string): Promise<ArrowIndex> {
  const buf = await readFile(join(dir, ARROW.index));
  const head = parseRecord(buf, 0);
  const starts: number[] = [];
  const bytes: number[] = [];
  for (let at = INDEX_RECORD_BYTES; at + INDEX_RECORD_BYTES <= buf.length; at += INDEX_RECORD_BYTES) {
    const r = parseRecord(buf, at);
    starts.push(r.start);
    bytes.push(r.bytes);
  }
  return { chunkRows: head.start, starts, bytes, schema: await readFile(join(dir, ARROW.schema)) };
}

/** An Arrow page of an encoded result: the IPC stream as parts to write one after the other. */
export interface EncodedArrowPage {
  rowCount: number;
  /** result_set_bytes of the page, as for the JSON page of the same rows. */
  bytes: number;
  totalRowCount: number;
  columnNames: string[];
  columnTypes: string[];
  /**
   * Schema message, the chunks' batch messages, end-of-stream, to write one after the other: the
   * batches as a byte range of rows.arrow, or, for chunks an encoder running has just written, as
   * its own buffers of them (the same bytes).
   */
  parts: Array<Uint8Array | FileSlice>;
  /** The batches' byte range of rows.arrow (stored compressed frames are made from it). */
  rows: { path: string; start: number; end: number };
}

/** Whether page [offset, offset + limit) of a result of `rowCount` rows is made of whole chunks; its row range if so. */
export function chunkRange(chunkRows: number, rowCount: number, offset: number, limit: number): { from: number; to: number } | undefined {
  const from = Math.min(Math.max(0, Math.trunc(offset)), rowCount);
  const to = Math.min(rowCount, from + Math.max(0, Math.trunc(limit)));
  if (to === from || from % chunkRows !== 0 || (to % chunkRows !== 0 && to !== rowCount)) return undefined;
  return { from, to };
}

/**
 * Page [offset, offset + limit) as Arrow from the encoding in `dir` (its arrow/ directory), when
 * its rows are whole chunks written (in `index`: the encoder's, or the one on disk when omitted);
 * undefined otherwise.
 */
export async function encodedArrowPage(dir: string, info: ResultInfo, offset: number, limit: number, live?: ArrowIndex): Promise<EncodedArrowPage | undefined> {
  const index = live ?? (await readArrowIndex(dir));
  const range = chunkRange(index.chunkRows, info.rowCount, offset, limit);
  if (range === undefined || index.schema === undefined) return undefined;
  const [a, b] = [range.from / index.chunkRows, Math.ceil(range.to / index.chunkRows)];
  if (b >= index.starts.length) return undefined;
  const schema = index.schema;
  const rows = { path: join(dir, ARROW.rows), start: index.starts[a]!, end: index.starts[b]! };
  const page = {
    rowCount: range.to - range.from,
    bytes: headerBytes(info.columnNames) + index.bytes[b]! - index.bytes[a]!,
    totalRowCount: info.rowCount,
    columnNames: info.columnNames,
    columnTypes: info.columnTypes,
    rows,
  };
  const kept = index.recent?.take(a, b);
  if (kept !== undefined) return { ...page, parts: [schema, ...kept, ARROW_EOS] };
  return { ...page, parts: [schema, { handle: await open(rows.path, 'r'), start: rows.start, end: rows.end }, ARROW_EOS] };
}
