// Pre-encoded results. A completed result never changes, so each of its page formats (JSON, CSV,
// Arrow) is written once, streaming, and an unfiltered page is then served as a byte range of a
// file: no SQL, no string building, no copy of the rows through JS strings. Each format is written
// on its own (by default when a reader first asks for it: encodings.ts), so a result read only as
// Arrow never has its JSON or CSV written.
//
// Layout, dataDir/results/<id>.enc/ (chosen by measurement, see bench/service.ts), one directory
// per format, each whole once its info.json is there (written last, synced):
//   json/rows.json  every row's JSON object text, each followed by ','
//   csv/rows.csv    every row's CSV line, each followed by '\n'
//   json/index, csv/index  one fixed-width record per row, and one more after the last row: two
//                   12-digit hex numbers (where the row starts in the rows file, and the
//                   result_set_bytes of all rows before it), then '\n'. Row i's record is at i * 25.
//   <format>/info.json  the result's ResultInfo
//   arrow/          see arrowEncoding.ts
//   frames/         stored compressed frames of pages (src/service/http/compressedFrames.ts)
// So page [o, o + n) is rows.json[json(o), json(o + n) - 1) (the trailing ',' cut), and its
// result_set_bytes is the header line plus bytes(o + n) - bytes(o).
//
// The rows are rendered by the expressions of the dynamic page query (pageQuery.ts
// renderedRowsSql: each value's text once, the row's JSON and CSV made from it as jsonRowSql and
// csvRowSql make them), so a page read from the files is byte for byte the page the query builds.
//
// Readers may read a format directory while it is written (the first read is served by its
// encoder): the rows and index records below the encoder's reported progress are on disk (written,
// not yet synced) and never change. Crash safety: a format directory without its info.json is
// unfinished; it is removed at start and whenever an encoder starts it again. Encodings written
// at completion go under <id>.enc.tmp, renamed to <id>.enc when complete.
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import duckdb from '@duckdb/node-bindings';
import type { DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import { chunkFetched } from '../memory/chunkGarbage.ts';
import { headerBytes, renderedRowsSql, type StoredColumns } from '../pages/pageQuery.ts';
import type { ResultInfo } from '../types.ts';

const HEX = 12;
/** Bytes of one index record: two numbers and '\n'. */
export const INDEX_RECORD_BYTES = 2 * HEX + 1;
export const ENCODED_SUFFIX = '.enc';
export const ENCODING_SUFFIX = '.enc.tmp';

export type EncodedFormat = 'json' | 'csv';

/** A page format stored as its own directory of a result's encoding. */
export type StoredFormat = EncodedFormat | 'arrow';
export const STORED_FORMATS: readonly StoredFormat[] = ['json', 'csv', 'arrow'];

export const FILES = {
  json: 'rows.json',
  csv: 'rows.csv',
  index: 'index',
  /** Written last: a format directory holding it is whole. */
  info: 'info.json',
} as const;

/** A format's directory inside a result's encoding directory. */
export function formatDir(encoded: string, format: StoredFormat): string {
  return join(encoded, format);
}

/**
 * Told by the writers how far they are, so that readers can read what is written: `hungry()` says
 * a reader waits for rows not on disk yet (the buffers are then written out at once), `advance(n)`
 * that the first n rows are readable.
 */
export interface WriteProgress {
  hungry(): boolean;
  advance(rows: number): void;
}

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

/** Where the JSON and CSV encodings are written: either or both. */
export interface RowEncodingDirs {
  json?: string;
  csv?: string;
}

/**
 * Writes the JSON and CSV encodings of a stored result into `dir`/json and `dir`/csv (see
 * writeRowEncodings).
 */
export function writeEncodings(conn: DuckDBConnection, stored: StoredColumns, info: ResultInfo, dir: string, stopped: () => boolean = () => false): Promise<void> {
  return writeRowEncodings(conn, stored, info, { json: formatDir(dir, 'json'), csv: formatDir(dir, 'csv') }, stopped);
}

/**
 * Writes the JSON and/or CSV encodings of a stored result into their directories (created; emptied
 * first by the caller), streaming: DuckDB renders the rows once (renderedRowsSql: each row's
 * number, JSON text, CSV line and result_set_bytes; a format not asked for is not rendered), and
 * the rows are read from its result chunks (2,048 rows each, bounded by DuckDB's streaming buffer)
 * straight into the rows files and their indexes, in buffers of SPLIT_CHUNK_BYTES (written out
 * sooner when `progress` has a reader waiting). Memory stays bounded whatever the result's size:
 * no table of rendered rows, no sort, no window over the rows, no intermediate file. `conn` runs
 * the query; interrupting it, or `stopped()` turning true, stops the work (the caller removes the
 * directories). Each directory's info.json is written last.
 *
 * Measured on 1M rows x 8 columns of sample.events against the former COPY of each row group into
 * a file of hex-framed rows read back and split here: about half the CPU (the COPY's writer, the
 * file and the hex framing are gone) and no rendered file on disk.
 */
export async function writeRowEncodings(
  conn: DuckDBConnection,
  stored: StoredColumns,
  info: ResultInfo,
  dirs: RowEncodingDirs,
  stopped: () => boolean = () => false,
  progress?: WriteProgress,
): Promise<void> {
  const targets = [dirs.json, dirs.csv].filter((d) => d !== undefined);
  for (const d of targets) await mkdir(d, { recursive: true });
  const cols = stored.names.map((_, i) => i);
  const outs = {
    json: dirs.json === undefined ? undefined : await RowFiles.open(dirs.json, FILES.json),
    csv: dirs.csv === undefined ? undefined : await RowFiles.open(dirs.csv, FILES.csv),
  };
  const all = [outs.json, outs.csv].filter((o) => o !== undefined);
  try {
    const split = new RenderedSplit(outs.json, outs.csv);
    await split.start();
    if (cols.length > 0 && info.rowCount > 0) {
      // One text a row (its JSON then its CSV line when both are written): one read of DuckDB's memory a row.
      const text = outs.json && outs.csv ? 'strlen(j) AS lj, b, concat(j, c) AS jc' : outs.json ? 'strlen(j) AS lj, b, j AS jc' : '0::BIGINT AS lj, b, c AS jc';
      const rows = await conn.stream(`SELECT rn, ${text} FROM (${renderedRowsSql(stored, cols, 'true')})`);
      for (;;) {
        if (stopped()) throw new Error('encoding stopped');
        const chunk = await rows.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        chunkFetched();
        await split.chunk(chunk);
        if (progress?.hungry()) progress.advance(await split.flush());
      }
      // An interrupted stream ends early, as if it were whole: the count check below would say so too.
      if (stopped()) throw new Error('encoding stopped');
    }
    await split.finish(info.rowCount);
    progress?.advance(info.rowCount);
    // Durable before info.json says the directory is whole; the files flushed at once.
    await Promise.all(all.flatMap((o) => o.sync()));
  } finally {
    for (const o of all) await o.close();
  }
  for (const d of targets) {
    await writeFile(join(d, FILES.info), JSON.stringify(info));
    await syncFiles(d, [FILES.info]);
  }
}

/** DuckDB's string_t: a 4-byte length, then up to 12 bytes inline or a 4-byte prefix and a pointer. */
const STRING_T = 16;
const INLINE = 12;

/** One format's rows file and index, with their write buffers and the rows file's length so far. */
class RowFiles {
  readonly rows: FileHandle;
  readonly index: FileHandle;
  readonly rowsOut = new OutBuffer();
  readonly indexOut = new OutBuffer();
  /** Bytes of the rows file so far (buffered ones included). */
  at = 0;

  private constructor(rows: FileHandle, index: FileHandle) {
    this.rows = rows;
    this.index = index;
  }

  static async open(dir: string, rowsFile: string): Promise<RowFiles> {
    const rows = await open(join(dir, rowsFile), 'w');
    try {
      return new RowFiles(rows, await open(join(dir, FILES.index), 'w'));
    } catch (err) {
      await rows.close();
      throw err;
    }
  }

  /** The index record of the next row: where it starts and the result_set_bytes before it (nothing to wait for unless it wrote). */
  record(bytesBefore: number): Promise<void> | undefined {
    if (this.indexOut.room() < INDEX_RECORD_BYTES) return this.indexOut.flush(this.index).then(() => this.record(bytesBefore));
    writeRecord(this.indexOut.buf, this.indexOut.take(INDEX_RECORD_BYTES), this.at, bytesBefore);
    return undefined;
  }

  /** Both buffers written out (the rows first: a reader trusts an index record only over rows on disk). */
  async flush(): Promise<void> {
    await this.rowsOut.flush(this.rows);
    await this.indexOut.flush(this.index);
  }

  sync(): Array<Promise<void>> {
    return [this.rows.sync(), this.index.sync()];
  }

  async close(): Promise<void> {
    await this.rows.close();
    await this.index.close();
  }
}

/**
 * Splits rendered rows (rn, the length of the JSON text lj, result_set_bytes b, and jc: the JSON
 * text then the CSV line, or only one of them) into the rows files and indexes, chunk after chunk,
 * copying the bytes from the chunk's memory. The rows must come in order (a streamed query keeps
 * the table's order): a row number out of place, a NULL or a count other than the result's fails
 * the encoding rather than publish a wrong one.
 */
class RenderedSplit {
  readonly #json: RowFiles | undefined;
  readonly #csv: RowFiles | undefined;
  #row = 0;
  #sumBytes = 0;

  constructor(json: RowFiles | undefined, csv: RowFiles | undefined) {
    this.#json = json;
    this.#csv = csv;
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
    const [json, csv] = [this.#json, this.#csv];
    for (let i = 0; i < n; i++) {
      const row = this.#row;
      if (rowNumbers[2 * i] !== row % 0x1_0000_0000 || rowNumbers[2 * i + 1] !== Math.floor(row / 0x1_0000_0000)) {
        throw new Error(`encoding: rendered row ${row} is out of place`);
      }
      const at = i * STRING_T;
      const len = (texts[at]! | (texts[at + 1]! << 8) | (texts[at + 2]! << 16)) + texts[at + 3]! * 0x100_0000;
      const text = len <= INLINE ? texts.subarray(at + 4, at + 4 + len) : duckdb.get_data_from_pointer(texts.buffer as ArrayBuffer, texts.byteOffset + at + 8, len);
      const split = csv === undefined ? len : jsonLengths[2 * i]! + jsonLengths[2 * i + 1]! * 0x1_0000_0000;
      // Awaited only when a buffer was written out (an await per row would cost a turn each).
      if (json !== undefined) {
        const wrote = json.rowsOut.append(json.rows, text, 0, split, 0x2c); // ','
        if (wrote !== undefined) await wrote;
        json.at += split + 1;
      }
      if (csv !== undefined) {
        const from = json === undefined ? 0 : split;
        const wrote = csv.rowsOut.append(csv.rows, text, from, len, 0x0a);
        if (wrote !== undefined) await wrote;
        csv.at += len - from + 1;
      }
      this.#sumBytes += rowBytes[2 * i + 1]! * 0x1_0000_0000 + rowBytes[2 * i]!;
      this.#row = row + 1;
      // The record after the row (where the next one starts): row r's page end is readable with it.
      const recorded = [json?.record(this.#sumBytes), csv?.record(this.#sumBytes)];
      for (const r of recorded) if (r !== undefined) await r;
    }
  }

  /** The first index record (row 0 starts at 0, nothing before it). */
  async start(): Promise<void> {
    for (const o of [this.#json, this.#csv]) await o?.record(0);
  }

  /** Every buffer written out; resolves to the rows now readable from the files. */
  async flush(): Promise<number> {
    for (const o of [this.#json, this.#csv]) await o?.flush();
    return this.#row;
  }

  /** Once every row is written (the last record holds the totals): the buffers written out. */
  async finish(rowCount: number): Promise<void> {
    if (this.#row !== rowCount) throw new Error(`encoding: ${this.#row} rows rendered, the result has ${rowCount}`);
    await this.flush();
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

/** An index record (two 12-digit hex numbers, '\n') at `at`. */
export function writeRecord(buf: Buffer, at: number, start: number, bytes: number): void {
  writeHex(buf, at, start);
  writeHex(buf, at + HEX, bytes);
  buf[at + 2 * HEX] = 0x0a;
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

/** Durable before info.json or a rename says they are whole (a power loss must not leave a torn encoding). */
export async function syncFiles(dir: string, names: readonly string[]): Promise<void> {
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

/** The ResultInfo of a format's encoding directory, or undefined when it is not (completely) written. */
export async function readEncodedInfo(dir: string): Promise<ResultInfo | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, FILES.info), 'utf8');
  } catch {
    return undefined;
  }
  return JSON.parse(text) as ResultInfo;
}

/** Reads the index records of rows `a` and `b` (a <= b <= rowCount) of a format directory. */
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

export async function readFully(h: FileHandle, buf: Buffer, at: number, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await h.read(buf, at + done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`encoded result index ended early at byte ${position + done}`);
    done += bytesRead;
  }
}

interface Rec {
  start: number;
  bytes: number;
}

export function parseRecord(buf: Buffer, at: number): Rec {
  const num = (k: number): number => Number.parseInt(buf.toString('latin1', at + k * HEX, at + (k + 1) * HEX), 16);
  return { start: num(0), bytes: num(1) };
}

/** Page [offset, offset + limit) of a result's JSON or CSV encoding (`dir`: the format's directory), its rows as an open byte range. */
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
  page.rows = { handle, start: a.start, end: format === 'json' ? b.start - 1 : b.start };
  return page;
}

/** Where a result's encodings live, and where they are written before being renamed there. */
export function encodedDir(resultsDir: string, id: string): { dir: string; tmp: string } {
  return { dir: join(resultsDir, `${id}${ENCODED_SUFFIX}`), tmp: join(resultsDir, `${id}${ENCODING_SUFFIX}`) };
}

