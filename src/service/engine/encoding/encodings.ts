// When a result's encodings (encodedResult.ts) are written. At completion, as the execution's last
// step (execution/execution.ts calls writeStored), so the first read is a byte range; a very large
// result, one whose encoding failed at completion, or one stored before a restart is encoded in the
// background once the service is quiet: no execution running (the engine's gate, memory/gate.ts) and
// no page query for ENCODE_AFTER_IDLE_MS. Background encodings run one after the other (each uses
// every thread). A reader of a result not encoded yet preempts a running background encoding (it
// would take the same cores and as much memory again); it is scheduled again for when it is quiet.
// An encoding is interrupted and removed when its result is dropped or the engine closes.
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import {
  arrowDirs,
  encodedArrowPage,
  encodedDir,
  encodedPage,
  publishEncodings,
  readEncodedInfo,
  writeArrowEncoding,
  writeEncodings,
  type EncodedArrowPage,
  type EncodedFormat,
  type EncodedPage,
} from './encodedResult.ts';
import { EngineError, type ResultInfo } from '../types.ts';
import { buildArrowPage } from '../pages/arrowPage.ts';
import { planPage, type StoredColumns } from '../pages/pageQuery.ts';
import { storedColumns, type OpenResult, type ResultFiles } from '../results/resultFiles.ts';
import { INTERRUPT_REPEAT_MS, type Connections } from '../connections.ts';
import type { ResourceBounds } from '../memory/resourceBounds.ts';

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
  /** The stored result attached for paging, held until `release()`. */
  acquire(id: string): Promise<{ open: OpenResult; release: () => void }>;
  /** Results smaller than this (result_set_bytes) are not encoded. */
  minBytes: number;
  /** Results from this size on are encoded in two passes, JSON/CSV then Arrow, with a trim between. */
  apartBytes: number;
  /** Rows per pre-encoded Arrow chunk for a result of that many columns. */
  arrowChunkRows(columnCount: number): number;
}

export class Encodings {
  readonly #o: EncodingsOptions;
  readonly #jobs = new Map<string, EncodingJob>();
  #queue: Promise<void> = Promise.resolve();
  /** Results whose encoding failed, or that are too small to encode: their pages stay dynamic. */
  readonly #failed = new Set<string>();
  readonly #info = new Map<string, ResultInfo>();
  /** When a page query or an execution last ended (performance.now()): encodings wait for quiet. */
  #lastActivity = Number.NEGATIVE_INFINITY;

  constructor(options: EncodingsOptions) {
    this.#o = options;
  }

  /** A page query or an execution ended (or starts): background encodings wait for quiet. */
  touch(): void {
    this.#lastActivity = performance.now();
  }

  markFailed(id: string): void {
    this.#failed.add(id);
  }

  /**
   * Writes the encodings of the result stored under `alias` into its temporary encoding directory:
   * JSON, CSV and the index (DuckDB's COPY, on its threads) and the Arrow chunks (built here, on
   * this thread) at the same time, or one after the other with a trim between them for a result
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
    const encodeRows = (): Promise<void> => withConn(async (conn) => writeEncodings(conn, await storedColumns(conn, table, info), info, tmp, stopped));
    const encodeArrow = (): Promise<void> =>
      info.columnNames.length > 0 && info.rowCount > 0
        ? withConn(async (conn) => this.#writeArrow(id, conn, await storedColumns(conn, table, info), info.rowCount, tmp, stopped))
        : Promise.resolve();
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
      this.#info.set(id, info);
    } catch (err) {
      // The result stands; it is encoded again in the background when first read.
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      console.error(`sluice engine: publishing the encoding of result ${id} failed:`, err);
    }
  }

  /**
   * Page [offset, offset + limit) of all columns, unfiltered, from the result's encodings; undefined
   * while the result has none yet (the page query serves it meanwhile).
   */
  async page(id: string, offset: number, limit: number, format: EncodedFormat): Promise<EncodedPage | undefined> {
    const found = await this.#encoded(id);
    if (found === undefined) return undefined;
    return readEncoded(id, () => encodedPage(found.dir, found.info, offset, limit, format));
  }

  /** An Arrow page from the pre-encoded chunks: undefined while not encoded, or when the page is not made of whole chunks. */
  async arrowPage(id: string, offset: number, limit: number): Promise<EncodedArrowPage | undefined> {
    const found = await this.#encoded(id);
    if (found === undefined) return undefined;
    return readEncoded(id, () => encodedArrowPage(found.dir, found.info, offset, limit));
  }

  /** Settles when the result's encoding (if one is scheduled or running) has finished. */
  async settled(id: string): Promise<void> {
    await this.#jobs.get(id)?.done;
  }

  /** The result's encoding directory and info once it is encoded; schedules the encoding of a result stored before a restart. */
  async #encoded(id: string): Promise<{ dir: string; info: ResultInfo } | undefined> {
    const { dir } = encodedDir(this.#o.files.dir, id);
    let info = this.#info.get(id);
    if (info === undefined && !this.#jobs.has(id)) {
      info = await readEncodedInfo(dir);
      if (info !== undefined) this.#info.set(id, info);
      else if (!this.#failed.has(id) && this.#o.files.has(id)) await this.#encodeLater(id);
    }
    return info === undefined ? undefined : { dir, info };
  }

  /** Stored before a restart (or by an older version): encoded now, if it is worth it. */
  async #encodeLater(id: string): Promise<void> {
    const { open, release } = await this.#o.acquire(id);
    release();
    if (open.info.bytes >= this.#o.minBytes) this.schedule(id);
    else this.#failed.add(id);
  }

  schedule(id: string): void {
    if (this.#o.connections.closed || this.#jobs.has(id) || this.#failed.has(id)) return;
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
      job.conn?.interrupt();
      const repeat = setInterval(() => job.conn?.interrupt(), INTERRUPT_REPEAT_MS);
      void job.done.finally(() => clearInterval(repeat));
    }
  }

  /** Forgets the result's encoding, stopping a running one (it holds the result attached) first. */
  async drop(id: string): Promise<void> {
    this.#info.delete(id);
    const job = this.#jobs.get(id);
    if (job !== undefined) {
      job.cancelled = true;
      job.preempted = false;
      if (job.started) {
        job.conn?.interrupt();
        await job.done;
      }
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

  async #encode(id: string, job: EncodingJob): Promise<void> {
    await this.#waitForQuiet(job);
    const stopped = (): boolean => job.cancelled || this.#o.connections.closed;
    if (stopped()) return;
    job.started = true;
    const { dir, tmp } = encodedDir(this.#o.files.dir, id);
    const published = existsSync(dir);
    // Published by a run a reader stopped in its Arrow part: that part is left.
    if (published && (!this.#info.has(id) || existsSync(arrowDirs(dir).dir))) return;
    const { open, release } = await this.#o.acquire(id);
    let conn: DuckDBConnection | undefined;
    try {
      conn = await this.#o.connections.open('files');
      job.conn = conn;
      if (stopped()) return;
      if (!published) {
        await rm(tmp, { recursive: true, force: true });
        await writeEncodings(conn, open.columns, open.info, tmp, stopped);
        if (stopped()) throw new EngineError('canceled', 'encoding stopped');
        await publishEncodings(tmp, dir);
        if (stopped()) return;
        // JSON and CSV pages are byte ranges from here on; the Arrow chunks follow.
        this.#info.set(id, open.info);
      }
      if (open.info.columnNames.length > 0 && open.info.rowCount > 0) await this.#writeArrow(id, conn, open.columns, open.info.rowCount, dir, stopped);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      if (stopped()) return;
      throw err;
    } finally {
      if (conn !== undefined) this.#o.connections.end(conn);
      release();
    }
  }

  /**
   * The Arrow chunks of a published encoding, written under arrow.tmp/ and renamed to arrow/. A
   * failure leaves the JSON and CSV encodings as they are: Arrow pages are then built per request
   * (a value Arrow cannot hold fails only the pages that hold it).
   */
  async #writeArrow(id: string, conn: DuckDBConnection, columns: StoredColumns, rowCount: number, encoded: string, stopped: () => boolean): Promise<void> {
    const { dir, tmp } = arrowDirs(encoded);
    try {
      await rm(tmp, { recursive: true, force: true });
      await mkdir(tmp);
      await writeArrowEncoding(
        tmp,
        this.#o.arrowChunkRows(columns.names.length),
        rowCount,
        (offset, limit) => buildArrowPage(conn, columns, planPage(columns, { offset, limit }, 'json')),
        stopped,
      );
      if (stopped()) throw new EngineError('canceled', 'encoding stopped');
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      if (stopped() || (err instanceof EngineError && err.kind === 'unrepresentable')) return;
      console.error(`sluice engine: Arrow encoding of result ${id} failed (its Arrow pages are built per request):`, err);
    }
  }
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
