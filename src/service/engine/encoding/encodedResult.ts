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
import type { DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import { chunkFetched } from '../memory/chunkGarbage.ts';
import { headerBytes, renderedRowsSql, type StoredColumns } from '../pages/pageQuery.ts';
import type { ResultInfo } from '../types.ts';
import { INDEX_RECORD_BYTES, parseRecord, type IndexRecord } from './indexRecords.ts';
import { RenderedSplit, RowFiles } from './rowSplit.ts';

export { INDEX_RECORD_BYTES, parseRecord, writeRecord } from './indexRecords.ts';

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
 * Told by the writers how far they are, so that readers can read what is written: `hungry(n)`
 * says a reader waits for rows not on disk yet that are all among the first n (written or in the
 * buffers: the buffers are then written out at once; a reader waiting for rows not rendered yet
 * gains nothing from a write of part of them, and each write holds the encoder up), `advance(n)`
 * that the first n rows are readable.
 */
export interface WriteProgress {
  hungry(rows: number): boolean;
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
 * number, JSON text, CSV line and result_set_bytes; a format not asked for is not rendered; each
 * text with its end, ',' or '\n'), and the rows are copied from its result chunks (2,048 rows each,
 * bounded by DuckDB's streaming buffer; the next one is fetched while one is split, two at most held
 * at once) straight into the rows files and their indexes, a run of adjacent rows at a time
 * (rowSplit.ts), through 4 MB buffers (written out sooner when
 * `progress` has a reader waiting). Memory stays bounded whatever the result's size:
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
  const json = dirs.json === undefined ? undefined : await RowFiles.open(dirs.json, FILES.json, FILES.index);
  const csv = dirs.csv === undefined ? undefined : await RowFiles.open(dirs.csv, FILES.csv, FILES.index).catch(async (err: unknown) => {
    await json?.close();
    throw err;
  });
  const outs = [json, csv].filter((o) => o !== undefined);
  try {
    const split = new RenderedSplit(outs);
    await split.start();
    if (cols.length > 0 && info.rowCount > 0) {
      // Each row's text with its end, as it is stored (rowSplit.ts copies whole runs of rows).
      const texts = [json && 'j', csv && 'c'].filter((t) => t !== undefined);
      const rows = await conn.stream(`SELECT rn, b, ${texts.join(', ')} FROM (${renderedRowsSql(stored, cols, 'true', true)})`);
      const fetch = (): Promise<DuckDBDataChunk | null> => {
        const next = rows.fetchChunk();
        // Read or not (a stop or a failed split ends the loop first), a failed fetch is not an unhandled rejection.
        next.catch(() => undefined);
        return next;
      };
      let next: Promise<DuckDBDataChunk | null> | undefined = fetch();
      try {
        while (next !== undefined) {
          if (stopped()) throw new Error('encoding stopped');
          const chunk = await next;
          next = undefined;
          if (!chunk || chunk.rowCount === 0) break;
          chunkFetched();
          // DuckDB renders the next chunk (on a thread of its own) while this one is split here.
          next = fetch();
          await split.chunk(chunk);
          if (progress?.hungry(split.rows)) progress.advance(await split.flush());
        }
      } finally {
        // The connection runs one query at a time: the fetch ahead ends before it is handed back.
        await next?.catch(() => undefined);
      }
      // An interrupted stream ends early, as if it were whole: the count check below would say so too.
      if (stopped()) throw new Error('encoding stopped');
    }
    await split.finish(info.rowCount);
    progress?.advance(info.rowCount);
    // Durable before info.json says the directory is whole; the files flushed at once.
    await Promise.all(outs.flatMap((o) => o.sync()));
  } finally {
    for (const o of outs) await o.close();
  }
  for (const d of targets) await writeEncodedInfo(d, info);
}

/**
 * Writes a format directory's info.json, which says the directory is whole: durable, under a
 * temporary name renamed into place, so that a reader looking for it meanwhile (a page asked
 * while the encoder of its first read ends) finds no file or the whole file, never an empty or
 * half-written one. A temporary file a crash leaves goes with its directory, which has no
 * info.json (results/resultFiles.ts).
 */
export async function writeEncodedInfo(dir: string, info: ResultInfo): Promise<void> {
  const temporary = `${FILES.info}.tmp`;
  await writeFile(join(dir, temporary), JSON.stringify(info));
  await syncFiles(dir, [temporary]);
  await rename(join(dir, temporary), join(dir, FILES.info));
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
async function records(dir: string, a: number, b: number): Promise<[IndexRecord, IndexRecord]> {
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

