// The SqlEngine over two embedded DuckDB instances, wiring the engine's rooms:
//
//   execution/  one execution: statements, stop (cancel, timeout), the quota transaction
//   results/    the result store: temporary file, attach (an LRU), checkpoint, publish, drop, clean-up
//   pages/      pages built per request: the page query, filters, values as JSON / CSV / Arrow
//   encoding/   the stored encodings: when they are written, preemption by readers, the writers
//   memory/     admission and the instances' limits, trims, chunk collection, the one gate
//   sandbox/    what users' SQL may do: allowlist, access policy, view expansion, lockdown
//   tables/     the service's tables: copies, CSV ingest, team storage, sample data
//   connections.ts  every connection opened and closed, so close() waits for all of them
//
// Two instances, so that DuckDB itself keeps users' SQL away from the service's files: DuckDB's
// file access settings are per instance and cannot change once external access is off, so the
// instance that runs users' SQL (the catalogs, the sandbox, the teams' tables) is locked with no
// readable directory, and a second, in-memory instance (`files`) is the only one that opens the
// results directory: it writes result files, attaches them for pages, encodes them and reads
// upload files. It never runs users' SQL. Rows cross between the two as native chunks
// (results/copyRows.ts): the user's last statement is streamed into its result file; an upload or
// a stored result is streamed into a table of the `service` catalog.
//
// With teams walled apart (DuckDbEngineOptions.teams, the service's default), users' SQL runs on
// the team's own instance instead (teams/teamInstances.ts): the first instance then only sets the
// engine up and holds the folder's lock, and another team's private objects are not among the
// files a team's instance may open (teams/sharedObjects.ts brings it the public ones).
//
// Threads: DuckDB's `threads` setting is per instance ("cannot be set locally"), so
// ExecuteOptions.threads cannot give one execution more threads than another; the instance runs
// with defaultThreads and the option is accepted and ignored. A second instance for the large tier
// would need its own copy of every database (a DuckDB file is opened read-write by one instance
// only), and DuckDB's scheduler already shares the instance's threads among the queries running
// at once, so a lone large query gets all of them anyway.
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { EngineError, type ArrowPage, type CsvPage, type ExecuteOptions, type Page, type PageRequest, type ResultInfo, type ServiceTables, type SqlClassification, type SqlEngine } from './types.ts';
import { classifyAccess } from './sandbox/checkAccess.ts';
import type { EncodedFormat, EncodedPage } from './encoding/encodedResult.ts';
import type { EncodedArrowPage } from './encoding/arrowEncoding.ts';
import { encodedDir } from './encoding/encodedResult.ts';
import { Encodings, type EncodeMode } from './encoding/encodings.ts';
import { defaultArrowChunkRows, ENCODE_APART_BYTES, encodePolicy } from './encoding/encodePolicy.ts';
import { DuckDbServiceTables } from './tables/serviceTables.ts';
import { TeamTableSizes } from './tables/teamStorage.ts';
import { AttachedResults } from './results/attachedResults.ts';
import { checkResultId, ResultFiles, type OpenResult } from './results/resultFiles.ts';
import { runExecution, type EncodePolicy } from './execution/execution.ts';
import { PageReader } from './pages/pageReader.ts';
import { ResourceBounds, type EngineCeilings } from './memory/resourceBounds.ts';
import { pageSlots } from './memory/pageSlots.ts';
import { InstanceUse } from './memory/memoryTrim.ts';
import { WideRead, wideReadLimit } from './memory/wideRead.ts';
import { Connections } from './connections.ts';
import { sqlIdent } from '../sql.ts';
import { TeamInstances, type TeamInstanceFiles } from './teams/teamInstances.ts';
import { SharedObjects } from './teams/sharedObjects.ts';

/** Stored results kept attached for paging; the least recently used idle ones are detached. */
const MAX_ATTACHED = 32;
/**
 * A stored result nobody has read for this long is detached (its file closed): a client pages
 * through a result with requests milliseconds apart, and attaching again costs milliseconds.
 */
const ATTACHED_IDLE_MS = 5_000;
/** An instance with no connection open for this long gives its idle memory back (memory/memoryTrim.ts). */
const TRIM_AFTER_IDLE_MS = 1_000;

export interface DuckDbEngineOptions {
  /** Runs users' SQL: no directory is readable to it (sandbox/lockdown.ts). */
  instance: DuckDBInstance;
  /** Opens the results directory; runs no user SQL (see the header). */
  files: DuckDBInstance;
  dataDir: string;
  /** DuckDB's built-in catalog views, which user SQL may not read. */
  systemViews?: ReadonlySet<string>;
  encodeMinBytes?: number | undefined;
  arrowChunkRows?: ((columnCount: number) => number) | undefined;
  ceilings?: EngineCeilings;
  encodeResults?: EncodeMode | undefined;
  /**
   * Each team's SQL on an instance of its own, which cannot open other teams' files
   * (teams/teamInstances.ts); absent: every team's SQL runs on `instance`, over one `service.duckdb`.
   */
  teams?: Pick<TeamInstanceFiles, 'engineFile' | 'teamsDir' | 'publicDir' | 'tempDir' | 'threads' | 'maxTempDirectorySize'> | undefined;
}

export class DuckDbEngine implements SqlEngine {
  readonly #connections: Connections;
  readonly #files: ResultFiles;
  readonly #attached: AttachedResults<OpenResult>;
  readonly #bounds: ResourceBounds;
  readonly #encodings: Encodings;
  readonly #pages: PageReader;
  /** Reads and writes of rows wider than the files instance's memory (memory/wideRead.ts). */
  readonly #wide: WideRead;
  readonly #encode: EncodePolicy;
  readonly #schemas = new Map<string, Promise<void>>();
  /** Aborted when the engine closes: executions waiting for memory room stop waiting. */
  readonly #closeSignal = new AbortController();
  #closing: Promise<void> | undefined;
  readonly #systemViews: ReadonlySet<string>;
  readonly #serviceDatabase: string;
  readonly #teams: TeamInstances | undefined;
  readonly #shared: SharedObjects | undefined;
  /** The bytes of each team's own tables, kept between the executions that change them. */
  readonly #sizes = new TeamTableSizes();
  readonly tables: ServiceTables;
  /** Told when an encoding is written after its result was stored (the service bounds the store then). */
  #onStoreGrew: (() => void) | undefined;

  constructor(o: DuckDbEngineOptions) {
    const ceilings = o.ceilings;
    const trim = ceilings?.trim;
    const run = (sql: string, team?: string): Promise<void> => this.#connections.withTrusted(async (conn) => void (await conn.run(sql)), 'users', team);
    // With an instance per team, each has its own limits: those of the executions running on it.
    const perInstance = o.teams && { set: run, opened: () => this.#teams?.openedTeams() ?? [] };
    this.#bounds = new ResourceBounds(ceilings, (sql) => run(sql), perInstance);
    const bounds = this.#bounds;
    const idleMs = trim?.afterIdleMs ?? TRIM_AFTER_IDLE_MS;
    const filesLimit = ceilings?.filesMemoryLimit;
    this.#teams = o.teams && new TeamInstances({ ...o.teams, memoryLimit: (team) => bounds.memoryLimitOf(team), idleMs });
    this.#connections = new Connections(
      new InstanceUse(o.instance, ceilings && (() => bounds.memoryLimit ?? ceilings.memoryLimit), idleMs),
      new InstanceUse(o.files, filesLimit === undefined ? undefined : () => filesLimit, idleMs),
      this.#teams,
    );
    const teams = this.#teams;
    this.#shared = teams && new SharedObjects((team, fn) => this.#connections.withTrusted(fn, 'users', team), teams.publicDir);
    this.#files = new ResultFiles(join(o.dataDir, 'results'));
    this.#serviceDatabase = join(o.dataDir, 'service.duckdb');
    this.#systemViews = o.systemViews ?? new Set();
    this.#encode = encodePolicy(o.encodeMinBytes, o.encodeResults, ceilings);
    this.#attached = new AttachedResults<OpenResult>({
      max: MAX_ATTACHED,
      idleMs: ATTACHED_IDLE_MS,
      attach: (id) => this.#connections.withTrusted((conn) => this.#files.attach(conn, id), 'files'),
      detach: (open) => this.#connections.withTrusted(async (conn) => void (await conn.run(`DETACH DATABASE IF EXISTS ${open.alias}`)), 'files'),
      closed: () => this.#connections.closed,
      onDetachError: (id, err) => console.error(`sluice engine: detaching result ${id}:`, err),
    });
    const acquire = (id: string): Promise<{ open: OpenResult; release: () => void }> => this.#acquire(id);
    const slots = pageSlots(filesLimit);
    this.#encodings = new Encodings({
      files: this.#files,
      connections: this.#connections,
      bounds,
      slots,
      mode: o.encodeResults ?? 'on_first_read',
      onWritten: () => this.#onStoreGrew?.(),
      acquire,
      minBytes: this.#encode.minBytes,
      apartBytes: trim?.encodeApartBytes ?? ENCODE_APART_BYTES,
      arrowChunkRows: o.arrowChunkRows ?? defaultArrowChunkRows,
    });
    this.#wide = new WideRead(slots, filesLimit, wideReadLimit(ceilings));
    this.#pages = new PageReader({
      connections: this.#connections,
      slots,
      acquire,
      wide: this.#wide,
      onPageQuery: (phase) => {
        this.#encodings.touch();
        if (phase === 'start') this.#encodings.preempt();
      },
    });
    const shared = this.#shared;
    this.tables = new DuckDbServiceTables({
      withConnection: (fn, team) => this.#connections.withTrusted(fn, 'users', team),
      ...(shared === undefined ? {} : { changed: (team: string) => shared.changed(team) }),
      withFiles: (fn) => this.#connections.withTrusted(fn, 'files'),
      tableSizes: this.#sizes,
      resultPath: (id) => {
        checkResultId(id);
        return this.#files.path(id);
      },
      scratchPath: (name) => this.#files.scratchPath(name),
    });
  }

  execute(sql: string, opts: ExecuteOptions): Promise<ResultInfo> {
    return runExecution(
      {
        connections: this.#connections,
        bounds: this.#bounds,
        closeSignal: this.#closeSignal.signal,
        files: this.#files,
        encodings: this.#encodings,
        sizes: this.#sizes,
        serviceDatabase: (team) => this.#teams?.serviceFile(team) ?? this.#serviceDatabase,
        shared: this.#shared,
        systemViews: this.#systemViews,
        teamSchema: (team) => this.#teamSchema(team),
        wide: this.#wide,
        encode: this.#encode,
      },
      sql,
      opts,
    );
  }

  async classify(sql: string, opts: Pick<ExecuteOptions, 'team' | 'canRead'>): Promise<SqlClassification> {
    this.#connections.checkOpen();
    if (opts.team !== undefined && !/^[A-Za-z0-9_-]{1,100}$/.test(opts.team)) throw new EngineError('bad_request', `invalid team name "${opts.team}"`);
    if (opts.team !== undefined) await this.#teamSchema(opts.team);
    return this.#connections.withTrusted((conn) => classifyAccess(conn, sql, { ...opts, walled: this.#teams !== undefined }, this.#systemViews), 'users', opts.team);
  }

  /**
   * Creates `service.<team>` once. Concurrent CREATE SCHEMA IF NOT EXISTS of one name conflict in
   * DuckDB ("Catalog write-write conflict"), which failed a team's first executions run at once.
   */
  #teamSchema(team: string): Promise<void> {
    const key = team.toLowerCase();
    let created = this.#schemas.get(key);
    if (created === undefined) {
      created = this.#connections.withTrusted(async (conn) => {
        await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(team)}`);
      }, 'users', team);
      this.#schemas.set(key, created);
      created.catch(() => this.#schemas.delete(key));
    }
    return created;
  }

  /** The attached result, counted as in use until `release()`. */
  async #acquire(id: string): Promise<{ open: OpenResult; release: () => void }> {
    this.#connections.checkOpen();
    checkResultId(id);
    const { lease, open } = await this.#attached.acquire(id);
    return { open, release: () => this.#attached.release(lease) };
  }

  page(resultId: string, req: PageRequest): Promise<Page> {
    return this.#pages.page(resultId, req);
  }

  arrowPage(resultId: string, req: PageRequest): Promise<ArrowPage> {
    return this.#pages.arrowPage(resultId, req);
  }

  csvPage(resultId: string, req: PageRequest): Promise<CsvPage> {
    return this.#pages.csvPage(resultId, req);
  }

  /**
   * Page [offset, offset + limit) of all columns, unfiltered, from the result's encodings; undefined
   * while the result has none yet (the page query serves it meanwhile). The rows come as an open
   * byte range of a file: the caller streams and closes it.
   */
  encodedPage(resultId: string, offset: number, limit: number, format: EncodedFormat): Promise<EncodedPage | undefined> {
    this.#connections.checkOpen();
    checkResultId(resultId);
    return this.#encodings.page(resultId, offset, limit, format);
  }

  /** An Arrow page of all columns, unfiltered, from the pre-encoded chunks (see encoding/encodings.ts). */
  encodedArrowPage(resultId: string, offset: number, limit: number): Promise<EncodedArrowPage | undefined> {
    this.#connections.checkOpen();
    checkResultId(resultId);
    return this.#encodings.arrowPage(resultId, offset, limit);
  }

  frameStore(resultId: string): { dir: string; scratch: string } {
    checkResultId(resultId);
    return { dir: join(encodedDir(this.#files.dir, resultId).dir, 'frames'), scratch: this.#files.scratchPath(`frame-${resultId}-`) };
  }

  async openTeams(teams: readonly string[]): Promise<void> {
    for (const team of teams) await this.#teams?.use(team);
  }

  resultStoreBytes(): Promise<Map<string, number>> {
    return this.#files.sizes();
  }

  onResultStoreGrew(listener: () => void): void {
    this.#onStoreGrew = listener;
  }

  /** Settles when the result's encoding (if one is scheduled or running) has finished. */
  encodingSettled(resultId: string): Promise<void> {
    return this.#encodings.settled(resultId);
  }

  async hasResult(resultId: string): Promise<boolean> {
    checkResultId(resultId);
    return this.#files.has(resultId);
  }

  async resultInfo(resultId: string): Promise<ResultInfo> {
    const { open, release } = await this.#acquire(resultId);
    release();
    return open.info;
  }

  async dropResult(resultId: string): Promise<void> {
    this.#connections.checkOpen();
    checkResultId(resultId);
    await this.#encodings.drop(resultId);
    // Taken out at once: an attach of this id from now on waits, then finds the file gone.
    await this.#attached.drop(resultId, () => this.#files.remove(resultId));
  }

  /**
   * Runs trusted code on a connection of the instance that runs users' SQL (the catalogs; no file
   * is readable to it), or the team's own when teams are walled apart; never user SQL. Not part
   * of SqlEngine: the service asks for tables through `tables`.
   */
  withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>, team?: string): Promise<T> {
    return this.#connections.withTrusted(fn, 'users', team);
  }

  /** The same on the files instance (tests read its settings). */
  withFilesConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return this.#connections.withTrusted(fn, 'files');
  }

  /** Trims of the two instances so far (memory/memoryTrim.ts; for tests). */
  get memoryTrims(): { users: number; files: number } {
    return { users: this.#connections.use('users').trims, files: this.#connections.use('files').trims };
  }

  /** Idempotent: a second call (a stop at once during a graceful close) waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#connections.markClosed();
    this.#teams?.markClosed();
    this.#closeSignal.abort(new EngineError('canceled', 'Query was canceled: the service is stopping'));
    this.#bounds.wakeAll();
    await this.#connections.close(() => this.#attached.settled());
  }
}
