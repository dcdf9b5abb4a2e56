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
// The rows are rendered by the same SQL as the dynamic page query (pageQuery.ts jsonRowSql /
// csvRowSql), so a page read from the files is byte for byte the page the query would build.
//
// Crash safety: everything is written under <id>.enc.tmp and renamed to <id>.enc when complete;
// a directory named .enc is therefore whole; so is arrow/ inside it. Leftover .enc.tmp and
// arrow.tmp directories are removed at start.
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../sql.ts';
import { csvRowSql, headerBytes, jsonRowSql, rowBytesSql, type StoredColumns } from './pageQuery.ts';
import type { ResultInfo } from './types.ts';

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
  /** The rendered rows before they are split (writeEncodings); removed once split. */
  rendered: 'rows.rendered',
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

/** COPY options that write each value as is: one column, no quoting, no header. */
function rawCopy(lineEnd: string): string {
  return `(FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01', NEW_LINE ${sqlString(lineEnd)})`;
}

const hex = (x: string): string => `lpad(hex(${x}), ${HEX}, '0')`;

/** Bytes of the fields in front of each rendered row: its row number and three lengths. */
const RENDERED_HEAD = 4 * HEX;
/** The rendered rows are read, and the three files written, this many bytes at a time. */
const SPLIT_CHUNK_BYTES = 4 * 1024 * 1024;
/**
 * Rows rendered by one COPY: a quarter of DuckDB's row group. A COPY keeps the rendered text of
 * what it renders in memory to write it in order (measured on 1M rows x 8 columns: a whole-table
 * COPY ~90 MB more at the peak than a row group at a time; a quarter row group lower again).
 */
const SLICE_ROWS = 30_720;

/**
 * Writes the encodings of a stored result into `dir` (created; empty if it exists), streaming:
 * DuckDB renders the rows once, a row group at a time (`COPY` of its rows into a file: each row's
 * number, the byte lengths of its JSON and CSV texts and its result_set_bytes as hex, then the two
 * texts), and each slice is split into rows.json, rows.csv and the index in buffers of
 * SPLIT_CHUNK_BYTES (larger only for a row larger than that) while DuckDB renders the next. Memory
 * stays bounded whatever the result's size: no table of rendered rows, no sort, no window over the
 * rows. `conn` runs the COPYs; interrupting it, or `stopped()` turning true, stops the work (the
 * caller removes `dir`).
 */
export async function writeEncodings(conn: DuckDBConnection, stored: StoredColumns, info: ResultInfo, dir: string, stopped: () => boolean = () => false): Promise<void> {
  await mkdir(dir, { recursive: true });
  const cols = stored.names.map((_, i) => i);
  const outs = await Promise.all([FILES.json, FILES.csv, FILES.index].map((f) => open(join(dir, f), 'w')));
  try {
    const split = new RenderedSplit(outs as [FileHandle, FileHandle, FileHandle]);
    if (cols.length > 0) {
      // The subquery renders each text once; the outer projection only measures and joins them.
      const render = (from: number, file: string): Promise<unknown> =>
        conn.run(
          `COPY (SELECT ${hex('rn')} || ${hex('strlen(j)')} || ${hex('strlen(c)')} || ${hex('b')} || j || c FROM (
             SELECT rowid AS rn, ${jsonRowSql(stored, cols)} AS j, ${csvRowSql(stored, cols)} AS c, ${rowBytesSql(cols, stored)}::BIGINT AS b
             FROM ${stored.table} WHERE rowid >= ${from} AND rowid < ${from + SLICE_ROWS}
           )) TO ${sqlString(file)} ${rawCopy('\n')}`,
        );
      const file = (from: number): string => join(dir, `${FILES.rendered}.${(from / SLICE_ROWS) % 2}`);
      // The COPY of the next slice runs while this one is split: it may fail (an interrupt, when
      // the execution is stopped) before it is awaited. Its rejection is handled at once (else it
      // is an unhandled rejection, which ends the service's thread with DuckDB calls in flight on
      // the other connections: the process aborts), and every way out of the loop waits for it
      // to settle, so that no COPY is in flight on `conn` when the caller closes it.
      const started = (copy: Promise<unknown>): Promise<unknown> => {
        copy.catch(() => undefined);
        return copy;
      };
      let next: Promise<unknown> | undefined = info.rowCount > 0 ? started(render(0, file(0))) : undefined;
      try {
        for (let from = 0; next !== undefined; from += SLICE_ROWS) {
          await next;
          next = undefined;
          const after = from + SLICE_ROWS;
          if (after < info.rowCount && !stopped()) next = started(render(after, file(after)));
          // Split this slice while DuckDB renders the next.
          await split.file(file(from), stopped);
          await rm(file(from));
        }
      } catch (err) {
        await next?.catch(() => undefined);
        throw err;
      }
    }
    await split.finish(info.rowCount);
  } finally {
    for (const h of outs) await h.close();
  }
  await syncFiles(dir, [FILES.json, FILES.csv, FILES.index]);
  await writeFile(join(dir, FILES.info), JSON.stringify(info));
  await syncFiles(dir, [FILES.info]);
}

/**
 * Splits rendered rows (see writeEncodings) into rows.json, rows.csv and the index, slice after
 * slice. The rows must come in order (COPY keeps a table's insertion order): a row number out of
 * place, a torn record or a count other than the result's fails the encoding rather than publish
 * a wrong one.
 */
class RenderedSplit {
  readonly #json: FileHandle;
  readonly #csv: FileHandle;
  readonly #index: FileHandle;
  #buf = Buffer.allocUnsafe(SPLIT_CHUNK_BYTES);
  #jsonOut = Buffer.allocUnsafe(SPLIT_CHUNK_BYTES);
  #csvOut = Buffer.allocUnsafe(SPLIT_CHUNK_BYTES);
  /** A record per row of at least RENDERED_HEAD + 1 bytes: never more records than that in a chunk. */
  readonly #indexOut = Buffer.allocUnsafe(Math.ceil(SPLIT_CHUNK_BYTES / (RENDERED_HEAD + 1)) * INDEX_RECORD_BYTES + INDEX_RECORD_BYTES);
  #row = 0;
  #sumJson = 0;
  #sumCsv = 0;
  #sumBytes = 0;

  constructor([json, csv, index]: [FileHandle, FileHandle, FileHandle]) {
    this.#json = json;
    this.#csv = csv;
    this.#index = index;
  }

  async file(path: string, stopped: () => boolean): Promise<void> {
    const input = await open(path, 'r');
    try {
      let have = 0;
      let eof = false;
      while (!eof || have > 0) {
        if (stopped()) throw new Error('encoding stopped');
        if (!eof) {
          const { bytesRead } = await input.read(this.#buf, have, this.#buf.length - have, null);
          if (bytesRead === 0) eof = true;
          have += bytesRead;
        }
        const at = await this.#rows(have);
        if (at === 0 && have === this.#buf.length) {
          // One row larger than the buffer: room for it (and its texts) is made.
          const bigger = Buffer.allocUnsafe(this.#buf.length * 2);
          this.#buf.copy(bigger, 0, 0, have);
          this.#buf = bigger;
          this.#jsonOut = Buffer.allocUnsafe(bigger.length);
          this.#csvOut = Buffer.allocUnsafe(bigger.length);
        } else {
          this.#buf.copy(this.#buf, 0, at, have);
          have -= at;
        }
        if (eof && have > 0 && at === 0) throw new Error(`encoding: the rendered rows end inside row ${this.#row}`);
      }
    } finally {
      await input.close();
    }
  }

  /** Writes out the whole rows among the first `have` bytes of the buffer; returns where they end. */
  async #rows(have: number): Promise<number> {
    const buf = this.#buf;
    let at = 0;
    let j = 0;
    let c = 0;
    let x = 0;
    while (have - at >= RENDERED_HEAD) {
      const lenJson = readHex(buf, at + HEX);
      const lenCsv = readHex(buf, at + 2 * HEX);
      const end = at + RENDERED_HEAD + lenJson + lenCsv + 1;
      if (end > have) break;
      if (readHex(buf, at) !== this.#row || buf[end - 1] !== 0x0a) throw new Error(`encoding: rendered row ${this.#row} is out of place or torn`);
      writeRecord(this.#indexOut, x, this.#sumJson, this.#sumCsv, this.#sumBytes);
      x += INDEX_RECORD_BYTES;
      const from = at + RENDERED_HEAD;
      j += buf.copy(this.#jsonOut, j, from, from + lenJson);
      this.#jsonOut[j++] = 0x2c; // ','
      c += buf.copy(this.#csvOut, c, from + lenJson, from + lenJson + lenCsv);
      this.#csvOut[c++] = 0x0a;
      this.#sumJson += lenJson + 1;
      this.#sumCsv += lenCsv + 1;
      this.#sumBytes += readHex(buf, at + 3 * HEX);
      this.#row += 1;
      at = end;
    }
    if (j > 0) await writeFully(this.#json, this.#jsonOut, j);
    if (c > 0) await writeFully(this.#csv, this.#csvOut, c);
    if (x > 0) await writeFully(this.#index, this.#indexOut, x);
    return at;
  }

  /** The index's last record (the totals), once every row is written. */
  async finish(rowCount: number): Promise<void> {
    if (this.#row !== rowCount) throw new Error(`encoding: ${this.#row} rows rendered, the result has ${rowCount}`);
    writeRecord(this.#indexOut, 0, this.#sumJson, this.#sumCsv, this.#sumBytes);
    await writeFully(this.#index, this.#indexOut, INDEX_RECORD_BYTES);
  }
}

async function writeFully(h: FileHandle, buf: Buffer, length: number): Promise<void> {
  let done = 0;
  while (done < length) done += (await h.write(buf, done, length - done)).bytesWritten;
}

/** A 12-digit hex number (upper or lower case) at `at`. */
function readHex(buf: Buffer, at: number): number {
  let v = 0;
  for (let i = at; i < at + HEX; i++) {
    const ch = buf[i]!;
    v = v * 16 + (ch <= 0x39 ? ch - 0x30 : (ch | 0x20) - 0x57);
  }
  return v;
}

/** An index record (three 12-digit hex numbers, '\n') at `at`. */
function writeRecord(buf: Buffer, at: number, json: number, csv: number, bytes: number): void {
  [json, csv, bytes].forEach((n, k) => {
    let v = n;
    for (let i = at + (k + 1) * HEX - 1; i >= at + k * HEX; i--) {
      const d = v % 16;
      buf[i] = d < 10 ? 0x30 + d : 0x37 + d;
      v = Math.floor(v / 16);
    }
  });
  buf[at + 3 * HEX] = 0x0a;
}

/**
 * Writes the Arrow encoding into `dir` (arrowDirs' tmp, renamed to its dir when this returns):
 * `buildChunk(offset, limit)` makes the Arrow IPC stream of those rows (schema, one batch, end),
 * as an Arrow page of them is built; each stream's batch messages are appended to rows.arrow, its
 * schema message kept once. `stopped()` is asked between chunks.
 */
export async function writeArrowEncoding(
  dir: string,
  chunkRows: number,
  rowCount: number,
  buildChunk: (offset: number, limit: number) => Promise<Uint8Array>,
  stopped: () => boolean,
): Promise<void> {
  const rows = await open(join(dir, FILES.arrow), 'w');
  const index: string[] = [record(chunkRows)];
  let schema: Uint8Array | undefined;
  let at = 0;
  try {
    for (let offset = 0; offset < rowCount; offset += chunkRows) {
      if (stopped()) throw new Error('Arrow encoding stopped');
      const stream = await buildChunk(offset, Math.min(chunkRows, rowCount - offset));
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
  for (const name of names) {
    const h = await open(join(dir, name), 'r');
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  }
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
