// One execution, step by step: admission (memory/resourceBounds.ts), the sandbox's check of every
// statement (sandbox/checkAccess.ts), the user's statements in order (inside the quota transaction
// when they store rows in the team's schema: storageQuota.ts), the last statement streamed into a
// temporary result file on the files instance (results/resultFiles.ts), its encodings written
// (encoding/encodings.ts), and the file published under its id. A stop (cancel, timeout, close)
// is checked before each step and interrupts whatever runs (stopper.ts); a failure at any step
// removes what was written and publishes nothing.
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { StatementType, type DuckDBConnection, type DuckDBDataChunk, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { EngineError, type ExecuteOptions, type ResultInfo } from '../types.ts';
import { toEngineError } from '../duckdbError.ts';
import { sqlIdent, sqlString } from '../../sql.ts';
import { splitStatements, type SqlStatement } from '../sandbox/splitStatements.ts';
import { dialectSessionSql, inDuckDbSql } from '../dialect/index.ts';
import { checkAccess, withoutHiddenHints, type CheckedAccess } from '../sandbox/checkAccess.ts';
import type { AccessContext } from '../sandbox/accessPolicy.ts';
import { StorageQuota } from './storageQuota.ts';
import { Stopper } from './stopper.ts';
import { isQueryError, prepareStatement, runHeld, runStatement, storeLast } from './statements.ts';
import { WideRead } from '../memory/wideRead.ts';
import { checkpoint, checkResultId, detachRetrying, finishResult, type ResultFiles } from '../results/resultFiles.ts';
import { boundsError, type ResourceBounds } from '../memory/resourceBounds.ts';
import type { TeamTableSizes } from '../tables/teamStorage.ts';
import type { Encodings } from '../encoding/encodings.ts';
import type { Connections } from '../connections.ts';
import type { SharedObjects } from '../teams/sharedObjects.ts';

const TEAM_NAME = /^[A-Za-z0-9_-]{1,100}$/;

/** When a result's encodings are written (see encoding/encodings.ts). */
export interface EncodePolicy {
  /** Results smaller than this (result_set_bytes) are not encoded. */
  minBytes: number;
  /** Encodings are written as the execution's last step (else in the background when idle). */
  atCompletion: boolean;
  /** Larger results are encoded in the background even so. */
  atCompletionMax: { bytes: number; rows: number };
  /** Results from this size on are encoded after a trim of both instances. */
  trimBeforeBytes: number;
}

/** What an execution runs on: the engine's rooms. */
export interface ExecutionContext {
  connections: Connections;
  bounds: ResourceBounds;
  /** Aborted when the engine closes: executions waiting for memory room stop waiting. */
  closeSignal: AbortSignal;
  files: ResultFiles;
  encodings: Encodings;
  sizes: TeamTableSizes;
  /** The file of the team's `service` catalog, watched while SQL writes the team's schema. */
  serviceDatabase: (team: string) => string;
  /** With teams walled apart: other teams' public objects, as snapshots (teams/sharedObjects.ts). */
  shared: SharedObjects | undefined;
  systemViews: ReadonlySet<string>;
  /** Creates `service.<team>` once. */
  teamSchema(team: string): Promise<void>;
  /** Writes of rows too wide for the files instance's memory. */
  wide: WideRead;
  encode: EncodePolicy;
}

/** The user's SQL ran: its last statement prepared, and its rows if it already ran. */
interface Ran {
  last: SqlStatement;
  prepared: DuckDBPreparedStatement;
  held: DuckDBDataChunk[] | undefined;
}

export async function runExecution(ctx: ExecutionContext, sql: string, opts: ExecuteOptions): Promise<ResultInfo> {
  ctx.connections.checkOpen();
  checkResultId(opts.resultId);
  if (opts.team !== undefined && !TEAM_NAME.test(opts.team)) {
    throw new EngineError('bad_request', `invalid team name "${opts.team}"`);
  }
  if (ctx.files.has(opts.resultId)) throw new EngineError('bad_request', `result ${opts.resultId} already exists`);
  const statements = inDuckDbSql(splitStatements(sql), opts.dialect ?? 'duckdb');
  if (statements.length === 0) throw new EngineError('syntax', 'line 1:1: the SQL text holds no statement', { line: 1, column: 1 });
  return new Execution(ctx, sql, statements, opts).run();
}

class Execution {
  readonly #ctx: ExecutionContext;
  readonly #sql: string;
  readonly #statements: SqlStatement[];
  readonly #opts: ExecuteOptions;
  readonly #stopper: Stopper;
  readonly #tmpPath: string;
  readonly #catalog: string;
  readonly #alias: string;
  #conn: DuckDBConnection | undefined;
  /** The connection of the files instance writing the result, once it is opened. */
  #files: DuckDBConnection | undefined;
  #attached = false;
  #access: AccessContext | undefined;
  #quota: StorageQuota | undefined;
  #leaveBounds: (() => Promise<void>) | undefined;
  /** Set while the SQL may change the team's tables: ends with their committed size, if measured. */
  #endWrite: ((committedBytes?: number) => void) | undefined;
  #committedBytes: number | undefined;

  constructor(ctx: ExecutionContext, sql: string, statements: SqlStatement[], opts: ExecuteOptions) {
    this.#ctx = ctx;
    this.#sql = sql;
    this.#statements = statements;
    this.#opts = opts;
    this.#stopper = new Stopper(opts.signal, opts.timeoutMs, () => ctx.connections.closed);
    this.#tmpPath = ctx.files.tmpPath(opts.resultId);
    this.#catalog = `w_${opts.resultId}`;
    this.#alias = sqlIdent(this.#catalog);
  }

  async run(): Promise<ResultInfo> {
    this.#conn = await this.#ctx.connections.open('users', this.#opts.team);
    this.#stopper.conns.add(this.#conn);
    try {
      const ran = await this.#runUserSql(this.#conn);
      const info = await this.#writeResultFitting(this.#conn, ran);
      const encoding = await this.#encode(info);
      await this.#publish(info, encoding);
      return info;
    } catch (err) {
      throw await this.#failed(err);
    } finally {
      await this.#end();
    }
  }

  /** Admission, the sandbox, the statements before the last, the last prepared (and run inside a quota transaction). */
  async #runUserSql(conn: DuckDBConnection): Promise<Ran> {
    const { opts, sql } = { opts: this.#opts, sql: this.#sql };
    const check = (): void => this.#stopper.check();
    check();
    const signal = AbortSignal.any([this.#stopper.waiting.signal, this.#ctx.closeSignal]);
    this.#leaveBounds = await this.#ctx.bounds.enter(opts.bounds, signal, opts.team);
    check();
    if (opts.team !== undefined) await this.#ctx.teamSchema(opts.team);
    check();
    await conn.run(dialectSessionSql(opts.dialect ?? 'duckdb'));
    const checked = await this.#check(conn);
    this.#access = checked.ctx;
    if (checked.changesTeamTables && opts.team !== undefined) {
      const endWrite = this.#ctx.sizes.beginWrite(opts.team);
      const team = opts.team;
      this.#endWrite = (bytes) => {
        endWrite(bytes);
        this.#ctx.shared?.changed(team);
      };
    }
    // SQL that stores rows in the team's schema runs in one transaction, kept only if the
    // team's storage stays within its quota (storageQuota.ts).
    if (checked.writesTeamSchema && opts.team !== undefined && opts.storageQuota !== undefined) {
      this.#quota = await StorageQuota.begin(conn, opts.team, opts.storageQuota, this.#ctx.serviceDatabase(opts.team));
    }
    const last = this.#statements.at(-1)!;
    for (const st of this.#statements.slice(0, -1)) {
      check();
      await runStatement(conn, sql, st);
    }
    check();
    const prepared = await prepareStatement(conn, sql, last);
    check();
    // A last statement that writes runs inside the transaction; its few rows (a count, a
    // plan) are held until the result file can be written, after the commit.
    let held: DuckDBDataChunk[] | undefined;
    if (this.#quota !== undefined) {
      if (prepared.statementType !== StatementType.SELECT) held = await runHeld(prepared, sql, last);
      check();
      this.#committedBytes = await this.#quota.settle();
      this.#quota = undefined;
    }
    return { last, prepared, held };
  }

  /**
   * The sandbox's check; with teams walled apart, then the other teams' objects the SQL may read
   * made current in the team's instance, and those it may no longer read taken out of it.
   */
  async #check(conn: DuckDBConnection): Promise<CheckedAccess> {
    const { opts, ctx } = { opts: this.#opts, ctx: this.#ctx };
    if (ctx.shared === undefined || opts.team === undefined) return checkAccess(conn, this.#sql, this.#statements, opts, ctx.systemViews);
    const canRead = opts.canRead ?? ((): boolean => false);
    const named: [string, string][] = [];
    const recording = (owner: string, name: string): boolean => {
      const ok = canRead(owner, name);
      if (ok) named.push([owner, name]);
      return ok;
    };
    const checked = await checkAccess(conn, this.#sql, this.#statements, { ...opts, canRead: recording, walled: true }, ctx.systemViews);
    this.#stopper.check();
    await ctx.shared.prepare(opts.team, canRead, named);
    return checked;
  }

  /**
   * Writes the result; rows too wide for the files instance's memory (a value of tens of MB) are
   * written again alone with the engine's whole memory (memory/wideRead.ts): the last statement, a
   * query whose rows nobody saw yet, is run again for it.
   */
  async #writeResultFitting(conn: DuckDBConnection, ran: Ran): Promise<ResultInfo> {
    try {
      return await this.#writeResult(ran);
    } catch (err) {
      if (!WideRead.isMemoryShort(err) || isQueryError(err) || ran.held !== undefined || this.#stopper.stopped) throw err;
      await this.#discardWrite();
      this.#stopper.check();
      const prepared = await prepareStatement(conn, this.#sql, ran.last);
      const signal = AbortSignal.any([this.#stopper.waiting.signal, this.#ctx.closeSignal]);
      return this.#ctx.connections.withTrusted((files) => this.#ctx.wide.run(files, () => this.#writeResult({ ...ran, prepared }), signal), 'files');
    }
  }

  /** Drops what a failed write of the result left: its file attached, its connection. */
  async #discardWrite(): Promise<void> {
    const files = this.#files;
    if (files === undefined) return;
    if (this.#attached) await detachRetrying(files, this.#alias);
    this.#attached = false;
    this.#stopper.conns.delete(files);
    this.#ctx.connections.end(files);
    this.#files = undefined;
    await this.#ctx.files.removeUnfinished(this.#opts.resultId);
  }

  /** Streams the rows into the temporary result file, measures them, writes `meta`, checkpoints. */
  async #writeResult(ran: Ran): Promise<ResultInfo> {
    const check = (): void => this.#stopper.check();
    check();
    await rm(this.#tmpPath, { force: true });
    await rm(`${this.#tmpPath}.wal`, { force: true });
    check();
    const files = await this.#ctx.connections.open('files');
    this.#files = files;
    this.#stopper.conns.add(files);
    check();
    await files.run(`ATTACH ${sqlString(this.#tmpPath)} AS ${this.#alias}`);
    this.#attached = true;
    check();
    const columnNames = await storeLast(files, this.#sql, ran.last, ran.prepared, this.#catalog, ran.held);
    check();
    const info = await finishResult(files, this.#alias, columnNames, this.#opts.maxResultBytes, (n) => this.#ctx.encodings.chunkRows(n));
    check();
    await checkpoint(files, this.#alias, this.#tmpPath);
    return info;
  }

  /** Whether the encodings are written now (see EncodePolicy). */
  #atCompletion(info: ResultInfo): boolean {
    const p = this.#ctx.encode;
    return info.bytes >= p.minBytes && p.atCompletion && info.bytes <= p.atCompletionMax.bytes && info.rowCount <= p.atCompletionMax.rows;
  }

  /**
   * Encoded before it completes: the first read of a result is served from files, as every later
   * one (nothing competes with it), and no encoder runs beside the readers. A very large result is
   * encoded later, when idle: its encoding would take longer than reading it once, and would
   * count toward its execution's timeout.
   */
  async #encode(info: ResultInfo): Promise<string | undefined> {
    if (!this.#atCompletion(info)) return undefined;
    if (info.bytes >= this.#ctx.encode.trimBeforeBytes) {
      // What the query read and wrote is evicted before the encoding reads the result back: the
      // encoder's memory comes instead of it, not on top (only when nothing else runs).
      await (this.#conn === undefined ? undefined : this.#ctx.connections.useOf(this.#conn))?.trim(1);
      await this.#ctx.connections.use('files').trim(1);
    }
    const stopper = this.#stopper;
    const encoding = await this.#ctx.encodings.writeStored(this.#alias, this.#opts.resultId, info, stopper.conns, () => stopper.stopped);
    stopper.check();
    return encoding;
  }

  async #publish(info: ResultInfo, encoding: string | undefined): Promise<void> {
    const id = this.#opts.resultId;
    await this.#files!.run(`DETACH ${this.#alias}`);
    this.#attached = false;
    if (existsSync(`${this.#tmpPath}.wal`)) throw new EngineError('internal', `result ${id}: its write-ahead log was not checkpointed`);
    await rename(this.#tmpPath, this.#ctx.files.path(id));
    const encodings = this.#ctx.encodings;
    if (encoding !== undefined) await encodings.publish(id, encoding, info);
    // Failed at completion: its pages are built per request (not retried in the background).
    else if (this.#atCompletion(info)) encodings.markFailed(id);
    else if (info.bytes >= this.#ctx.encode.minBytes) encodings.schedule(id);
  }

  /** Undoes what was written; the error to report. */
  async #failed(err: unknown): Promise<EngineError> {
    this.#stopper.stopRepeating();
    const overflow = this.#quota?.overflowError();
    if (this.#quota !== undefined) await this.#quota.abandon();
    if (this.#attached && this.#files !== undefined) await detachRetrying(this.#files, this.#alias);
    await this.#ctx.files.removeUnfinished(this.#opts.resultId);
    if (overflow !== undefined) return overflow;
    const stopped = this.#stopper.error;
    if (stopped) return stopped;
    const mapped = boundsError(toEngineError(err), this.#opts.bounds);
    return this.#access === undefined ? mapped : withoutHiddenHints(mapped, this.#access);
  }

  async #end(): Promise<void> {
    this.#stopper.dispose();
    this.#endWrite?.(this.#committedBytes);
    await this.#leaveBounds?.().catch(() => undefined);
    if (this.#conn !== undefined) this.#ctx.connections.end(this.#conn);
    if (this.#files !== undefined) this.#ctx.connections.end(this.#files);
    this.#ctx.encodings.touch();
  }
}
