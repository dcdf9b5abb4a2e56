// The SqlEngine over two embedded DuckDB instances (see "Two instances" below).
//
// Storage: each result is its own DuckDB file dataDir/results/<id>.duckdb holding `result`
// (columns c0..cN-1, so any column names work, duplicates included) and `meta` (ResultInfo as
// JSON). The user's last statement is streamed into that file (see "Two instances"): no row
// becomes a JS value, the query's ORDER BY survives (rows are appended in order), and rowid is
// the row's ordinal, so `rowid BETWEEN a AND b` reads only the row groups of a page. The file is written under a .tmp name and renamed when complete, so a
// stored result is either whole or absent; dropping it is deleting the file.
//
// Sandbox: every statement of user SQL is judged before DuckDB binds it (sandbox.ts,
// accessPolicy.ts), under an engine-wide lockdown (lockdown.ts). A denied statement fails the
// execution with kind 'semantic' before any statement of it ran.
//
// Two instances, so that DuckDB itself keeps users' SQL away from the service's files: DuckDB's
// file access settings are per instance and cannot change once external access is off, so the
// instance that runs users' SQL (`#instance`: the catalogs, the sandbox, the teams' tables) is
// locked with no readable directory, and a second, in-memory instance (`#files`) is the only one
// that opens the results directory: it writes result files, attaches them for pages, encodes
// them and reads upload files. It never runs users' SQL. Rows cross between the two as native
// chunks (copyRows.ts): the user's last statement is streamed into its result file; an upload or
// a stored result is streamed into a table of the `service` catalog.
//
// Cancel: DuckDB forgets an interrupt that arrives while no statement of the connection runs
// (the flag is cleared as the next statement starts), so a stop is checked before each statement
// and the connection is interrupted again every few milliseconds until execute settles.
//
// Pre-encoded pages (encodedResult.ts): a result's JSON, CSV and Arrow encodings are written as
// the last step of its execution, before it completes and is published, so an unfiltered page is
// a byte range of a file from its first read on, and no encoder ever runs beside a reader. A stop
// during the encoding fails the execution like a stop during the query (nothing published). A
// result with no encoding (an encoding failed; stored by an older version or before a crash) is
// served by the page query and encoded in the background once the service is quiet. An encoding
// is interrupted and removed when its result is dropped or the engine closes.
//
// Stored results are attached for paging under an LRU of at most MAX_ATTACHED, each detached
// once unread for ATTACHED_IDLE_MS (attachedResults.ts).
//
// Threads: DuckDB's `threads` setting is per instance ("cannot be set locally"), so
// ExecuteOptions.threads cannot give one execution more threads than another; the instance
// runs with defaultThreads and the option is accepted and ignored (the files instance has as
// many, idle unless results are written or read). A second instance for the large tier would need its own copy of every database (a DuckDB file is opened read-write by
// one instance only), and the task scheduler already shares the instance's threads among the
// queries running at once, so a lone large query gets all of them anyway.
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import {
  encodedArrowPage,
  encodedDir,
  encodedPage,
  ENCODED_SUFFIX,
  ENCODING_SUFFIX,
  publishEncodings,
  readEncodedInfo,
  arrowDirs,
  writeArrowEncoding,
  writeEncodings,
  type EncodedArrowPage,
  type EncodedFormat,
  type EncodedPage,
} from './encodedResult.ts';
import { join } from 'node:path';
import { StatementType, type DuckDBConnection, type DuckDBDataChunk, type DuckDBInstance, type DuckDBPreparedStatement, type DuckDBType } from '@duckdb/node-api';
import { copyRows, type ChunkSource } from './copyRows.ts';
import {
  EngineError,
  type ArrowPage,
  type CsvPage,
  type EngineErrorOptions,
  type ExecuteOptions,
  type Page,
  type PageRequest,
  type ResultInfo,
  type ServiceTables,
  type SqlEngine,
} from './types.ts';
import { DuckDbServiceTables, SCRATCH_PREFIX } from './serviceTables.ts';
import { AttachedResults, type Lease } from './attachedResults.ts';
import { splitStatements, type SqlStatement } from './splitStatements.ts';
import { toEngineError, type SqlOrigin } from './duckdbError.ts';
import { sqlIdent, sqlString } from '../sql.ts';
import { uniqueColumnNames } from './columnNames.ts';
import { protocolTypeName } from './typeNames.ts';
import { headerBytes, planPage, rowBytesSql, type StoredColumns } from './pageQuery.ts';
import { Sandbox } from './sandbox.ts';
import { buildArrowPage } from './arrowPage.ts';
import { hideUnreadableHints, type AccessContext } from './accessPolicy.ts';
import { lineColumnAt } from './sqlPosition.ts';
import { StorageQuota } from './storageQuota.ts';
import { TeamTableSizes } from './teamStorage.ts';
import { boundsError, ResourceBounds, type EngineCeilings } from './resourceBounds.ts';
import { PageSlots, pageSlotCount } from './pageSlots.ts';
import { InstanceUse } from './memoryTrim.ts';

const RESULT_ID = /^[A-Za-z0-9_-]{1,100}$/;
const TEAM_NAME = /^[A-Za-z0-9_-]{1,100}$/;
/** Stored results kept attached for paging; the least recently used idle ones are detached. */
const MAX_ATTACHED = 32;
/**
 * A stored result nobody has read for this long is detached (its file closed): a client pages
 * through a result with requests milliseconds apart, and attaching again costs milliseconds.
 */
const ATTACHED_IDLE_MS = 5_000;
/**
 * Results smaller than this (result_set_bytes) are not pre-encoded: their page query costs a few
 * milliseconds, less than writing, syncing and opening the files would.
 */
export const DEFAULT_ENCODE_MIN_BYTES = 64 * 1024;
/** The protocol's default page size (32,000 rows, at most 250,000 values). */
const defaultArrowChunkRows = (columnCount: number): number => Math.min(32_000, Math.max(1, Math.floor(250_000 / Math.max(1, columnCount))));
/** How often a stopped execution's connection is interrupted again (see the header). */
const INTERRUPT_REPEAT_MS = 5;
/**
 * An encoding waits until no page of any result was built by a page query for this long: a reader
 * paging through a fresh result (an export) is never slowed, nor its memory doubled, by the encoder.
 */
const ENCODE_AFTER_IDLE_MS = 1_000;
/** An instance with no connection open for this long gives its idle memory back (memoryTrim.ts). */
const TRIM_AFTER_IDLE_MS = 1_000;
/**
 * Results larger than this (result_set_bytes), or of more rows, are encoded in the background
 * when idle, even with encoding at completion: 100M rows of one BIGINT (800 MB) took over 30
 * minutes to encode on a loaded machine (the execution's default timeout), 37 bytes of index a row.
 */
export const ENCODE_AT_COMPLETION_MAX_BYTES = 1024 ** 3;
export const ENCODE_AT_COMPLETION_MAX_ROWS = 10_000_000;
/** Results from this size (result_set_bytes) on are encoded after a trim (see execute). */
const TRIM_BEFORE_ENCODING_BYTES = 16 * 1024 * 1024;
/**
 * Results from this size (result_set_bytes) on are encoded in two passes, JSON/CSV then Arrow,
 * with a trim between them (see #encodeStored); smaller ones in both at once.
 */
const ENCODE_APART_BYTES = 64 * 1024 * 1024;

interface OpenResult {
  alias: string;
  info: ResultInfo;
  columns: StoredColumns;
}

/** The background encoding of one result (see the header). */
interface EncodingJob {
  done: Promise<void>;
  started: boolean;
  cancelled: boolean;
  /** Stopped for a reader: scheduled again once the service is quiet. */
  preempted: boolean;
  conn?: DuckDBConnection;
}

function checkResultId(id: string): void {
  if (!RESULT_ID.test(id)) {
    throw new EngineError('bad_request', `invalid result id "${id}": use 1-100 letters, digits, '_' or '-'`);
  }
}

function stopError(why: 'canceled' | 'timeout', timeoutMs?: number): EngineError {
  return why === 'canceled'
    ? new EngineError('canceled', 'Query was canceled')
    : new EngineError('timeout', `Query exceeded the execution timeout of ${timeoutMs} ms`);
}

function originOf(sql: string, st: SqlStatement, ran: string, prefixLength: number): SqlOrigin {
  return { sql, statementStart: st.start, ran, prefixLength, statementLength: st.text.length };
}

/** Runs a statement that is not a query and keeps its rows (a count, a plan: few) in memory. */
async function runHeld(prepared: DuckDBPreparedStatement, sql: string, st: SqlStatement): Promise<DuckDBDataChunk[]> {
  try {
    const result = await prepared.run();
    const chunks: DuckDBDataChunk[] = [];
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return chunks;
      chunks.push(chunk);
    }
  } catch (err) {
    throw toEngineError(err, originOf(sql, st, st.text, 0));
  }
}

/** Extra statements are the user's own (e.g. CREATE TABLE then SELECT); run them in order. */
async function runStatement(conn: DuckDBConnection, sql: string, st: SqlStatement): Promise<void> {
  try {
    await conn.run(st.text);
  } catch (err) {
    throw toEngineError(err, originOf(sql, st, st.text, 0));
  }
}

export class DuckDbEngine implements SqlEngine {
  /** Runs users' SQL: no directory is readable to it (lockdown.ts). */
  readonly #instance: DuckDBInstance;
  /** Opens the results directory; runs no user SQL (see the header). */
  readonly #files: DuckDBInstance;
  readonly #resultsDir: string;
  /** The file of the `service` catalog (index.ts), watched while SQL writes a team's schema. */
  readonly #serviceDatabase: string;
  readonly #attached: AttachedResults<OpenResult>;
  /** Connections of user SQL (interrupted by close) and of trusted callers (waited for). */
  readonly #running = new Set<DuckDBConnection>();
  readonly #trusted = new Set<DuckDBConnection>();
  #starting = 0;
  readonly #schemas = new Map<string, Promise<void>>();
  #closed = false;
  /** Aborted when the engine closes: executions waiting for memory room stop waiting. */
  readonly #closeSignal = new AbortController();
  #closing: Promise<void> | undefined;
  readonly #encodings = new Map<string, EncodingJob>();
  /** Encodings run one after the other: each is a bulk job that uses every thread. */
  #encodeQueue: Promise<void> = Promise.resolve();
  /** Results whose encoding failed, or that are too small to encode: their pages stay dynamic. */
  readonly #encodeFailed = new Set<string>();
  readonly #encodedInfo = new Map<string, ResultInfo>();
  /** Executions in progress: encodings wait for none to be running (they would compete for every thread). */
  #executing = 0;
  #idleWaiters: Array<() => void> = [];
  /** When a page query or an execution last ended (performance.now()): encodings wait for quiet. */
  #lastActivity = Number.NEGATIVE_INFINITY;

  readonly #systemViews: ReadonlySet<string>;
  /** Sets the instance's memory and spill limits to the executions running (resourceBounds.ts). */
  readonly #bounds: ResourceBounds | undefined;
  /** Every connection of each instance is opened and closed through these (memoryTrim.ts). */
  readonly #userUse: InstanceUse;
  readonly #filesUse: InstanceUse;
  readonly #useOf = new Map<DuckDBConnection, InstanceUse>();
  /** Page queries running at once on the files instance (pageSlots.ts); each holds a release. */
  readonly #pageSlots: PageSlots;
  readonly #pageReleases = new Map<DuckDBConnection, () => void>();
  readonly #trimBeforeEncodingBytes: number;
  readonly #encodeApartBytes: number;
  readonly #encodeAtCompletionMax: { bytes: number; rows: number };

  /** `systemViews`: DuckDB's built-in catalog views, which user SQL may not read. */
  readonly #encodeMinBytes: number;
  /** Encodings are written as an execution's last step (else in the background when idle). */
  readonly #encodeAtCompletion: boolean;

  readonly tables: ServiceTables;
  /** The bytes of each team's own tables, kept between the executions that change them. */
  readonly #sizes = new TeamTableSizes();

  /** Rows per pre-encoded Arrow chunk for a result of that many columns (the default page size). */
  readonly #arrowChunkRows: (columnCount: number) => number;

  constructor(
    instance: DuckDBInstance,
    files: DuckDBInstance,
    dataDir: string,
    systemViews: ReadonlySet<string> = new Set(),
    encodeMinBytes = DEFAULT_ENCODE_MIN_BYTES,
    arrowChunkRows: (columnCount: number) => number = defaultArrowChunkRows,
    ceilings?: EngineCeilings,
    encodeResults: 'at_completion' | 'when_idle' = 'at_completion',
  ) {
    this.#instance = instance;
    this.#encodeAtCompletion = encodeResults === 'at_completion';
    this.#files = files;
    if (ceilings !== undefined) {
      this.#bounds = new ResourceBounds(ceilings, (stmt) => this.#withTrusted(async (conn) => void (await conn.run(stmt))));
    }
    const bounds = this.#bounds;
    const idleMs = ceilings?.trim?.afterIdleMs ?? TRIM_AFTER_IDLE_MS;
    this.#trimBeforeEncodingBytes = ceilings?.trim?.beforeEncodingBytes ?? TRIM_BEFORE_ENCODING_BYTES;
    this.#encodeApartBytes = ceilings?.trim?.encodeApartBytes ?? ENCODE_APART_BYTES;
    this.#encodeAtCompletionMax = {
      bytes: ceilings?.encodeAtCompletionMax?.bytes ?? ENCODE_AT_COMPLETION_MAX_BYTES,
      rows: ceilings?.encodeAtCompletionMax?.rows ?? ENCODE_AT_COMPLETION_MAX_ROWS,
    };
    this.#userUse = new InstanceUse(instance, bounds && (() => bounds.memoryLimit), idleMs);
    const filesLimit = ceilings?.filesMemoryLimit;
    this.#filesUse = new InstanceUse(files, filesLimit === undefined ? undefined : () => filesLimit, idleMs);
    this.#pageSlots = new PageSlots(pageSlotCount(filesLimit));
    this.#arrowChunkRows = arrowChunkRows;
    this.#attached = new AttachedResults<OpenResult>({
      max: MAX_ATTACHED,
      idleMs: ATTACHED_IDLE_MS,
      attach: (id) => this.#attach(id),
      detach: (open) =>
        this.#withFiles(async (conn) => {
          await conn.run(`DETACH DATABASE IF EXISTS ${open.alias}`);
        }),
      closed: () => this.#closed,
      onDetachError: (id, err) => console.error(`sluice engine: detaching result ${id}:`, err),
    });
    this.tables = new DuckDbServiceTables({
      withConnection: (fn) => this.#withTrusted(fn),
      withFiles: (fn) => this.#withFiles(fn),
      tableSizes: this.#sizes,
      resultPath: (id) => {
        checkResultId(id);
        return this.#path(id);
      },
      scratchPath: (name) => this.#scratchPath(name),
    });
    this.#encodeMinBytes = encodeMinBytes;
    this.#resultsDir = join(dataDir, 'results');
    this.#serviceDatabase = join(dataDir, 'service.duckdb');
    this.#systemViews = systemViews;
  }

  /** Refuses the user's SQL before any of it runs when one statement is not allowed. */
  async #checkAccess(
    conn: DuckDBConnection,
    sql: string,
    statements: SqlStatement[],
    opts: ExecuteOptions,
  ): Promise<{ ctx: AccessContext; writesTeamSchema: boolean; changesTeamTables: boolean }> {
    const db = await conn.runAndReadAll(
      "SELECT current_database() AS db, list(lower(schema_name)) AS schemas FROM duckdb_schemas() WHERE database_name = current_database() AND schema_name NOT IN ('information_schema', 'pg_catalog')",
    );
    const row = db.getRowsJson()[0] ?? [];
    const schemas = Array.isArray(row[1]) ? row[1].map(String) : [];
    const ctx: AccessContext = {
      mainCatalog: String(row[0]).toLowerCase(),
      readableSchemas: new Set(schemas),
      systemViews: this.#systemViews,
    };
    if (opts.team !== undefined) ctx.team = opts.team;
    if (opts.canRead !== undefined) ctx.canRead = opts.canRead;
    const sandbox = new Sandbox(conn, ctx);
    for (const st of statements) {
      const denial = await sandbox.check(st.text);
      if (denial) {
        const { line, column } = lineColumnAt(sql, st.start + denial.offset);
        throw new EngineError('semantic', `line ${line}:${column}: ${denial.message}`, { line, column });
      }
    }
    return { ctx, writesTeamSchema: sandbox.writesTeamSchema, changesTeamTables: sandbox.changesTeamTables };
  }

  #path(id: string): string {
    return join(this.#resultsDir, `${id}.duckdb`);
  }

  #checkOpen(): void {
    if (this.#closed) throw new EngineError('internal', 'engine is closed');
  }

  async execute(sql: string, opts: ExecuteOptions): Promise<ResultInfo> {
    this.#checkOpen();
    checkResultId(opts.resultId);
    if (opts.team !== undefined && !TEAM_NAME.test(opts.team)) {
      throw new EngineError('bad_request', `invalid team name "${opts.team}"`);
    }
    if (existsSync(this.#path(opts.resultId))) {
      throw new EngineError('bad_request', `result ${opts.resultId} already exists`);
    }
    const statements = splitStatements(sql);
    const last = statements.at(-1);
    if (last === undefined) throw new EngineError('syntax', 'line 1:1: the SQL text holds no statement', { line: 1, column: 1 });

    const conn = await this.#connect();
    this.#running.add(conn);
    this.#executing += 1;
    /** The connection of the files instance writing the result, once it is opened. */
    let files: DuckDBConnection | undefined;
    let stop: 'canceled' | 'timeout' | undefined;
    let repeat: NodeJS.Timeout | undefined;
    /** Ends a wait for memory room (resourceBounds.ts) on a stop or when the engine closes. */
    const stopWaiting = new AbortController();
    /** The connections writing the result's encodings, while they do. */
    const encodeConns = new Set<DuckDBConnection>();
    const interruptBoth = (): void => {
      conn.interrupt();
      files?.interrupt();
      for (const c of encodeConns) c.interrupt();
    };
    const interrupt = (why: 'canceled' | 'timeout'): void => {
      if (stop) return;
      stop = why;
      stopWaiting.abort(stopError(why, opts.timeoutMs));
      interruptBoth();
      // The interrupt above is lost when it lands between two statements: keep interrupting.
      repeat = setInterval(interruptBoth, INTERRUPT_REPEAT_MS);
    };
    const stopRepeating = (): void => {
      if (repeat !== undefined) clearInterval(repeat);
      repeat = undefined;
    };
    const onAbort = (): void => interrupt('canceled');
    opts.signal.addEventListener('abort', onAbort, { once: true });
    if (opts.signal.aborted) stop = 'canceled';
    const timer = opts.timeoutMs !== undefined ? setTimeout(() => interrupt('timeout'), opts.timeoutMs) : undefined;
    const check = (): void => {
      if (stop) throw stopError(stop, opts.timeoutMs);
      if (this.#closed) throw new EngineError('canceled', 'Query was canceled: the service is stopping');
    };

    const tmpPath = join(this.#resultsDir, `${opts.resultId}.tmp.duckdb`);
    const catalog = `w_${opts.resultId}`;
    const alias = sqlIdent(catalog);
    let attached = false;
    let access: AccessContext | undefined;
    let quota: StorageQuota | undefined;
    let leaveBounds: (() => Promise<void>) | undefined;
    /** Set while the SQL may change the team's tables: ends with their committed size, if measured. */
    let endWrite: ((committedBytes?: number) => void) | undefined;
    let committedBytes: number | undefined;
    try {
      check();
      if (this.#bounds !== undefined && opts.bounds !== undefined) {
        leaveBounds = await this.#bounds.enter(opts.bounds, AbortSignal.any([stopWaiting.signal, this.#closeSignal.signal]));
      }
      check();
      if (opts.team !== undefined) await this.#teamSchema(opts.team);
      check();
      const checked = await this.#checkAccess(conn, sql, statements, opts);
      access = checked.ctx;
      if (checked.changesTeamTables && opts.team !== undefined) endWrite = this.#sizes.beginWrite(opts.team);
      // SQL that stores rows in the team's schema runs in one transaction, kept only if the
      // team's storage stays within its quota (storageQuota.ts).
      if (checked.writesTeamSchema && opts.team !== undefined && opts.storageQuota !== undefined) {
        quota = await StorageQuota.begin(conn, opts.team, opts.storageQuota, this.#serviceDatabase);
      }
      for (const st of statements.slice(0, -1)) {
        check();
        await runStatement(conn, sql, st);
      }
      check();
      let prepared: DuckDBPreparedStatement;
      try {
        prepared = await conn.prepare(last.text);
      } catch (err) {
        throw toEngineError(err, originOf(sql, last, last.text, 0));
      }
      check();
      // A last statement that writes runs inside the transaction; its few rows (a count, a
      // plan) are held until the result file can be written, after the commit.
      let held: DuckDBDataChunk[] | undefined;
      if (quota !== undefined) {
        if (prepared.statementType !== StatementType.SELECT) held = await runHeld(prepared, sql, last);
        check();
        committedBytes = await quota.settle();
        quota = undefined;
      }
      check();
      await rm(tmpPath, { force: true });
      await rm(`${tmpPath}.wal`, { force: true });
      check();
      files = await this.#connect(this.#files);
      this.#running.add(files);
      check();
      await files.run(`ATTACH ${sqlString(tmpPath)} AS ${alias}`);
      attached = true;
      check();
      const columnNames = await this.#store(files, sql, last, prepared, catalog, held);
      check();
      const info = await this.#finish(files, alias, columnNames, opts.maxResultBytes);
      check();
      await this.#checkpoint(files, alias, tmpPath);
      // Encoded before it completes: the first read of a result is served from files, as every
      // later one (nothing competes with it), and no encoder runs beside the readers.
      const encode = info.bytes >= this.#encodeMinBytes;
      // A very large result is encoded later, when idle: its encoding would take longer than
      // reading it once, and would count toward its execution's timeout.
      const max = this.#encodeAtCompletionMax;
      const atCompletion = encode && this.#encodeAtCompletion && info.bytes <= max.bytes && info.rowCount <= max.rows;
      if (atCompletion && info.bytes >= this.#trimBeforeEncodingBytes) {
        // What the query read and wrote is evicted before the encoding reads the result back: the
        // encoder's memory comes instead of it, not on top (only when nothing else runs).
        await this.#userUse.trim(1);
        await this.#filesUse.trim(1);
      }
      const encoding =
        atCompletion
          ? await this.#encodeStored(alias, opts.resultId, info, encodeConns, () => stop !== undefined || this.#closed)
          : undefined;
      check();
      await files.run(`DETACH ${alias}`);
      attached = false;
      if (existsSync(`${tmpPath}.wal`)) throw new EngineError('internal', `result ${opts.resultId}: its write-ahead log was not checkpointed`);
      await rename(tmpPath, this.#path(opts.resultId));
      if (encoding !== undefined) await this.#publishEncoding(opts.resultId, encoding, info);
      // Failed at completion: its pages are built per request (not retried in the background).
      else if (atCompletion) this.#encodeFailed.add(opts.resultId);
      else if (encode) this.#scheduleEncoding(opts.resultId);
      return info;
    } catch (err) {
      // Cleanup statements must not be interrupted (a failed DETACH would leave the file attached).
      stopRepeating();
      const overflow = quota?.overflowError();
      if (quota !== undefined) await quota.abandon();
      if (attached && files !== undefined) await this.#detachRetrying(files, alias);
      await rm(tmpPath, { force: true }).catch(() => undefined);
      await rm(encodedDir(this.#resultsDir, opts.resultId).tmp, { recursive: true, force: true }).catch(() => undefined);
      await rm(`${tmpPath}.wal`, { force: true }).catch(() => undefined);
      if (overflow !== undefined) throw overflow;
      if (stop) throw stopError(stop, opts.timeoutMs);
      const mapped = boundsError(toEngineError(err), opts.bounds);
      throw access === undefined ? mapped : withoutHiddenHints(mapped, access);
    } finally {
      stopRepeating();
      endWrite?.(committedBytes);
      await leaveBounds?.().catch(() => undefined);
      if (timer) clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      this.#running.delete(conn);
      this.#disconnect(conn);
      if (files !== undefined) {
        this.#running.delete(files);
        this.#disconnect(files);
      }
      this.#executing -= 1;
      this.#lastActivity = performance.now();
      if (this.#executing === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  /**
   * Writes the encodings of the result stored under `alias` into its temporary encoding directory:
   * JSON, CSV and the index (DuckDB's COPY, on its threads) and the Arrow chunks (built here, on
   * this thread) at the same time, or one after the other with a trim between them for a result
   * of ENCODE_APART_BYTES or more (the two passes' buffers added up to the process's peak), each
   * on a connection of its own (in `conns` while it runs; none
   * of the user's session settings apply). Returns that directory, or undefined when the JSON/CSV
   * encoding failed (pages are then built per request) or `stopped()` (the caller then fails the
   * execution). Arrow failing alone leaves the rest (Arrow pages are then built per request).
   */
  async #encodeStored(alias: string, id: string, info: ResultInfo, conns: Set<DuckDBConnection>, stopped: () => boolean): Promise<string | undefined> {
    const { tmp } = encodedDir(this.#resultsDir, id);
    const withConn = async (fn: (conn: DuckDBConnection) => Promise<void>): Promise<void> => {
      const conn = await this.#connect(this.#files);
      this.#running.add(conn);
      conns.add(conn);
      try {
        await fn(conn);
      } finally {
        conns.delete(conn);
        this.#running.delete(conn);
        this.#disconnect(conn);
      }
    };
    const table = `${alias}.main.result`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    const encodeRows = (): Promise<void> => withConn(async (conn) => writeEncodings(conn, await storedColumns(conn, table, info), info, tmp, stopped));
    const encodeArrow = (): Promise<void> =>
      info.columnNames.length > 0 && info.rowCount > 0
        ? withConn(async (conn) => this.#encodeArrow(id, conn, await storedColumns(conn, table, info), info.rowCount, tmp, stopped))
        : Promise.resolve();
    let rows: PromiseSettledResult<void>;
    let arrow: PromiseSettledResult<void>;
    if (info.bytes < this.#encodeApartBytes) [rows, arrow] = await Promise.allSettled([encodeRows(), encodeArrow()]);
    else {
      // A large result's two passes run one after the other, with what the first left in the
      // files instance evicted between them: their buffers never add up.
      [rows] = await Promise.allSettled([encodeRows()]);
      const next = rows.status === 'fulfilled' && !stopped();
      if (next) await this.#filesUse.trim(1);
      [arrow] = await Promise.allSettled([next ? encodeArrow() : Promise.resolve()]);
    }
    if (rows.status === 'fulfilled' && arrow.status === 'fulfilled' && !stopped()) return tmp;
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    const failed = rows.status === 'rejected' ? rows.reason : arrow.status === 'rejected' ? arrow.reason : undefined;
    if (!stopped()) console.error(`sluice engine: encoding result ${id} failed (its pages are built per request):`, failed);
    return undefined;
  }

  /** Moves the encoding written by #encodeStored into place, once its result is. */
  async #publishEncoding(id: string, tmp: string, info: ResultInfo): Promise<void> {
    try {
      await publishEncodings(tmp, encodedDir(this.#resultsDir, id).dir);
      this.#encodedInfo.set(id, info);
    } catch (err) {
      // The result stands; it is encoded again in the background when first read.
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      console.error(`sluice engine: publishing the encoding of result ${id} failed:`, err);
    }
  }

  /**
   * Writes the result file's WAL into the file. DETACH alone skips its checkpoint while another
   * connection has a transaction open on the database (catalog scans such as duckdb_schemas() of
   * a concurrent execution open one on every attached database), and the file is renamed without
   * its WAL: the stored result would lack rows or its `meta`. So: checkpoint until the WAL is gone.
   */
  async #checkpoint(conn: DuckDBConnection, alias: string, path: string): Promise<void> {
    for (let i = 0; i < 200; i += 1) {
      try {
        await conn.run(`CHECKPOINT ${alias}`);
      } catch (err) {
        const mapped = toEngineError(err);
        if (mapped.kind === 'canceled') throw mapped;
      }
      if (!existsSync(`${path}.wal`)) return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new EngineError('internal', `could not checkpoint the stored result ${alias}`);
  }

  /**
   * Creates `service.<team>` once. Concurrent CREATE SCHEMA IF NOT EXISTS of one name conflict in
   * DuckDB ("Catalog write-write conflict"), which failed a team's first executions run at once.
   */
  #teamSchema(team: string): Promise<void> {
    const key = team.toLowerCase();
    let created = this.#schemas.get(key);
    if (created === undefined) {
      created = this.#withTrusted(async (conn) => {
        await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(team)}`);
      });
      this.#schemas.set(key, created);
      created.catch(() => this.#schemas.delete(key));
    }
    return created;
  }

  /** A late interrupt (issued just before the repeating stopped) may still hit the first try. */
  async #detachRetrying(conn: DuckDBConnection, alias: string): Promise<void> {
    for (let i = 0; i < 3; i += 1) {
      try {
        await conn.run(`DETACH DATABASE IF EXISTS ${alias}`);
        return;
      } catch {
        // retried
      }
    }
  }

  /**
   * Streams the last statement's rows (or the rows it already returned, `held`) from the user's
   * connection into `result` of the result file attached as `catalog` on `files`; returns the
   * column names.
   */
  async #store(
    files: DuckDBConnection,
    sql: string,
    last: SqlStatement,
    prepared: DuckDBPreparedStatement,
    catalog: string,
    held?: DuckDBDataChunk[],
  ): Promise<string[]> {
    const names = uniqueColumnNames(Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i)));
    const types = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnType(i));
    const userError = (err: unknown): EngineError => toEngineError(err, originOf(sql, last, last.text, 0));
    let rows: ChunkSource;
    if (held !== undefined) {
      const chunks = held.values();
      rows = { fetchChunk: async () => chunks.next().value ?? null };
    } else {
      let stream: ChunkSource;
      try {
        stream = await prepared.stream();
      } catch (err) {
        throw userError(err);
      }
      rows = {
        fetchChunk: async () => {
          try {
            return await stream.fetchChunk();
          } catch (err) {
            throw userError(err);
          }
        },
      };
    }
    if (types.length === 0) return [];
    await copyRows(files, { catalog, schema: 'main', table: 'result' }, names.map((_, i) => `c${i}`), types, rows);
    return names;
  }

  /** Counts rows and bytes, truncates to maxResultBytes, and writes `meta`. */
  async #finish(conn: DuckDBConnection, alias: string, names: string[], maxResultBytes?: number): Promise<ResultInfo> {
    let info: ResultInfo;
    if (names.length === 0) {
      info = { columnNames: [], columnTypes: [], rowCount: 0, bytes: 0, truncated: false };
    } else {
      const table = `${alias}.main.result`;
      const typesReader = await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`);
      const types = typesReader.columnTypes();
      const columns: StoredColumns = { table, names, protocolTypes: types.map(protocolTypeName), types, rowCount: 0 };
      const cols = names.map((_, i) => i);
      const header = headerBytes(names);
      const totals = await conn.runAndReadAll(
        `SELECT count(*)::BIGINT AS n, coalesce(sum(${rowBytesSql(cols, columns)}), 0)::BIGINT AS b FROM ${table}`,
      );
      let rowCount = Number(totals.getRowsJson()[0]![0]);
      let bytes = header + Number(totals.getRowsJson()[0]![1]);
      let truncated = false;
      if (maxResultBytes !== undefined && bytes > maxResultBytes) {
        const budget = maxResultBytes - header;
        const cut = await conn.runAndReadAll(
          `SELECT count(*)::BIGINT AS n, coalesce(max(cs), 0)::BIGINT AS b FROM (SELECT sum(${rowBytesSql(cols, columns)}) OVER (ORDER BY rowid ROWS UNBOUNDED PRECEDING) AS cs FROM ${table}) WHERE cs <= ${Math.max(0, budget)}`,
        );
        rowCount = Number(cut.getRowsJson()[0]![0]);
        bytes = header + Number(cut.getRowsJson()[0]![1]);
        truncated = true;
        await conn.run(`DELETE FROM ${table} WHERE rowid >= ${rowCount}`);
      }
      info = { columnNames: names, columnTypes: columns.protocolTypes, rowCount, bytes, truncated };
    }
    await conn.run(`CREATE TABLE ${alias}.main.meta AS SELECT ${sqlString(JSON.stringify(info))} AS info`);
    return info;
  }

  /** The attached result, counted as in use until #release. */
  async #acquire(id: string): Promise<{ entry: Lease<OpenResult>; open: OpenResult }> {
    this.#checkOpen();
    checkResultId(id);
    const { lease, open } = await this.#attached.acquire(id);
    return { entry: lease, open };
  }

  #release(entry: Lease<OpenResult>): void {
    this.#attached.release(entry);
  }

  async #attach(id: string): Promise<OpenResult> {
    const path = this.#path(id);
    if (!existsSync(path)) throw new EngineError('not_found', `no stored result ${id}`);
    const alias = sqlIdent(`r_${id}`);
    return this.#withFiles(async (conn) => {
      await conn.run(`ATTACH IF NOT EXISTS ${sqlString(path)} AS ${alias} (READ_ONLY)`);
      const meta = await conn.runAndReadAll(`SELECT info FROM ${alias}.main.meta`);
      const info = parseInfo(String(meta.getRowsJson()[0]?.[0]));
      return { alias, info, columns: await storedColumns(conn, `${alias}.main.result`, info) };
    });
  }

  /** Counted while connecting: close() must not close an instance under a connect in progress. */
  async #connect(instance: DuckDBInstance = this.#instance): Promise<DuckDBConnection> {
    this.#starting += 1;
    try {
      const use = instance === this.#files ? this.#filesUse : this.#userUse;
      const conn = await use.connect();
      this.#useOf.set(conn, use);
      return conn;
    } finally {
      this.#starting -= 1;
    }
  }

  /** Closes a connection opened by #connect. */
  #disconnect(conn: DuckDBConnection): void {
    const use = this.#useOf.get(conn);
    this.#useOf.delete(conn);
    if (use === undefined) conn.closeSync();
    else use.close(conn);
  }

  /** A connection of the files instance for the engine's own statements (close waits for it). */
  #withFiles<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#withTrusted(fn, this.#files);
  }

  /** A connection of the instance for the engine's own statements (close waits for it). */
  async #withTrusted<T>(fn: (conn: DuckDBConnection) => Promise<T>, instance: DuckDBInstance = this.#instance): Promise<T> {
    this.#checkOpen();
    const conn = await this.#connect(instance);
    this.#trusted.add(conn);
    try {
      return await fn(conn);
    } finally {
      this.#trusted.delete(conn);
      this.#disconnect(conn);
    }
  }

  async #runPage(id: string, req: PageRequest, format: 'json' | 'csv') {
    const { entry, open } = await this.#acquire(id);
    try {
      const plan = planPage(open.columns, req, format);
      const conn = await this.#pageConnection();
      try {
        const row = (await conn.runAndReadAll(plan.sql)).getRowsJson()[0]!;
        let total = plan.totalRowCount;
        if (plan.countSql !== undefined) total = Number((await conn.runAndReadAll(plan.countSql)).getRowsJson()[0]![0]);
        return { plan, rowCount: Number(row[0]), body: String(row[1]), bytes: Number(row[2]), total: total ?? 0 };
      } catch (err) {
        const mapped = toEngineError(err);
        // A filter comparing a column with a value of the wrong type is the caller's mistake.
        if ((req.filters || req.sortBy) && mapped.kind !== 'capacity') {
          throw new EngineError('bad_request', `filters: ${mapped.message}`, { cause: err });
        }
        throw mapped;
      } finally {
        this.#endPageConnection(conn);
      }
    } finally {
      this.#release(entry);
    }
  }

  /** A connection for a page query: interrupted by close, which waits for it. */
  async #pageConnection(): Promise<DuckDBConnection> {
    this.#lastActivity = performance.now();
    this.#preemptEncodings();
    const release = await this.#pageSlots.take();
    let conn: DuckDBConnection;
    try {
      conn = await this.#connect(this.#files);
    } catch (err) {
      release();
      throw err;
    }
    this.#pageReleases.set(conn, release);
    this.#running.add(conn);
    if (this.#closed) {
      this.#endPageConnection(conn);
      throw new EngineError('canceled', 'the service is stopping');
    }
    return conn;
  }

  /**
   * A reader of a result not encoded yet pays for a page query; an encoding running beside it
   * would take the same cores and as much memory again. So the encoding stops (interrupted until
   * it has) and is scheduled again for when the service is quiet.
   */
  #preemptEncodings(): void {
    for (const job of this.#encodings.values()) {
      if (!job.started || job.cancelled) continue;
      job.cancelled = true;
      job.preempted = true;
      job.conn?.interrupt();
      const repeat = setInterval(() => job.conn?.interrupt(), INTERRUPT_REPEAT_MS);
      void job.done.finally(() => clearInterval(repeat));
    }
  }

  #endPageConnection(conn: DuckDBConnection): void {
    this.#lastActivity = performance.now();
    this.#running.delete(conn);
    this.#disconnect(conn);
    this.#pageReleases.get(conn)?.();
    this.#pageReleases.delete(conn);
  }

  async page(resultId: string, req: PageRequest): Promise<Page> {
    const r = await this.#runPage(resultId, req, 'json');
    return {
      rowsJson: `[${r.body}]`,
      rowCount: r.rowCount,
      bytes: r.plan.headerBytes + r.bytes,
      totalRowCount: r.total,
      columnNames: r.plan.columnNames,
      columnTypes: r.plan.columnTypes,
    };
  }

  async arrowPage(resultId: string, req: PageRequest): Promise<ArrowPage> {
    const { entry, open } = await this.#acquire(resultId);
    try {
      const plan = planPage(open.columns, req, 'json');
      const conn = await this.#pageConnection();
      try {
        const body = await buildArrowPage(conn, open.columns, plan);
        const bytesSql = `SELECT coalesce(sum(${rowBytesSql(plan.cols, open.columns)}), 0)::BIGINT FROM ${plan.source} AS page`;
        const bytes = plan.headerBytes + Number((await conn.runAndReadAll(bytesSql)).getRowsJson()[0]![0]);
        let total = plan.totalRowCount;
        if (plan.countSql !== undefined) total = Number((await conn.runAndReadAll(plan.countSql)).getRowsJson()[0]![0]);
        return { arrow: body.bytes, rowCount: body.rowCount, bytes, totalRowCount: total ?? 0, columnNames: plan.columnNames, columnTypes: plan.columnTypes };
      } catch (err) {
        const mapped = toEngineError(err);
        if ((req.filters || req.sortBy) && mapped.kind !== 'capacity' && mapped.kind !== 'unrepresentable') {
          throw new EngineError('bad_request', `filters: ${mapped.message}`, { cause: err });
        }
        throw mapped;
      } finally {
        this.#endPageConnection(conn);
      }
    } finally {
      this.#release(entry);
    }
  }

  async csvPage(resultId: string, req: PageRequest): Promise<CsvPage> {
    const r = await this.#runPage(resultId, req, 'csv');
    const header = r.plan.columnNames.map(csvHeaderField).join(',');
    return { csv: `${header}\n${r.body}${r.rowCount > 0 ? '\n' : ''}`, rowCount: r.rowCount, totalRowCount: r.total };
  }

  /**
   * Page [offset, offset + limit) of all columns, unfiltered, from the result's encodings; undefined
   * while the result has none yet (the page query serves it meanwhile). The rows come as an open
   * byte range of a file: the caller streams and closes it.
   */
  async encodedPage(resultId: string, offset: number, limit: number, format: EncodedFormat): Promise<EncodedPage | undefined> {
    const found = await this.#encoded(resultId);
    if (found === undefined) return undefined;
    return this.#readEncoded(resultId, () => encodedPage(found.dir, found.info, offset, limit, format));
  }

  /**
   * An Arrow page of all columns, unfiltered, from the pre-encoded chunks: undefined while the
   * result is not encoded, or when the page is not made of whole chunks (build it per request then).
   */
  async encodedArrowPage(resultId: string, offset: number, limit: number): Promise<EncodedArrowPage | undefined> {
    const found = await this.#encoded(resultId);
    if (found === undefined) return undefined;
    return this.#readEncoded(resultId, () => encodedArrowPage(found.dir, found.info, offset, limit));
  }

  frameStore(resultId: string): { dir: string; scratch: string } {
    checkResultId(resultId);
    return { dir: join(encodedDir(this.#resultsDir, resultId).dir, 'frames'), scratch: this.#scratchPath(`frame-${resultId}-`) };
  }

  /** The result's encoding directory and info once it is encoded; schedules the encoding of a result stored before a restart. */
  async #encoded(resultId: string): Promise<{ dir: string; info: ResultInfo } | undefined> {
    this.#checkOpen();
    checkResultId(resultId);
    const { dir } = encodedDir(this.#resultsDir, resultId);
    let info = this.#encodedInfo.get(resultId);
    if (info === undefined && !this.#encodings.has(resultId)) {
      info = await readEncodedInfo(dir);
      if (info !== undefined) this.#encodedInfo.set(resultId, info);
      else if (!this.#encodeFailed.has(resultId) && existsSync(this.#path(resultId))) {
        // Stored before a restart (or by an older version): encoded now, if it is worth it.
        if ((await this.resultInfo(resultId)).bytes >= this.#encodeMinBytes) this.#scheduleEncoding(resultId);
        else this.#encodeFailed.add(resultId);
      }
    }
    return info === undefined ? undefined : { dir, info };
  }

  async #readEncoded<T>(resultId: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      // Dropped between the look-up and the read: the result is gone.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new EngineError('not_found', `no stored result ${resultId}`);
      throw err;
    }
  }

  /** Settles when the result's encoding (if one is scheduled or running) has finished. */
  async encodingSettled(resultId: string): Promise<void> {
    await this.#encodings.get(resultId)?.done;
  }

  #scheduleEncoding(id: string): void {
    if (this.#closed || this.#encodings.has(id) || this.#encodeFailed.has(id)) return;
    const job: EncodingJob = { done: Promise.resolve(), started: false, cancelled: false, preempted: false };
    job.done = this.#encodeQueue
      .then(() => this.#encode(id, job))
      .catch((err: unknown) => {
        this.#encodeFailed.add(id);
        console.error(`sluice engine: encoding result ${id} failed (its pages are built per request):`, err);
      })
      .finally(() => {
        if (this.#encodings.get(id) === job) this.#encodings.delete(id);
        if (job.preempted) this.#scheduleEncoding(id);
      });
    this.#encodeQueue = job.done;
    this.#encodings.set(id, job);
  }

  async #encode(id: string, job: EncodingJob): Promise<void> {
    while (!job.cancelled && !this.#closed) {
      if (this.#executing > 0) await new Promise<void>((wake) => this.#idleWaiters.push(wake));
      else if (performance.now() - this.#lastActivity < ENCODE_AFTER_IDLE_MS) await new Promise((wake) => setTimeout(wake, ENCODE_AFTER_IDLE_MS).unref());
      else break;
    }
    if (job.cancelled || this.#closed) return;
    job.started = true;
    const { dir, tmp } = encodedDir(this.#resultsDir, id);
    const published = existsSync(dir);
    // Published by a run a reader stopped in its Arrow part: that part is left.
    if (published && (!this.#encodedInfo.has(id) || existsSync(arrowDirs(dir).dir))) return;
    const { entry, open } = await this.#acquire(id);
    let conn: DuckDBConnection | undefined;
    try {
      conn = await this.#connect(this.#files);
      this.#running.add(conn);
      job.conn = conn;
      if (job.cancelled || this.#closed) return;
      if (!published) {
        await rm(tmp, { recursive: true, force: true });
        await writeEncodings(conn, open.columns, open.info, tmp, () => job.cancelled || this.#closed);
        if (job.cancelled || this.#closed) throw new EngineError('canceled', 'encoding stopped');
        await publishEncodings(tmp, dir);
        if (job.cancelled || this.#closed) return;
        // JSON and CSV pages are byte ranges from here on; the Arrow chunks follow.
        this.#encodedInfo.set(id, open.info);
      }
      if (open.info.columnNames.length > 0 && open.info.rowCount > 0) {
        await this.#encodeArrow(id, conn, open.columns, open.info.rowCount, dir, () => job.cancelled || this.#closed);
      }
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      if (job.cancelled || this.#closed) return;
      throw err;
    } finally {
      if (conn !== undefined) {
        this.#running.delete(conn);
        this.#disconnect(conn);
      }
      this.#release(entry);
    }
  }

  /**
   * The Arrow chunks of a published encoding, written under arrow.tmp/ and renamed to arrow/. A
   * failure leaves the JSON and CSV encodings as they are: Arrow pages are then built per request
   * (a value Arrow cannot hold fails only the pages that hold it).
   */
  async #encodeArrow(id: string, conn: DuckDBConnection, columns: StoredColumns, rowCount: number, encoded: string, stopped: () => boolean): Promise<void> {
    const { dir, tmp } = arrowDirs(encoded);
    try {
      await rm(tmp, { recursive: true, force: true });
      await mkdir(tmp);
      await writeArrowEncoding(
        tmp,
        this.#arrowChunkRows(columns.names.length),
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

  async hasResult(resultId: string): Promise<boolean> {
    checkResultId(resultId);
    return existsSync(this.#path(resultId));
  }

  async resultInfo(resultId: string): Promise<ResultInfo> {
    const { entry, open } = await this.#acquire(resultId);
    this.#release(entry);
    return open.info;
  }

  async dropResult(resultId: string): Promise<void> {
    this.#checkOpen();
    checkResultId(resultId);
    this.#encodedInfo.delete(resultId);
    const job = this.#encodings.get(resultId);
    if (job !== undefined) {
      job.cancelled = true;
      job.preempted = false;
      // A running encoding holds the result attached: stop it and let it let go first.
      if (job.started) {
        job.conn?.interrupt();
        await job.done;
      }
    }
    this.#encodeFailed.delete(resultId);
    // Taken out at once: an attach of this id from now on waits, then finds the file gone.
    await this.#attached.drop(resultId, async () => {
      await rm(this.#path(resultId), { force: true });
      await rm(`${this.#path(resultId)}.wal`, { force: true });
      const { dir, tmp } = encodedDir(this.#resultsDir, resultId);
      await rm(dir, { recursive: true, force: true });
      await rm(tmp, { recursive: true, force: true });
    });
  }

  /**
   * Runs trusted code on a connection of the instance that runs users' SQL (the catalogs; no file
   * is readable to it); never user SQL. Not part of SqlEngine: the service asks for tables
   * through `tables`.
   */
  withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#withTrusted(fn);
  }

  /** The same on the files instance (tests read its settings). */
  withFilesConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#withFiles(fn);
  }

  /**
   * A path inside the results directory, the only one the files instance reads files from.
   * Scratch files are named `SCRATCH_PREFIX<name>`, so those a crash left behind are removed at
   * start (removeIncomplete).
   */
  #scratchPath(name: string): string {
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(name) || name.startsWith('.')) throw new EngineError('bad_request', `invalid scratch file name "${name}"`);
    return join(this.#resultsDir, `${SCRATCH_PREFIX}${name}`);
  }

  /** Trims of the two instances so far (memoryTrim.ts; for tests). */
  get memoryTrims(): { users: number; files: number } {
    return { users: this.#userUse.trims, files: this.#filesUse.trims };
  }

  /** Idempotent: a second call (a stop at once during a graceful close) waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#closeSignal.abort(new EngineError('canceled', 'Query was canceled: the service is stopping'));
    for (const wake of this.#idleWaiters.splice(0)) wake();
    await Promise.all([this.#userUse.stop(), this.#filesUse.stop()]);
    // The instance is closed only once no native call is in flight on any of its connections:
    // closing it (or ending the thread) under one aborts the process. Every statement is
    // interrupted, again and again (an interrupt between two statements is lost, see the header).
    while (this.#starting > 0 || this.#running.size > 0 || this.#trusted.size > 0) {
      for (const conn of this.#running) conn.interrupt();
      for (const conn of this.#trusted) conn.interrupt();
      await new Promise((r) => setTimeout(r, INTERRUPT_REPEAT_MS));
    }
    await this.#attached.settled();
    this.#files.closeSync();
    this.#instance.closeSync();
  }

  /** Leftovers of executions (and scratch files of uploads) that were in progress when the process died. */
  static async removeIncomplete(resultsDir: string): Promise<void> {
    const names = await readdir(resultsDir);
    const stored = new Set(names.filter((n) => n.endsWith('.duckdb') && !n.includes('.tmp.duckdb')).map((n) => n.slice(0, -'.duckdb'.length)));
    for (const name of names) {
      if (name.includes('.tmp.duckdb') || name.startsWith(SCRATCH_PREFIX)) await rm(join(resultsDir, name), { force: true });
      // Half-written encodings, and encodings whose result was being dropped.
      const orphan = name.endsWith(ENCODED_SUFFIX) && !stored.has(name.slice(0, -ENCODED_SUFFIX.length));
      if (name.endsWith(ENCODING_SUFFIX) || orphan) await rm(join(resultsDir, name), { recursive: true, force: true });
      // Arrow chunks half-written after the rest was published (that result's Arrow pages are then built per request).
      else if (name.endsWith(ENCODED_SUFFIX)) await rm(arrowDirs(join(resultsDir, name)).tmp, { recursive: true, force: true });
    }
  }
}

/** DuckDB's "Did you mean" hints search every catalog: they must not name hidden tables. */
function withoutHiddenHints(err: EngineError, ctx: AccessContext): EngineError {
  const message = hideUnreadableHints(err.message, ctx);
  if (message === err.message) return err;
  const options: EngineErrorOptions = { cause: err.cause };
  if (err.line !== undefined) options.line = err.line;
  if (err.column !== undefined) options.column = err.column;
  if (err.position !== undefined) options.position = err.position;
  return new EngineError(err.kind, message, options);
}

/** The stored table's columns, as page queries and encoders take them. */
async function storedColumns(conn: DuckDBConnection, table: string, info: ResultInfo): Promise<StoredColumns> {
  const types = info.columnNames.length > 0 ? (await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`)).columnTypes() : [];
  return { table, names: info.columnNames, protocolTypes: info.columnTypes, types, rowCount: info.rowCount };
}

function csvHeaderField(name: string): string {
  return /[",\r\n]/.test(name) || name === '' ? `"${name.replaceAll('"', '""')}"` : name;
}

function parseInfo(text: string): ResultInfo {
  const v: unknown = JSON.parse(text);
  const rec = v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  const strings = (x: unknown): string[] => (Array.isArray(x) ? x.map(String) : []);
  return {
    columnNames: strings(rec['columnNames']),
    columnTypes: strings(rec['columnTypes']),
    rowCount: Number(rec['rowCount'] ?? 0),
    bytes: Number(rec['bytes'] ?? 0),
    truncated: rec['truncated'] === true,
  };
}
