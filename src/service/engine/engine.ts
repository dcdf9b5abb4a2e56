// The SqlEngine over one embedded DuckDB instance.
//
// Storage: each result is its own DuckDB file dataDir/results/<id>.duckdb holding `result`
// (columns c0..cN-1, so any column names work, duplicates included) and `meta` (ResultInfo as
// JSON). The user's last statement runs as `CREATE TABLE .. AS SELECT * FROM (<sql>)` straight
// into that file: rows never pass through JS, the query's ORDER BY survives (insertion order is
// preserved), and rowid is the row's ordinal, so `rowid BETWEEN a AND b` reads only the row
// groups of a page. The file is written under a .tmp name and renamed when complete, so a
// stored result is either whole or absent; dropping it is deleting the file.
//
// Sandbox: every statement of user SQL is judged before DuckDB binds it (sandbox.ts,
// accessPolicy.ts), under an engine-wide lockdown (lockdown.ts). A denied statement fails the
// execution with kind 'semantic' before any statement of it ran.
//
// Threads: DuckDB's `threads` setting is per instance ("cannot be set locally"), so
// ExecuteOptions.threads cannot give one execution more threads than another; the instance
// runs with defaultThreads and the option is accepted and ignored. A second instance for the
// large tier would need its own copy of every database (a DuckDB file is opened read-write by
// one instance only), and the task scheduler already shares the instance's threads among the
// queries running at once, so a lone large query gets all of them anyway.
import { existsSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { StatementType, type DuckDBConnection, type DuckDBInstance, type DuckDBPreparedStatement, type DuckDBType } from '@duckdb/node-api';
import {
  EngineError,
  type CsvPage,
  type EngineErrorOptions,
  type ExecuteOptions,
  type Page,
  type PageRequest,
  type ResultInfo,
  type SqlEngine,
} from './types.ts';
import { splitStatements, type SqlStatement } from './splitStatements.ts';
import { toEngineError, type SqlOrigin } from './duckdbError.ts';
import { sqlIdent, sqlString } from './encode.ts';
import { protocolTypeName } from './typeNames.ts';
import { headerBytes, planPage, rowBytesSql, type StoredColumns } from './pageQuery.ts';
import { Sandbox } from './sandbox.ts';
import { hideUnreadableHints, type AccessContext } from './accessPolicy.ts';
import { lineColumnAt } from './sqlPosition.ts';

const RESULT_ID = /^[A-Za-z0-9_-]{1,100}$/;
const TEAM_NAME = /^[A-Za-z0-9_-]{1,100}$/;
/** Stored results kept attached for paging; older idle ones are detached. */
const MAX_ATTACHED = 32;

interface OpenResult {
  alias: string;
  info: ResultInfo;
  columns: StoredColumns;
  refs: number;
  lastUsed: number;
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

/** Extra statements are the user's own (e.g. CREATE TABLE then SELECT); run them in order. */
async function runStatement(conn: DuckDBConnection, sql: string, st: SqlStatement): Promise<void> {
  try {
    await conn.run(st.text);
  } catch (err) {
    throw toEngineError(err, originOf(sql, st, st.text, 0));
  }
}

function sqlTypeOf(type: DuckDBType): string {
  return type.alias?.toUpperCase() === 'JSON' ? 'JSON' : type.toString();
}

export class DuckDbEngine implements SqlEngine {
  readonly #instance: DuckDBInstance;
  readonly #resultsDir: string;
  readonly #open = new Map<string, Promise<OpenResult>>();
  readonly #running = new Set<DuckDBConnection>();
  #closed = false;

  readonly #systemViews: ReadonlySet<string>;

  /** `systemViews`: DuckDB's built-in catalog views, which user SQL may not read. */
  constructor(instance: DuckDBInstance, dataDir: string, systemViews: ReadonlySet<string> = new Set()) {
    this.#instance = instance;
    this.#resultsDir = join(dataDir, 'results');
    this.#systemViews = systemViews;
  }

  /** Refuses the user's SQL before any of it runs when one statement is not allowed. */
  async #checkAccess(conn: DuckDBConnection, sql: string, statements: SqlStatement[], opts: ExecuteOptions): Promise<AccessContext> {
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
    return ctx;
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

    const conn = await this.#instance.connect();
    this.#running.add(conn);
    let stop: 'canceled' | 'timeout' | undefined;
    const interrupt = (why: 'canceled' | 'timeout'): void => {
      if (stop) return;
      stop = why;
      conn.interrupt();
    };
    const onAbort = (): void => interrupt('canceled');
    opts.signal.addEventListener('abort', onAbort, { once: true });
    if (opts.signal.aborted) stop = 'canceled';
    const timer = opts.timeoutMs !== undefined ? setTimeout(() => interrupt('timeout'), opts.timeoutMs) : undefined;
    const check = (): void => {
      if (stop) throw stopError(stop, opts.timeoutMs);
    };

    const tmpPath = join(this.#resultsDir, `${opts.resultId}.tmp.duckdb`);
    const alias = sqlIdent(`w_${opts.resultId}`);
    let attached = false;
    let access: AccessContext | undefined;
    try {
      check();
      if (opts.team !== undefined) await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(opts.team)}`);
      access = await this.#checkAccess(conn, sql, statements, opts);
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
      await rm(tmpPath, { force: true });
      await rm(`${tmpPath}.wal`, { force: true });
      await conn.run(`ATTACH ${sqlString(tmpPath)} AS ${alias}`);
      attached = true;
      const columnNames = await this.#store(conn, sql, last, prepared, alias);
      check();
      const info = await this.#finish(conn, alias, columnNames, opts.maxResultBytes);
      check();
      await conn.run(`DETACH ${alias}`);
      attached = false;
      await rename(tmpPath, this.#path(opts.resultId));
      return info;
    } catch (err) {
      if (attached) await conn.run(`DETACH ${alias}`).catch(() => undefined);
      await rm(tmpPath, { force: true }).catch(() => undefined);
      await rm(`${tmpPath}.wal`, { force: true }).catch(() => undefined);
      if (stop) throw stopError(stop, opts.timeoutMs);
      const mapped = toEngineError(err);
      throw access === undefined ? mapped : withoutHiddenHints(mapped, access);
    } finally {
      if (timer) clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      this.#running.delete(conn);
      conn.closeSync();
    }
  }

  /** Stores the last statement's rows as `result`; returns the column names. */
  async #store(
    conn: DuckDBConnection,
    sql: string,
    last: SqlStatement,
    prepared: DuckDBPreparedStatement,
    alias: string,
  ): Promise<string[]> {
    const names = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i));
    if (prepared.statementType === StatementType.SELECT && names.length > 0) {
      const prefix = `CREATE TABLE ${alias}.main.result AS SELECT * FROM (\n`;
      const ran = `${prefix}${last.text}\n) AS __t(${names.map((_, i) => `c${i}`).join(', ')})`;
      try {
        await conn.run(ran);
        return names;
      } catch (err) {
        const mapped = toEngineError(err, originOf(sql, last, ran, prefix.length));
        // Statements typed SELECT that cannot be a subquery (rare) are stored by streaming.
        if (mapped.kind !== 'syntax') throw mapped;
      }
    }
    // The table is created before streaming: another query on this connection would end the stream.
    const types = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnType(i));
    if (types.length > 0) {
      await conn.run(`CREATE TABLE ${alias}.main.result (${types.map((t, i) => `c${i} ${sqlTypeOf(t)}`).join(', ')})`);
    }
    let result;
    try {
      result = await prepared.stream();
    } catch (err) {
      throw toEngineError(err, originOf(sql, last, last.text, 0));
    }
    if (types.length === 0) return [];
    const appender = await conn.createAppender('result', 'main', alias.slice(1, -1).replaceAll('""', '"'));
    try {
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        appender.appendDataChunk(chunk);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
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

  async #acquire(id: string): Promise<OpenResult> {
    this.#checkOpen();
    checkResultId(id);
    let pending = this.#open.get(id);
    if (!pending) {
      pending = this.#attach(id);
      this.#open.set(id, pending);
      pending.catch(() => this.#open.delete(id));
    }
    const open = await pending;
    open.refs += 1;
    open.lastUsed = performance.now();
    return open;
  }

  #release(open: OpenResult): void {
    open.refs -= 1;
  }

  async #attach(id: string): Promise<OpenResult> {
    const path = this.#path(id);
    if (!existsSync(path)) throw new EngineError('not_found', `no stored result ${id}`);
    await this.#evictIdle();
    const alias = sqlIdent(`r_${id}`);
    const conn = await this.#instance.connect();
    try {
      await conn.run(`ATTACH IF NOT EXISTS ${sqlString(path)} AS ${alias} (READ_ONLY)`);
      const meta = await conn.runAndReadAll(`SELECT info FROM ${alias}.main.meta`);
      const info = parseInfo(String(meta.getRowsJson()[0]?.[0]));
      let types: DuckDBType[] = [];
      if (info.columnNames.length > 0) {
        types = (await conn.runAndReadAll(`SELECT * FROM ${alias}.main.result LIMIT 0`)).columnTypes();
      }
      const columns: StoredColumns = {
        table: `${alias}.main.result`,
        names: info.columnNames,
        protocolTypes: info.columnTypes,
        types,
        rowCount: info.rowCount,
      };
      return { alias, info, columns, refs: 0, lastUsed: performance.now() };
    } finally {
      conn.closeSync();
    }
  }

  async #evictIdle(): Promise<void> {
    if (this.#open.size < MAX_ATTACHED) return;
    const settled = await Promise.all(
      [...this.#open.entries()].map(async ([id, p]) => [id, await p.catch(() => undefined)] as const),
    );
    const idle = settled
      .filter((e): e is readonly [string, OpenResult] => e[1] !== undefined && e[1].refs === 0)
      .sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [id, open] of idle.slice(0, this.#open.size - MAX_ATTACHED + 1)) {
      this.#open.delete(id);
      await this.#detach(open.alias);
    }
  }

  async #detach(alias: string): Promise<void> {
    const conn = await this.#instance.connect();
    try {
      await conn.run(`DETACH DATABASE IF EXISTS ${alias}`);
    } finally {
      conn.closeSync();
    }
  }

  async #runPage(id: string, req: PageRequest, format: 'json' | 'csv') {
    const open = await this.#acquire(id);
    try {
      const plan = planPage(open.columns, req, format);
      const conn = await this.#instance.connect();
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
        conn.closeSync();
      }
    } finally {
      this.#release(open);
    }
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

  async csvPage(resultId: string, req: PageRequest): Promise<CsvPage> {
    const r = await this.#runPage(resultId, req, 'csv');
    const header = r.plan.columnNames.map(csvHeaderField).join(',');
    return { csv: `${header}\n${r.body}${r.rowCount > 0 ? '\n' : ''}`, rowCount: r.rowCount, totalRowCount: r.total };
  }

  async hasResult(resultId: string): Promise<boolean> {
    checkResultId(resultId);
    return existsSync(this.#path(resultId));
  }

  async resultInfo(resultId: string): Promise<ResultInfo> {
    const open = await this.#acquire(resultId);
    this.#release(open);
    return open.info;
  }

  async dropResult(resultId: string): Promise<void> {
    this.#checkOpen();
    checkResultId(resultId);
    const pending = this.#open.get(resultId);
    if (pending) {
      this.#open.delete(resultId);
      const open = await pending.catch(() => undefined);
      if (open) {
        // Let pages being served finish before the file goes away.
        for (let i = 0; i < 100 && open.refs > 0; i += 1) await new Promise((r) => setTimeout(r, 20));
        await this.#detach(open.alias);
      }
    }
    await rm(this.#path(resultId), { force: true });
    await rm(`${this.#path(resultId)}.wal`, { force: true });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const conn of this.#running) conn.interrupt();
    for (let i = 0; i < 100 && this.#running.size > 0; i += 1) await new Promise((r) => setTimeout(r, 20));
    this.#instance.closeSync();
  }

  /** Leftovers of executions that were running when the process died. */
  static async removeIncomplete(resultsDir: string): Promise<void> {
    for (const name of await readdir(resultsDir)) {
      if (name.includes('.tmp.duckdb')) await rm(join(resultsDir, name), { force: true });
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
