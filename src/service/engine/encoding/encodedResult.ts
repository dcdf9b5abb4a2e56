// Pre-encoded results. A completed result never changes, so its JSON and CSV page encodings are
// written once, streaming (DuckDB renders every row once into a file, split here into the files
// below with bounded buffers), and an unfiltered page is then served as a byte range of a file:
// no SQL, no string building, no copy of the rows through JS strings.
//
// Layout, dataDir/results/<id>.enc/ (chosen by measurement, see bench/service.ts):
//   rows.json  every row's JSON object text, each followed by ','
//   rows.csv   every row's CSV line, each followed by '\n'
//   index      one fixed-width record per row, and one more after the last row: three 12-digit
//              hex numbers (where the row starts in rows.json, where in rows.csv, and the
//              result_set_bytes of all rows before it), then '\n'. Row i's record is at i * 37.
//   info.json  the result's ResultInfo; written last
//   arrow/     written after the rest (under arrow.tmp/, then renamed):
//     rows.arrow    the rows as Arrow record batch messages, one batch per chunk of `chunkRows`
//                   rows (the page size clients read by), each as an Arrow page of them has it
//     arrow.schema  the Arrow schema message every page stream starts with
//     arrow.index   `chunkRows` as a 12-digit hex record, then one record per chunk and one after
//                   the last: where the chunk starts in rows.arrow
// So page [o, o + n) is rows.json[json(o), json(o + n) - 1) (the trailing ',' cut), and its
// result_set_bytes is the header line plus bytes(o + n) - bytes(o). An Arrow page whose rows are
// whole chunks is the schema message, the chunks' batches and the end-of-stream marker: a valid IPC
// stream of the same values as one built per request; other Arrow pages are built per request.
//
// The rows are rendered by the expressions of the dynamic page query (pageQuery.ts
// renderedRowsSql: each value's text once, the row's JSON and CSV made from it as jsonRowSql and
// csvRowSql make them), so a page read from the files is byte for byte the page the query builds.
//
// Crash safety: everything is written under <id>.enc.tmp and renamed to <id>.enc when complete;
// a directory named .enc is therefore whole; so is arrow/ inside it. Leftover .enc.tmp and
// arrow.tmp directories are removed at start.
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import duckdb from '@duckdb/node-bindings';
import type { DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import { chunkFetched } from '../memory/chunkGarbage.ts';
import { headerBytes, renderedRowsSql, type StoredColumns } from '../pages/pageQuery.ts';
import type { ResultInfo } from '../types.ts';

const HEX = 12;
/** Bytes of one index record: three numbers and '\n'. */
export const INDEX_RECORD_BYTES = 3 * HEX + 1;
export const ENCODED_SUFFIX = '.enc';
export const ENCODING_SUFFIX = '.enc.tmp';

export type EncodedFormat = 'json' | 'csv';

const FILES = {
  json: 'rows.json',
  csv: 'rows.csv',
  index: 'index',
  info: 'info.json',
  arrow: 'rows.arrow',
  arrowSchema: 'arrow.schema',
  arrowIndex: 'arrow.index',
} as const;

/** The Arrow encoding's directory inside a published encoding, and where it is written first. */
export function arrowDirs(encoded: string): { dir: string; tmp: string } {
  return { dir: join(encoded, 'arrow'), tmp: join(encoded, 'arrow.tmp') };
}

/** The IPC stream's end-of-stream marker: a continuation token and a zero length. */
const ARROW_EOS = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0);
const ARROW_RECORD_BYTES = HEX + 1;

/** A byte range of an open file; the reader closes the handle. */
export interface FileSlice {
  handle: FileHandle;
  start: number;
  /** Exclusive. */
  end: number;
}

export interface EncodedPage {
  rowCount: number;
  /** result_set_bytes of the page (header line included), as ResultInfo.bytes defines it. */
  bytes: number;
  totalRowCount: number;
  columnNames: string[];
  columnTypes: string[];
  /** The page's rows: JSON objects joined by ',' (no brackets), or CSV lines each ended by '\n'. */
  rows: FileSlice | undefined;
}

/** The three files are written this many bytes at a time (a row larger than that alone). */
const SPLIT_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Writes the encodings of a stored result into `dir` (created; empty if it exists), streaming:
 * DuckDB renders the rows once (renderedRowsSql: each row's number, JSON text, CSV line and
 * result_set_bytes), and the rows are read from its result chunks (2,048 rows each, bounded by
 * DuckDB's streaming buffer) straight into rows.json, rows.csv and the index, in buffers of
 * SPLIT_CHUNK_BYTES. Memory stays bounded whatever the result's size: no table of rendered rows, no
 * sort, no window over the rows, no intermediate file. `conn` runs the query; interrupting it, or
 * `stopped()` turning true, stops the work (the caller removes `dir`).
 *
 * Measured on 1M rows x 8 columns of sample.events against the former COPY of each row group into
 * a file of hex-framed rows read back and split here: about half the CPU (the COPY's writer, the
 * file and the hex framing are gone) and no rendered file on disk.
 */
export async function writeEncodings(conn: DuckDBConnection, stored: StoredColumns, info: ResultInfo, dir: string, stopped: () => boolean = () => false): Promise<void> {
  await mkdir(dir, { recursive: true });
  const cols = stored.names.map((_, i) => i);
  const outs = await Promise.all([FILES.json, FILES.csv, FILES.index].map((f) => open(join(dir, f), 'w')));
  try {
    const split = new RenderedSplit(outs as [FileHandle, FileHandle, FileHandle]);
    if (cols.length > 0 && info.rowCount > 0) {
      // One text a row, its JSON then its CSV line: one read of DuckDB's memory a row.
      const rows = await conn.stream(`SELECT rn, strlen(j) AS lj, b, concat(j, c) AS jc FROM (${renderedRowsSql(stored, cols, 'true')})`);
      for (;;) {
        if (stopped()) throw new Error('encoding stopped');
        const chunk = await rows.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        chunkFetched();
        await split.chunk(chunk);
      }
      // An interrupted stream ends early, as if it were whole: the count check below would say so too.
      if (stopped()) throw new Error('encoding stopped');
    }
    await split.finish(info.rowCount);
    // Durable before the directory is renamed into place; the three flushed at once.
    await Promise.all(outs.map((h) => h.sync()));
  } finally {
    for (const h of outs) await h.close();
  }
  await writeFile(join(dir, FILES.info), JSON.stringify(info));
  await syncFiles(dir, [FILES.info]);
}

/** DuckDB's string_t: a 4-byte length, then up to 12 bytes inline or a 4-byte prefix and a pointer. */
const STRING_T = 16;
const INLINE = 12;

/**
 * Splits rendered rows (rn, the length of the JSON text lj, result_set_bytes b, and jc: the JSON
 * text then the CSV line) into rows.json, rows.csv and the index, chunk after chunk, copying the
 * bytes from the chunk's memory. The rows must come
 * in order (a streamed query keeps the table's order): a row number out of place, a NULL or a count
 * other than the result's fails the encoding rather than publish a wrong one.
 */
class RenderedSplit {
  readonly #json: FileHandle;
  readonly #csv: FileHandle;
  readonly #index: FileHandle;
  readonly #jsonOut = new OutBuffer();
  readonly #csvOut = new OutBuffer();
  readonly #indexOut = new OutBuffer();
  #row = 0;
  #sumJson = 0;
  #sumCsv = 0;
  #sumBytes = 0;

  constructor([json, csv, index]: [FileHandle, FileHandle, FileHandle]) {
    this.#json = json;
    this.#csv = csv;
    this.#index = index;
  }

  async chunk(chunk: DuckDBDataChunk): Promise<void> {
    const n = chunk.rowCount;
    const vectors = [0, 1, 2, 3].map((k) => duckdb.data_chunk_get_vector(chunk.chunk, k));
    for (const v of vectors) {
      const mask = duckdb.vector_get_validity(v, Math.ceil(n / 64) * 8) as Uint8Array | null;
      if (mask !== null && !allValid(mask, n)) throw new Error(`encoding: a rendered row after row ${this.#row} is NULL`);
    }
    const [rowNumbers, jsonLengths, rowBytes] = vectors.slice(0, 3).map((v) => int64Words(duckdb.vector_get_data(v, n * 8), n)) as [Uint32Array, Uint32Array, Uint32Array];
    const texts = duckdb.vector_get_data(vectors[3]!, n * STRING_T);
    const index = this.#indexOut;
    for (let i = 0; i < n; i++) {
      const row = this.#row;
      if (rowNumbers[2 * i] !== row % 0x1_0000_0000 || rowNumbers[2 * i + 1] !== Math.floor(row / 0x1_0000_0000)) {
        throw new Error(`encoding: rendered row ${row} is out of place`);
      }
      if (index.room() < INDEX_RECORD_BYTES) await index.flush(this.#index);
      writeRecord(index.buf, index.take(INDEX_RECORD_BYTES), this.#sumJson, this.#sumCsv, this.#sumBytes);
      const at = i * STRING_T;
      const len = (texts[at]! | (texts[at + 1]! << 8) | (texts[at + 2]! << 16)) + texts[at + 3]! * 0x100_0000;
      const text = len <= INLINE ? texts.subarray(at + 4, at + 4 + len) : duckdb.get_data_from_pointer(texts.buffer as ArrayBuffer, texts.byteOffset + at + 8, len);
      const json = jsonLengths[2 * i]! + jsonLengths[2 * i + 1]! * 0x1_0000_0000;
      // Awaited only when a buffer was written out (an await per row would cost a turn each).
      const wroteJson = this.#jsonOut.append(this.#json, text, 0, json, 0x2c); // ','
      if (wroteJson !== undefined) await wroteJson;
      const wroteCsv = this.#csvOut.append(this.#csv, text, json, len, 0x0a);
      if (wroteCsv !== undefined) await wroteCsv;
      this.#sumJson += json + 1;
      this.#sumCsv += len - json + 1;
      this.#sumBytes += rowBytes[2 * i + 1]! * 0x1_0000_0000 + rowBytes[2 * i]!;
      this.#row = row + 1;
    }
  }

  /** The index's last record (the totals), once every row is written; the buffers written out. */
  async finish(rowCount: number): Promise<void> {
    if (this.#row !== rowCount) throw new Error(`encoding: ${this.#row} rows rendered, the result has ${rowCount}`);
    if (this.#indexOut.room() < INDEX_RECORD_BYTES) await this.#indexOut.flush(this.#index);
    writeRecord(this.#indexOut.buf, this.#indexOut.take(INDEX_RECORD_BYTES), this.#sumJson, this.#sumCsv, this.#sumBytes);
    await this.#jsonOut.flush(this.#json);
    await this.#csvOut.flush(this.#csv);
    await this.#indexOut.flush(this.#index);
  }
}

/** True when the validity mask (bit set = valid) marks all of the first `n` rows valid. */
function allValid(mask: Uint8Array, n: number): boolean {
  for (let i = 0; i < n; i++) if ((mask[i >> 3]! & (1 << (i & 7))) === 0) return false;
  return true;
}

/** A vector of int64 (non-negative here) as 32-bit words, low then high (copied when not aligned). */
function int64Words(src: Uint8Array, n: number): Uint32Array {
  const aligned = src.byteOffset % 4 === 0 ? src : src.slice(0, n * 8);
  return new Uint32Array(aligned.buffer, aligned.byteOffset, n * 2);
}

/** A file's write buffer of SPLIT_CHUNK_BYTES, written out when full. */
class OutBuffer {
  readonly buf = Buffer.allocUnsafe(SPLIT_CHUNK_BYTES);
  #used = 0;

  room(): number {
    return this.buf.length - this.#used;
  }

  /** Reserves `bytes` bytes (room() of them are free); returns where they start. */
  take(bytes: number): number {
    const at = this.#used;
    this.#used += bytes;
    return at;
  }

  async flush(h: FileHandle): Promise<void> {
    if (this.#used > 0) await writeFully(h, this.buf, this.#used);
    this.#used = 0;
  }

  /**
   * Appends bytes [from, to) of `text` and the byte `end`; the buffer is written out first when
   * they do not fit, and bytes larger than the buffer are written out directly. Returns nothing to
   * wait for unless it wrote.
   */
  append(h: FileHandle, text: Uint8Array, from: number, to: number, end: number): Promise<void> | undefined {
    const len = to - from;
    if (this.room() < len + 1) return this.#appendAfterFlush(h, text, from, to, end);
    const at = this.take(len + 1);
    if (len <= 64) {
      const buf = this.buf;
      for (let k = 0; k < len; k++) buf[at + k] = text[from + k]!;
    } else {
      this.buf.set(text.subarray(from, to), at);
    }
    this.buf[at + len] = end;
    return undefined;
  }

  async #appendAfterFlush(h: FileHandle, text: Uint8Array, from: number, to: number, end: number): Promise<void> {
    await this.flush(h);
    if (to - from + 1 <= this.room()) {
      await this.append(h, text, from, to, end);
      return;
    }
    await writeFully(h, text.subarray(from, to), to - from);
    this.buf[this.take(1)] = end;
  }
}

async function writeFully(h: FileHandle, buf: Uint8Array, length: number): Promise<void> {
  let done = 0;
  while (done < length) done += (await h.write(buf, done, length - done)).bytesWritten;
}

/** An index record (three 12-digit hex numbers, '\n') at `at`. */
function writeRecord(buf: Buffer, at: number, json: number, csv: number, bytes: number): void {
  writeHex(buf, at, json);
  writeHex(buf, at + HEX, csv);
  writeHex(buf, at + 2 * HEX, bytes);
  buf[at + 3 * HEX] = 0x0a;
}

/** `n` as 12 upper-case hex digits at `at`. */
function writeHex(buf: Buffer, at: number, n: number): void {
  let v = n;
  for (let i = at + HEX - 1; i >= at; i--) {
    const d = v % 16;
    buf[i] = d < 10 ? 0x30 + d : 0x37 + d;
    v = Math.floor(v / 16);
  }
}

/**
 * Writes the Arrow encoding into `dir` (arrowDirs' tmp, renamed to its dir when this returns):
 * `buildChunk(offset, limit)` makes the Arrow IPC stream of those rows (schema, one batch, end)
 * and says how many rows it holds (fewer than `limit` fails the encoding),
 * as an Arrow page of them is built; each stream's batch messages are appended to rows.arrow, its
 * schema message kept once. `stopped()` is asked between chunks.
 */
export async function writeArrowEncoding(
  dir: string,
  chunkRows: number,
  rowCount: number,
  buildChunk: (offset: number, limit: number) => Promise<{ bytes: Uint8Array; rowCount: number }>,
  stopped: () => boolean,
): Promise<void> {
  const rows = await open(join(dir, FILES.arrow), 'w');
  const index: string[] = [record(chunkRows)];
  let schema: Uint8Array | undefined;
  let at = 0;
  try {
    for (let offset = 0; offset < rowCount; offset += chunkRows) {
      if (stopped()) throw new Error('Arrow encoding stopped');
      const limit = Math.min(chunkRows, rowCount - offset);
      const { bytes: stream, rowCount: built } = await buildChunk(offset, limit);
      // A page query interrupted (the execution stopped) ends early, as if it were whole.
      if (built !== limit) throw new Error(`Arrow encoding: the chunk at row ${offset} has ${built} rows, not ${limit}`);
      const { schemaEnd, bodyEnd } = splitIpcStream(stream);
      schema ??= stream.subarray(0, schemaEnd);
      index.push(record(at));
      const body = stream.subarray(schemaEnd, bodyEnd);
      await rows.write(body);
      at += body.byteLength;
    }
    index.push(record(at));
    await rows.sync();
  } finally {
    await rows.close();
  }
  await writeFile(join(dir, FILES.arrowSchema), schema ?? new Uint8Array());
  await writeFile(join(dir, FILES.arrowIndex), index.join(''));
  await syncFiles(dir, [FILES.arrowSchema, FILES.arrowIndex]);
}

function record(n: number): string {
  return `${n.toString(16).padStart(HEX, '0')}\n`;
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

/** Durable before the directory is renamed into place (a power loss must not leave a torn .enc). */
async function syncFiles(dir: string, names: readonly string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const h = await open(join(dir, name), 'r');
      try {
        await h.sync();
      } finally {
        await h.close();
      }
    }),
  );
}

/** Moves a finished encoding into place. */
export async function publishEncodings(tmpDir: string, dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await rename(tmpDir, dir);
}

/** The ResultInfo of an encoded result, or undefined when it has no (complete) encoding. */
export async function readEncodedInfo(dir: string): Promise<ResultInfo | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, FILES.info), 'utf8');
  } catch {
    return undefined;
  }
  return JSON.parse(text) as ResultInfo;
}

/** Reads the index records of rows `a` and `b` (a <= b <= rowCount). */
async function records(dir: string, a: number, b: number): Promise<[Rec, Rec]> {
  const h = await open(join(dir, FILES.index), 'r');
  try {
    const len = (b - a + 1) * INDEX_RECORD_BYTES;
    // Two records far apart: two small reads rather than one large one.
    if (b - a > 64) {
      const buf = Buffer.allocUnsafe(2 * INDEX_RECORD_BYTES);
      await readFully(h, buf, 0, INDEX_RECORD_BYTES, a * INDEX_RECORD_BYTES);
      await readFully(h, buf, INDEX_RECORD_BYTES, INDEX_RECORD_BYTES, b * INDEX_RECORD_BYTES);
      return [parseRecord(buf, 0), parseRecord(buf, INDEX_RECORD_BYTES)];
    }
    const buf = Buffer.allocUnsafe(len);
    await readFully(h, buf, 0, len, a * INDEX_RECORD_BYTES);
    return [parseRecord(buf, 0), parseRecord(buf, len - INDEX_RECORD_BYTES)];
  } finally {
    await h.close();
  }
}

async function readFully(h: FileHandle, buf: Buffer, at: number, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await h.read(buf, at + done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`encoded result index ended early at byte ${position + done}`);
    done += bytesRead;
  }
}

interface Rec {
  json: number;
  csv: number;
  bytes: number;
}

function parseRecord(buf: Buffer, at: number): Rec {
  const num = (k: number): number => Number.parseInt(buf.toString('latin1', at + k * HEX, at + (k + 1) * HEX), 16);
  return { json: num(0), csv: num(1), bytes: num(2) };
}

/** Page [offset, offset + limit) of an encoded result, its rows as an open byte range. */
export async function encodedPage(dir: string, info: ResultInfo, offset: number, limit: number, format: EncodedFormat): Promise<EncodedPage> {
  const from = Math.min(Math.max(0, Math.trunc(offset)), info.rowCount);
  const to = Math.min(info.rowCount, from + Math.max(0, Math.trunc(limit)));
  const page: EncodedPage = {
    rowCount: to - from,
    bytes: headerBytes(info.columnNames),
    totalRowCount: info.rowCount,
    columnNames: info.columnNames,
    columnTypes: info.columnTypes,
    rows: undefined,
  };
  if (to === from) return page;
  const [a, b] = await records(dir, from, to);
  page.bytes += b.bytes - a.bytes;
  const handle = await open(join(dir, format === 'json' ? FILES.json : FILES.csv), 'r');
  // JSON rows each end with ',': the page's last one is cut. CSV lines keep their '\n'.
  page.rows = format === 'json' ? { handle, start: a.json, end: b.json - 1 } : { handle, start: a.csv, end: b.csv };
  return page;
}

/** Where a result's encodings live, and where they are written before being renamed there. */
export function encodedDir(resultsDir: string, id: string): { dir: string; tmp: string } {
  return { dir: join(resultsDir, `${id}${ENCODED_SUFFIX}`), tmp: join(resultsDir, `${id}${ENCODING_SUFFIX}`) };
}

/** An Arrow page of an encoded result: the IPC stream as parts to write one after the other. */
export interface EncodedArrowPage {
  rowCount: number;
  /** result_set_bytes of the page, as for the JSON page of the same rows. */
  bytes: number;
  totalRowCount: number;
  columnNames: string[];
  columnTypes: string[];
  /** Schema message, the chunks' batch messages (a byte range of rows.arrow), end-of-stream. */
  parts: [Uint8Array, FileSlice, Uint8Array];
}

/**
 * Page [offset, offset + limit) as Arrow from the encoding, when its rows are whole chunks (it
 * starts on a chunk and ends on one, or at the end of the result); undefined otherwise, or when
 * the result has no Arrow encoding (empty, column-less, or written before Arrow was encoded).
 */
export async function encodedArrowPage(dir: string, info: ResultInfo, offset: number, limit: number): Promise<EncodedArrowPage | undefined> {
  const from = Math.min(Math.max(0, Math.trunc(offset)), info.rowCount);
  const to = Math.min(info.rowCount, from + Math.max(0, Math.trunc(limit)));
  if (to === from) return undefined;
  const arrow = arrowDirs(dir).dir;
  let h: FileHandle;
  try {
    h = await open(join(arrow, FILES.arrowIndex), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let start: number;
  let end: number;
  try {
    const head = Buffer.allocUnsafe(ARROW_RECORD_BYTES);
    await readFully(h, head, 0, ARROW_RECORD_BYTES, 0);
    const chunkRows = parseHex(head, 0);
    if (from % chunkRows !== 0 || (to % chunkRows !== 0 && to !== info.rowCount)) return undefined;
    const at = async (chunk: number): Promise<number> => {
      const buf = Buffer.allocUnsafe(ARROW_RECORD_BYTES);
      await readFully(h, buf, 0, ARROW_RECORD_BYTES, (1 + chunk) * ARROW_RECORD_BYTES);
      return parseHex(buf, 0);
    };
    start = await at(from / chunkRows);
    end = await at(Math.ceil(to / chunkRows));
  } finally {
    await h.close();
  }
  const [a, b] = await records(dir, from, to);
  const schema = await readFile(join(arrow, FILES.arrowSchema));
  const handle = await open(join(arrow, FILES.arrow), 'r');
  return {
    rowCount: to - from,
    bytes: headerBytes(info.columnNames) + b.bytes - a.bytes,
    totalRowCount: info.rowCount,
    columnNames: info.columnNames,
    columnTypes: info.columnTypes,
    parts: [schema, { handle, start, end }, ARROW_EOS],
  };
}

function parseHex(buf: Buffer, at: number): number {
  return Number.parseInt(buf.toString('latin1', at, at + HEX), 16);
}
