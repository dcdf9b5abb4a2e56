// Pre-encoded results. A completed result never changes, so its JSON and CSV page encodings are
// written once, in bulk by DuckDB, and an unfiltered page is then served as a byte range of a
// file: no SQL, no string building, no copy of the rows through JS strings.
//
// Layout, dataDir/results/<id>.enc/ (chosen by measurement, see bench/service.ts):
//   rows.json  every row's JSON object text, each followed by ','
//   rows.csv   every row's CSV line, each followed by '\n'
//   index      one fixed-width record per row, and one more after the last row: three 12-digit
//              hex numbers (where the row starts in rows.json, where in rows.csv, and the
//              result_set_bytes of all rows before it), then '\n'. Row i's record is at i * 37.
//   info.json  the result's ResultInfo; written last
//   arrow/     written after the rest is published (under arrow.tmp/, then renamed):
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

/**
 * Writes the encodings of a stored result into `dir` (which must not exist), in bulk: the rows are
 * rendered once into a temporary table, then copied out and indexed by DuckDB. `conn` runs the
 * statements; interrupting it stops the work (the caller removes `dir`).
 */
export async function writeEncodings(conn: DuckDBConnection, stored: StoredColumns, info: ResultInfo, dir: string): Promise<void> {
  await mkdir(dir, { recursive: false });
  const cols = stored.names.map((_, i) => i);
  const enc = `"enc_${Math.random().toString(36).slice(2)}"`;
  const path = (f: string): string => sqlString(join(dir, f));
  if (cols.length === 0) {
    await writeFile(join(dir, FILES.json), '');
    await writeFile(join(dir, FILES.csv), '');
    await writeFile(join(dir, FILES.index), `${'0'.repeat(3 * HEX)}\n`);
  } else {
    try {
      await conn.run(
        `CREATE TEMP TABLE ${enc} AS SELECT rowid AS rn, ${jsonRowSql(stored, cols)} AS j, ${csvRowSql(stored, cols)} AS c, ${rowBytesSql(cols, stored)}::BIGINT AS b FROM ${stored.table}`,
      );
      await conn.run(`COPY (SELECT j FROM ${enc} ORDER BY rn) TO ${path(FILES.json)} ${rawCopy(',')}`);
      await conn.run(`COPY (SELECT c FROM ${enc} ORDER BY rn) TO ${path(FILES.csv)} ${rawCopy('\n')}`);
      // Each record holds the sums over the rows before it; the extra last record, the totals.
      const before = 'OVER (ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)';
      await conn.run(
        `COPY (SELECT rec FROM (
           SELECT rn, ${hex(`coalesce(sum(strlen(j) + 1) ${before}, 0)`)} || ${hex(`coalesce(sum(strlen(c) + 1) ${before}, 0)`)} || ${hex(`coalesce(sum(b) ${before}, 0)`)} AS rec FROM ${enc}
           UNION ALL
           SELECT (SELECT count(*) FROM ${enc}) AS rn, ${hex(`(SELECT coalesce(sum(strlen(j) + 1), 0) FROM ${enc})`)} || ${hex(`(SELECT coalesce(sum(strlen(c) + 1), 0) FROM ${enc})`)} || ${hex(`(SELECT coalesce(sum(b), 0) FROM ${enc})`)}
         ) ORDER BY rn) TO ${path(FILES.index)} ${rawCopy('\n')}`,
      );
    } finally {
      await conn.run(`DROP TABLE IF EXISTS temp.${enc}`).catch(() => undefined);
    }
  }
  await syncFiles(dir, [FILES.json, FILES.csv, FILES.index]);
  await writeFile(join(dir, FILES.info), JSON.stringify(info));
  await syncFiles(dir, [FILES.info]);
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
