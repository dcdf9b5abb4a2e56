// When a result's encodings (encodedResult.ts, arrowEncoding.ts) are written, by the setting
// engine.encode_results (EncodeMode):
// - on_first_read (the default): a format is encoded when a reader first asks for a page of it,
//   and that reader (and any other of the same format meanwhile: one encoder a format) is served
//   from the files as the encoder writes them (liveEncoding.ts); later reads are byte ranges of
//   the stored encoding. A result read only as Arrow never has its JSON or CSV written. The encoder
//   holds a slot of the page gate (memory/pageSlots.ts) as a page query does.
// - at_completion: every format, as the execution's last step (execution/execution.ts calls
//   writeStored), so the first read of any format is a byte range.
// - when_idle: every format in the background once the service is quiet.
// In the last two, a very large result, one whose encoding failed at completion, or one stored
// before a restart is encoded in the background once the service is quiet: no execution running
// (the engine's gate, memory/gate.ts) and no page query for ENCODE_AFTER_IDLE_MS. Background
// encodings run one after the other (each uses every thread). A reader of a result not encoded
// yet preempts a running background encoding (it would take the same cores and as much memory
// again); it is scheduled again for when it is quiet. Any encoding is interrupted and removed
// when its result is dropped or the engine closes.
import { mkdir, rm } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import {
  encodedDir,
  encodedPage,
  formatDir,
  publishEncodings,
  readEncodedInfo,
  writeRowEncodings,
  type EncodedFormat,
  type EncodedPage,
  type RowEncodingDirs,
  type StoredFormat,
  type WriteProgress,
} from './encodedResult.ts';
import { chunkRange, encodeArrow, encodedArrowPage, type EncodedArrowPage } from './arrowEncoding.ts';
import { LiveEncoding } from './liveEncoding.ts';
import { EngineError, type ResultInfo } from '../types.ts';
import type { StoredColumns } from '../pages/pageQuery.ts';
import { storedColumns, type OpenResult, type ResultFiles } from '../results/resultFiles.ts';
import { INTERRUPT_REPEAT_MS, type Connections } from '../connections.ts';
import type { ResourceBounds } from '../memory/resourceBounds.ts';
import type { Gate } from '../memory/gate.ts';

/** engine.encode_results (see the header). */
export type EncodeMode = 'on_first_read' | 'at_completion' | 'when_idle';

/**
 * An encoding waits until no page of any result was built by a page query for this long: a reader
 * paging through a fresh result (an export) is never slowed, nor its memory doubled, by the encoder.
 */
const ENCODE_AFTER_IDLE_MS = 1_000;

/** The background encoding of one result. */
interface EncodingJob {
  done: Promise<void>;
  started: boolean;
  cancelled: boolean;
  /** Stopped for a reader: scheduled again once the service is quiet. */
  preempted: boolean;
  conn?: DuckDBConnection;
}

export interface EncodingsOptions {
  files: ResultFiles;
  connections: Connections;
  /** The executions running: background encodings wait until none does. */
  bounds: ResourceBounds;
  /** Page queries' slots: an encoder of a first read holds one while it runs. */
  slots: Gate<number>;
  mode: EncodeMode;
  /** The stored result attached for paging, held until `release()`. */
  acquire(id: string): Promise<{ open: OpenResult; release: () => void }>;
  /** Results smaller than this (result_set_bytes) are not encoded. */
  minBytes: number;
  /** Results from this size on are encoded in two passes at completion, JSON/CSV then Arrow, with a trim between. */
  apartBytes: number;
  /** Rows per pre-encoded Arrow chunk for a result of that many columns. */
  arrowChunkRows(columnCount: number): number;
  /** An encoding was written after its result was stored (the stored results grew). */
  onWritten?: () => void;
}

/** Where a page is read from: a stored encoding, or one being written (`live`). */
interface Source {
  dir: string;
  info: ResultInfo;
  live?: LiveEncoding;
}

const key = (id: string, format: StoredFormat): string => `${id}/${format}`;

export class Encodings {
  readonly #o: EncodingsOptions;
  readonly #jobs = new Map<string, EncodingJob>();
  #queue: Promise<void> = Promise.resolve();
  /** Encoders of first reads, by result and format. */
  readonly #live = new Map<string, Promise<LiveEncoding | undefined>>();
  /** Results too small to encode (by id), and formats whose encoding failed (by key): their pages stay dynamic. */
  readonly #failed = new Set<string>();
  /** Formats found stored, by key. */
  readonly #stored = new Map<string, ResultInfo>();
  /** When a page query or an execution last ended (performance.now()): encodings wait for quiet. */
  #lastActivity = Number.NEGATIVE_INFINITY;

  constructor(options: EncodingsOptions) {
    this.#o = options;
  }

  /** A page query or an execution ended (or starts): background encodings wait for quiet. */
  touch(): void {
    this.#lastActivity = performance.now();
  }

  /** Rows of each Arrow chunk of a result of that many columns. */
  chunkRows(columnCount: number): number {
    return this.#o.arrowChunkRows(columnCount);
  }

  markFailed(id: string): void {
    this.#failed.add(id);
  }

  /**
   * Writes every format of the result stored under `alias` into its temporary encoding directory:
   * JSON, CSV and their indexes (DuckDB renders, on its threads) and the Arrow chunks (built here,
   * on this thread) at the same time, or one after the other with a trim between them for a result
   * of `apartBytes` or more (the two passes' buffers added up to the process's peak), each on a
   * connection of its own (in `conns` while it runs, for the execution to interrupt). Returns that
   * directory, or undefined when the JSON/CSV encoding failed (pages are then built per request) or
   * `stopped()`. Arrow failing alone leaves the rest (Arrow pages are then built per request).
   */
  async writeStored(alias: string, id: string, info: ResultInfo, conns: Set<DuckDBConnection>, stopped: () => boolean): Promise<string | undefined> {
    const { tmp } = encodedDir(this.#o.files.dir, id);
    const withConn = async (fn: (conn: DuckDBConnection) => Promise<void>): Promise<void> => {
      const conn = await this.#o.connections.open('files');
      conns.add(conn);
      try {
        await fn(conn);
      } finally {
        conns.delete(conn);
        this.#o.connections.end(conn);
      }
    };
    const table = `${alias}.main.result`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    const dirs = { json: formatDir(tmp, 'json'), csv: formatDir(tmp, 'csv') };
    const encodeRows = (): Promise<void> => withConn(async (conn) => writeRowEncodings(conn, await storedColumns(conn, table, info), info, dirs, stopped));
    const encodeArrow = (): Promise<void> =>
      hasRows(info) ? withConn(async (conn) => this.#writeArrow(id, conn, await storedColumns(conn, table, info), info, formatDir(tmp, 'arrow'), stopped)) : Promise.resolve();
    let rows: PromiseSettledResult<void>;
    let arrow: PromiseSettledResult<void>;
    if (info.bytes < this.#o.apartBytes) [rows, arrow] = await Promise.allSettled([encodeRows(), encodeArrow()]);
    else {
      // A large result's two passes run one after the other, with what the first left in the
      // files instance evicted between them: their buffers never add up.
      [rows] = await Promise.allSettled([encodeRows()]);
      const next = rows.status === 'fulfilled' && !stopped();
      if (next) await this.#o.connections.use('files').trim(1);
      [arrow] = await Promise.allSettled([next ? encodeArrow() : Promise.resolve()]);
    }
    if (rows.status === 'fulfilled' && arrow.status === 'fulfilled' && !stopped()) return tmp;
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    const failed = rows.status === 'rejected' ? rows.reason : arrow.status === 'rejected' ? arrow.reason : undefined;
    if (!stopped()) console.error(`sluice engine: encoding result ${id} failed (its pages are built per request):`, failed);
    return undefined;
  }

  /** Moves the encoding written by writeStored into place, once its result is. */
  async publish(id: string, tmp: string, info: ResultInfo): Promise<void> {
    try {
      await publishEncodings(tmp, encodedDir(this.#o.files.dir, id).dir);
      if (!hasRows(info)) this.#failed.add(key(id, 'arrow'));
    } catch (err) {
      // The result stands; it is encoded again in the background when first read.
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      console.error(`sluice engine: publishing the encoding of result ${id} failed:`, err);
    }
  }

  /**
   * Page [offset, offset + limit) of all columns, unfiltered, from the result's encoding of that
   * format; undefined while it has none (the page query serves it meanwhile). With on_first_read,
   * the first ask starts the encoding and waits for the page to be written (see the header).
   */
  async page(id: string, offset: number, limit: number, format: EncodedFormat): Promise<EncodedPage | undefined> {
    const found = await this.#source(id, format, offset, limit);
    if (found === undefined) return undefined;
    return readEncoded(id, () => encodedPage(found.dir, found.info, offset, limit, format));
  }

  /** An Arrow page from the pre-encoded chunks: undefined while not encoded, or when the page is not made of whole chunks. */
  async arrowPage(id: string, offset: number, limit: number): Promise<EncodedArrowPage | undefined> {
    const found = await this.#source(id, 'arrow', offset, limit);
    if (found === undefined) return undefined;
    return readEncoded(id, () => encodedArrowPage(found.dir, found.info, offset, limit, found.live?.arrowIndex));
  }

  /** Settles when the result's encodings (scheduled or running) have ended. */
  async settled(id: string): Promise<void> {
    // A background encoding stopped for a reader is scheduled again: that one is waited for too.
    for (let job = this.#jobs.get(id); job !== undefined; job = this.#jobs.get(id)) await job.done;
    for (const format of ['json', 'csv', 'arrow'] as const) await (await this.#live.get(key(id, format)))?.done;
  }

  /** The encoding a page is read from: stored, or being written and far enough (see the header). */
  async #source(id: string, format: StoredFormat, offset: number, limit: number): Promise<Source | undefined> {
    const dir = formatDir(encodedDir(this.#o.files.dir, id).dir, format);
    for (let look = 0; look < 2; look++) {
      const info = this.#stored.get(key(id, format)) ?? (await readEncodedInfo(dir));
      if (info !== undefined) {
        this.#stored.set(key(id, format), info);
        return { dir, info };
      }
      if (this.#o.mode !== 'on_first_read') {
        await this.#encodeLater(id, format);
        return undefined;
      }
      const live = await this.#liveFor(id, format);
      if (live === undefined) return undefined;
      const range = pageRange(live, offset, limit);
      if (range === undefined) return undefined;
      const outcome = await live.waitFor(range.from, range.to);
      if (outcome === 'ready') return { dir, info: live.info, live };
      if (outcome === 'far') return undefined;
    }
    return undefined;
  }

  /** The encoder of the format's first read: the running one, or a new one (undefined when the format is not encoded). */
  #liveFor(id: string, format: StoredFormat): Promise<LiveEncoding | undefined> {
    const k = key(id, format);
    let live = this.#live.get(k);
    if (live === undefined) {
      live = this.#startLive(id, format);
      this.#live.set(k, live);
      const forget = (): void => void (this.#live.get(k) === live && this.#live.delete(k));
      void live.then((l) => (l === undefined ? forget() : l.done.finally(forget)), forget);
    }
    return live;
  }

  async #startLive(id: string, format: StoredFormat): Promise<LiveEncoding | undefined> {
    if (this.#o.connections.closed || this.#failed.has(id) || this.#failed.has(key(id, format))) return undefined;
    const { open, release } = await this.#o.acquire(id);
    const info = open.info;
    if (info.bytes < this.#o.minBytes) this.#failed.add(id);
    else if (format === 'arrow' && !hasRows(info)) this.#failed.add(key(id, format));
    if (this.#failed.has(id) || this.#failed.has(key(id, format))) {
      release();
      return undefined;
    }
    const live = new LiveEncoding(format, formatDir(encodedDir(this.#o.files.dir, id).dir, format), info);
    if (format === 'arrow') live.arrowIndex.chunkRows = this.#o.arrowChunkRows(info.columnNames.length);
    live.done = this.#runLive(id, live, open.columns).finally(release);
    return live;
  }

  /** Writes the live encoding's format, holding a page slot; on failure or stop it leaves nothing. */
  async #runLive(id: string, live: LiveEncoding, columns: StoredColumns): Promise<void> {
    const stopped = (): boolean => live.stopped || this.#o.connections.closed;
    const leave = await this.#o.slots.enter(1);
    let conn: DuckDBConnection | undefined;
    try {
      if (stopped()) return;
      conn = await this.#o.connections.open('files');
      live.conn = conn;
      if (stopped()) return;
      await rm(live.dir, { recursive: true, force: true });
      await mkdir(live.dir, { recursive: true });
      if (live.format === 'arrow') await this.#arrowInto(conn, columns, live.info, live.dir, stopped, live);
      else await writeRowEncodings(conn, columns, live.info, { [live.format]: live.dir }, stopped, live);
      if (stopped()) throw new EngineError('canceled', 'encoding stopped');
      this.#stored.set(key(id, live.format), live.info);
      this.#o.onWritten?.();
    } catch (err) {
      await rm(live.dir, { recursive: true, force: true }).catch(() => undefined);
      if (!stopped()) {
        this.#failed.add(key(id, live.format));
        if (!(err instanceof EngineError && err.kind === 'unrepresentable')) console.error(`sluice engine: ${live.format} encoding of result ${id} failed (its pages are built per request):`, err);
      }
    } finally {
      if (conn !== undefined) this.#o.connections.end(conn);
      leave();
      live.end();
    }
  }

  /** Not encoded (stored before a restart, by an older version, or not yet when idle): encoded in the background, if it is worth it. */
  async #encodeLater(id: string, format: StoredFormat): Promise<void> {
    if (this.#jobs.has(id) || this.#failed.has(id) || this.#failed.has(key(id, format)) || !this.#o.files.has(id)) return;
    const { open, release } = await this.#o.acquire(id);
    release();
    if (open.info.bytes >= this.#o.minBytes) this.schedule(id);
    else this.#failed.add(id);
  }

  /** Encodes the result's missing formats in the background (not with on_first_read: its readers do). */
  schedule(id: string): void {
    if (this.#o.mode === 'on_first_read' || this.#o.connections.closed || this.#jobs.has(id) || this.#failed.has(id)) return;
    const job: EncodingJob = { done: Promise.resolve(), started: false, cancelled: false, preempted: false };
    job.done = this.#queue
      .then(() => this.#encode(id, job))
      .catch((err: unknown) => {
        this.#failed.add(id);
        console.error(`sluice engine: encoding result ${id} failed (its pages are built per request):`, err);
      })
      .finally(() => {
        if (this.#jobs.get(id) === job) this.#jobs.delete(id);
        if (job.preempted) this.schedule(id);
      });
    this.#queue = job.done;
    this.#jobs.set(id, job);
  }

  /** A reader is building a page per request: a running background encoding stops for it (see the header). */
  preempt(): void {
    for (const job of this.#jobs.values()) {
      if (!job.started || job.cancelled) continue;
      job.cancelled = true;
      job.preempted = true;
      interruptUntil(() => job.conn, job.done);
    }
  }

  /** Forgets the result's encodings, stopping running ones (they hold the result attached) first. */
  async drop(id: string): Promise<void> {
    const job = this.#jobs.get(id);
    if (job !== undefined) {
      job.cancelled = true;
      job.preempted = false;
      if (job.started) {
        job.conn?.interrupt();
        await job.done;
      }
    }
    for (const format of ['json', 'csv', 'arrow'] as const) {
      const live = await this.#live.get(key(id, format))?.catch(() => undefined);
      if (live !== undefined) {
        live.stop();
        interruptUntil(() => live.conn, live.done);
        await live.done;
      }
      this.#stored.delete(key(id, format));
      this.#failed.delete(key(id, format));
    }
    this.#failed.delete(id);
  }

  async #waitForQuiet(job: EncodingJob): Promise<void> {
    const closed = (): boolean => job.cancelled || this.#o.connections.closed;
    while (!closed()) {
      if (this.#o.bounds.running > 0) await this.#o.bounds.idle();
      else if (performance.now() - this.#lastActivity < ENCODE_AFTER_IDLE_MS) await new Promise((wake) => setTimeout(wake, ENCODE_AFTER_IDLE_MS).unref());
      else break;
    }
  }

  /** The background encoding: the formats not stored yet, JSON and CSV in one pass, then Arrow. */
  async #encode(id: string, job: EncodingJob): Promise<void> {
    await this.#waitForQuiet(job);
    const stopped = (): boolean => job.cancelled || this.#o.connections.closed;
    if (stopped()) return;
    job.started = true;
    const enc = encodedDir(this.#o.files.dir, id).dir;
    const missing = async (f: StoredFormat): Promise<string | undefined> => ((await readEncodedInfo(formatDir(enc, f))) === undefined ? formatDir(enc, f) : undefined);
    const dirs: RowEncodingDirs = {};
    const [json, csv, arrow] = [await missing('json'), await missing('csv'), await missing('arrow')];
    if (json !== undefined) dirs.json = json;
    if (csv !== undefined) dirs.csv = csv;
    if (json === undefined && csv === undefined && arrow === undefined) return;
    const { open, release } = await this.#o.acquire(id);
    let conn: DuckDBConnection | undefined;
    try {
      conn = await this.#o.connections.open('files');
      job.conn = conn;
      if (stopped()) return;
      if (json !== undefined || csv !== undefined) {
        for (const d of [json, csv]) if (d !== undefined) await rm(d, { recursive: true, force: true });
        await writeRowEncodings(conn, open.columns, open.info, dirs, stopped);
        if (stopped()) throw new EngineError('canceled', 'encoding stopped');
        this.#o.onWritten?.();
      }
      if (arrow !== undefined && hasRows(open.info)) await this.#writeArrow(id, conn, open.columns, open.info, arrow, stopped);
      if (stopped()) return;
      if ((await missing('arrow')) !== undefined) this.#failed.add(key(id, 'arrow'));
      else this.#o.onWritten?.();
    } catch (err) {
      for (const d of [json, csv]) if (d !== undefined) await rm(d, { recursive: true, force: true }).catch(() => undefined);
      if (stopped()) return;
      throw err;
    } finally {
      if (conn !== undefined) this.#o.connections.end(conn);
      release();
    }
  }

  /**
   * The Arrow encoding into `dir` (a format directory). A failure leaves the JSON and CSV encodings
   * as they are and nothing of Arrow: Arrow pages are then built per request (a value Arrow cannot
   * hold fails only the pages that hold it).
   */
  async #writeArrow(id: string, conn: DuckDBConnection, columns: StoredColumns, info: ResultInfo, dir: string, stopped: () => boolean): Promise<void> {
    try {
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await this.#arrowInto(conn, columns, info, dir, stopped);
      if (stopped()) throw new EngineError('canceled', 'encoding stopped');
    } catch (err) {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      if (stopped() || (err instanceof EngineError && err.kind === 'unrepresentable')) return;
      console.error(`sluice engine: Arrow encoding of result ${id} failed (its Arrow pages are built per request):`, err);
    }
  }

  async #arrowInto(conn: DuckDBConnection, columns: StoredColumns, info: ResultInfo, dir: string, stopped: () => boolean, live?: LiveEncoding): Promise<void> {
    const chunkRows = this.#o.arrowChunkRows(columns.names.length);
    await encodeArrow(conn, columns, info, dir, chunkRows, stopped, live === undefined ? undefined : { index: live.arrowIndex, progress: live });
  }
}

/** Whether the result has an Arrow encoding at all (a result without rows or columns has not). */
function hasRows(info: ResultInfo): boolean {
  return info.columnNames.length > 0 && info.rowCount > 0;
}

/** The rows a page needs written: for Arrow only a page of whole chunks (others are built per request). */
function pageRange(live: LiveEncoding, offset: number, limit: number): { from: number; to: number } | undefined {
  if (live.format === 'arrow') return chunkRange(live.arrowIndex.chunkRows, live.info.rowCount, offset, limit);
  const from = Math.min(Math.max(0, Math.trunc(offset)), live.info.rowCount);
  return { from, to: Math.min(live.info.rowCount, from + Math.max(0, Math.trunc(limit))) };
}

/** Interrupts the connection again and again until `done` (an interrupt between statements is lost). */
function interruptUntil(conn: () => DuckDBConnection | undefined, done: Promise<void>): void {
  conn()?.interrupt();
  const repeat = setInterval(() => conn()?.interrupt(), INTERRUPT_REPEAT_MS);
  void done.finally(() => clearInterval(repeat));
}

async function readEncoded<T>(id: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    // Dropped between the look-up and the read: the result is gone.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new EngineError('not_found', `no stored result ${id}`);
    throw err;
  }
}
