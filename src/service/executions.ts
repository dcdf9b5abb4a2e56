import { monotonicFactory } from 'ulid';
import type { Performance, ParameterValue } from '../protocol/index.ts';
import { holdsResult } from '../protocol/index.ts';
import { EngineError, type SqlClassification, type SqlEngine } from './engine/types.ts';
import type { Clock } from './clock.ts';
import type { JsonStore } from './store.ts';
import { TeamQueues } from './teamQueues.ts';
import { resolveTier, type ServiceSettings } from './settings.ts';
import type { ExecutionHooks } from './limits/hooks.ts';
import type { RetentionTarget } from './limits/retention.ts';
import type { ResultStoreTarget } from './limits/resultStore.ts';
import { ReadLeases } from './limits/readLeases.ts';
import { tierPolicy } from './limits/tiers.ts';
import { ViewRefreshError } from './views/errors.ts';
import { ForgottenExecutions, forgetAt } from './forgotten.ts';
import { baseOf, ExecutionRecordSchema, type ExecutionFailure, type ExecutionRecord } from './executionRecord.ts';

export interface Submission {
  team: string;
  sql: string;
  queryId: number;
  queryVersion: number;
  parameters: Record<string, ParameterValue>;
  performance: Performance;
  purpose?: 'interactive' | 'view';
  viewId?: string;
}

const DAY_MS = 86_400_000;

/** Why executions found unfinished at start-up are FAILED: the process that ran them is gone. */
export const RESTART_MESSAGE =
  'The service restarted while this execution was pending or running; its result was not stored. Submit it again.';

/**
 * The executions state machine (protocol.md section 2):
 * PENDING -> EXECUTING -> COMPLETED | COMPLETED_PARTIAL | FAILED; PENDING | EXECUTING -> CANCELLED;
 * COMPLETED* -> EXPIRED at expires_at (checked lazily on every read, and by a periodic sweep).
 * Every transition is persisted before it is reported, so a restart on the same data directory
 * finds what clients were told.
 */
export class Executions {
  readonly #records = new Map<string, ExecutionRecord>();
  readonly #queues = new TeamQueues();
  readonly #aborts = new Map<string, AbortController>();
  readonly #runs = new Set<Promise<void>>();
  /** Executions being moved to EXPIRED: settles when the state is on disk and the result dropped. */
  readonly #expiring = new Map<string, Promise<void>>();
  readonly #ulid = monotonicFactory();
  readonly #engine: SqlEngine;
  readonly #store: JsonStore<ExecutionRecord>;
  readonly #clock: Clock;
  readonly #settings: ServiceSettings;
  readonly #hooks: ExecutionHooks;
  /** When each stored result was last read (this process's life; its end time before that). */
  readonly #lastRead = new Map<string, number>();
  readonly #onStored: (() => void) | undefined;
  readonly #forgotten: ForgottenExecutions;
  /**
   * Expired executions whose stored result is known to be gone (an id never gets one again): each
   * sweep asks the engine only about the others.
   */
  readonly #resultGone = new Set<string>();
  #closing = false;
  /** The results being read, which the result store's bound does not drop (limits/readLeases.ts). */
  readonly readLeases: ReadLeases;

  /**
   * `onStored`: called after a result is stored and its execution completed (the result store's
   * bound is checked). `forgotten`: what is remembered of forgotten records (persisted by the service).
   */
  constructor(deps: { engine: SqlEngine; store: JsonStore<ExecutionRecord>; clock: Clock; settings: ServiceSettings; hooks?: ExecutionHooks; onStored?: () => void; forgotten?: ForgottenExecutions }) {
    this.#hooks = deps.hooks ?? {};
    this.#forgotten = deps.forgotten ?? new ForgottenExecutions();
    this.#onStored = deps.onStored;
    this.#engine = deps.engine;
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#settings = deps.settings;
    this.readLeases = new ReadLeases(deps.settings.limits.result_read_lease_ms, () => this.#clock.now());
  }

  /**
   * Loads persisted executions; the unfinished ones become FAILED (cost 0) with RESTART_MESSAGE.
   * Records past their retention (`limits.execution_record_retention_days`) are deleted instead.
   */
  async load(): Promise<void> {
    await this.#forgotten.load();
    const loaded = await this.#store.loadAll((raw) => ExecutionRecordSchema.parse(raw));
    const now = this.#clock.now();
    const stale: ExecutionRecord[] = [];
    for (const rec of loaded.values()) {
      if ((forgetAt(rec, this.#recordRetentionDays()) ?? Infinity) <= now) {
        stale.push(rec);
      } else if (rec.state === 'QUERY_STATE_PENDING' || rec.state === 'QUERY_STATE_EXECUTING') {
        const failed: ExecutionRecord = {
          ...baseOf(rec),
          state: 'QUERY_STATE_FAILED',
          ...(rec.state === 'QUERY_STATE_EXECUTING' ? { startedAt: rec.startedAt } : {}),
          endedAt: now,
          costCredits: 0,
          error: { message: RESTART_MESSAGE },
        };
        this.#records.set(rec.id, failed);
        await this.#store.put(rec.id, failed);
        // A result the engine stored just before the crash belongs to no one now.
        await this.#engine.dropResult(rec.id).catch(() => {});
      } else {
        this.#records.set(rec.id, rec);
      }
    }
    await this.#drop(stale);
  }

  /** The 404 message for an id the caller cannot see (says so when it may be a forgotten one). */
  notFoundMessage(id: string): string {
    return this.#forgotten.notFoundMessage(id, this.#recordRetentionDays());
  }

  maxInflight(team: string): number {
    return this.#settings.teams.find((t) => t.name === team)?.plan.max_inflight ?? 3;
  }

  running(team: string): number {
    return this.#queues.running(team);
  }

  queuePosition(rec: ExecutionRecord): number | undefined {
    return this.#queues.position(rec.team, rec.id);
  }

  /**
   * Records the execution (persisted before this resolves) and queues it. Its place in the team's
   * queue is taken at once, when its id is drawn, so queue order is id (submission) order however
   * long the writes take; it cannot start, and nobody can see it, before its PENDING record is on
   * disk. A refused (402) or unrecorded submission leaves the queue again.
   */
  async submit(sub: Submission): Promise<ExecutionRecord> {
    const submittedAt = this.#clock.now();
    const rec: ExecutionRecord = { id: this.#ulid(Math.floor(submittedAt)), state: 'QUERY_STATE_PENDING', submittedAt, ...sub };
    this.#queues.enqueue(rec.team, rec.id);
    const leave = (): void => {
      this.#queues.removePending(rec.team, rec.id);
      this.#pump(rec.team);
    };
    try {
      // Refused submissions (402) are never recorded. The credit check itself is synchronous, so
      // it is made in id order too.
      await this.#hooks.admit?.(rec);
    } catch (err) {
      leave();
      throw err;
    }
    try {
      await this.#store.put(rec.id, rec);
    } catch (err) {
      leave();
      await this.#hooks.abandon?.(rec);
      throw err;
    }
    this.#records.set(rec.id, rec);
    this.#queues.markReady(rec.team, rec.id);
    this.#pump(rec.team);
    return rec;
  }

  /** The record, moved to EXPIRED first when its retention is over. */
  get(id: string): ExecutionRecord | undefined {
    const rec = this.#records.get(id);
    if (rec === undefined) return undefined;
    return this.#expireIfDue(rec);
  }

  /** Executions of a query submitted by a team, newest first. */
  ofQuery(team: string, queryId: number): ExecutionRecord[] {
    const out: ExecutionRecord[] = [];
    for (const rec of this.#records.values()) if (rec.team === team && rec.queryId === queryId) out.push(this.#expireIfDue(rec));
    return out.sort((a, b) => b.submittedAt - a.submittedAt || (a.id < b.id ? 1 : -1));
  }

  /** Judges `sql` as an execution of `team` would be judged (same lists, same sharing), running none of it. */
  classify(team: string, sql: string): Promise<SqlClassification> {
    return this.#engine.classify(sql, { team, ...(this.#hooks.canRead === undefined ? {} : { canRead: this.#hooks.canRead }) });
  }

  /**
   * Cancels a waiting or running execution: true when it is (now or already) CANCELLED, false when it
   * had already finished otherwise. A running one is reported CANCELLED at once; its engine slot is
   * released when DuckDB has actually stopped.
   */
  async cancel(id: string): Promise<boolean> {
    const rec = this.#records.get(id);
    if (rec === undefined) return false;
    if (rec.state === 'QUERY_STATE_CANCELLED') return true;
    if (rec.state !== 'QUERY_STATE_PENDING' && rec.state !== 'QUERY_STATE_EXECUTING') return false;
    const now = this.#clock.now();
    const canceled: ExecutionRecord =
      rec.state === 'QUERY_STATE_EXECUTING'
        ? // It held an engine slot and computed: it costs what it would have cost (documented decision).
          { ...baseOf(rec), state: 'QUERY_STATE_CANCELLED', startedAt: rec.startedAt, cancelledAt: now, costCredits: this.#cost(rec.performance) }
        : { ...baseOf(rec), state: 'QUERY_STATE_CANCELLED', cancelledAt: now, costCredits: 0 };
    this.#records.set(id, canceled);
    if (rec.state === 'QUERY_STATE_PENDING') {
      this.#queues.removePending(rec.team, id);
      this.#pump(rec.team);
    } else {
      this.#aborts.get(id)?.abort();
    }
    await this.#store.put(id, canceled);
    await this.#finished(canceled);
    return true;
  }

  /**
   * What the RetentionSweeper works on: a result is dropped only once its EXPIRED state is on disk
   * (a crash in between leaves an EXPIRED execution with a leftover file, which a later sweep
   * deletes; never a COMPLETED one without its result).
   */
  /** A page of the result was read: it is the last to be dropped when the store is over its bound. */
  noteRead(id: string): void {
    this.#lastRead.set(id, this.#clock.now());
  }

  /**
   * What the result store's bound works on (limits/resultStore.ts): the results held, with when
   * each was last read, and the move of one to EXPIRED before its time (its result dropped after).
   */
  resultStoreTarget(): ResultStoreTarget {
    return {
      held: () =>
        [...this.#records.values()].flatMap((r) => (holdsResult(r) ? [{ id: r.id, lastUsed: this.#lastRead.get(r.id) ?? r.endedAt }] : [])),
      expire: async (id) => {
        const rec = this.#records.get(id);
        if (rec === undefined || !holdsResult(rec)) return;
        this.#expire(rec, Math.min(rec.expiresAt, this.#clock.now()));
        await this.#expiring.get(id);
      },
    };
  }

  retentionTarget(): RetentionTarget {
    return {
      executions: () =>
        [...this.#records.values()].map((r) => {
          const forget = forgetAt(r, this.#recordRetentionDays());
          return { id: r.id, state: r.state, ...('expiresAt' in r ? { expiresAt: r.expiresAt } : {}), ...(forget === undefined ? {} : { forgetAt: forget }) };
        }),
      markExpired: async (id) => {
        const rec = this.#records.get(id);
        if (rec !== undefined) this.#expireIfDue(rec);
        await this.#expiring.get(id);
      },
      hasResult: async (id) => {
        if (this.#resultGone.has(id)) return false;
        const has = await this.#engine.hasResult(id);
        if (!has) this.#resultGone.add(id);
        return has;
      },
      dropResult: async (id) => {
        await this.#expiring.get(id);
        await this.#engine.dropResult(id);
        this.#resultGone.add(id);
      },
      forget: async (ids) => {
        const now = this.#clock.now();
        const due: ExecutionRecord[] = [];
        for (const id of ids) {
          const rec = this.#records.get(id);
          // Checked again: a record is forgotten only when finished, past its time and not still settling.
          if (rec !== undefined && !this.#aborts.has(id) && !this.#expiring.has(id) && (forgetAt(rec, this.#recordRetentionDays()) ?? Infinity) <= now) due.push(rec);
        }
        await this.#drop(due);
      },
    };
  }

  #recordRetentionDays(): number {
    return this.#settings.limits.execution_record_retention_days;
  }

  /**
   * Deletes records past their retention: the stored result first (a crash may have left one), then
   * the record from memory and disk, then what is remembered of them. A crash in between leaves a
   * record the next sweep or start deletes.
   */
  async #drop(recs: readonly ExecutionRecord[]): Promise<void> {
    if (recs.length === 0) return;
    for (const rec of recs) {
      if (rec.state !== 'QUERY_STATE_FAILED' && rec.state !== 'QUERY_STATE_CANCELLED') await this.#engine.dropResult(rec.id).catch(() => {});
      this.#records.delete(rec.id);
      this.#lastRead.delete(rec.id);
      this.readLeases.forget(rec.id);
      this.#resultGone.delete(rec.id);
      await this.#store.remove(rec.id);
    }
    await this.#forgotten.note(recs.map((r) => r.submittedAt));
  }

  /**
   * Stops admitting, interrupts running executions and waits for them to settle (the engine stops
   * a statement promptly, even one that had not started yet). Their records stay EXECUTING on disk
   * (nothing is written for them), so the next start marks them FAILED.
   */
  async close(): Promise<void> {
    this.#closing = true;
    for (const ac of this.#aborts.values()) ac.abort();
    await Promise.allSettled([...this.#runs]);
    await Promise.allSettled([...this.#expiring.values()]);
    await this.#store.flush();
  }

  #cost(performance: Performance): number {
    return this.#settings.limits.credits_per_execution * resolveTier(this.#settings, performance).cost_factor;
  }

  #expireIfDue(rec: ExecutionRecord): ExecutionRecord {
    if (!holdsResult(rec)) return rec;
    if (this.#clock.now() < rec.expiresAt) return rec;
    return this.#expire(rec, rec.expiresAt);
  }

  /** Moves a result to EXPIRED as of `at`: persisted, then its stored result dropped. */
  #expire(rec: ExecutionRecord & { expiresAt: number; startedAt: number; endedAt: number; costCredits: number }, at: number): ExecutionRecord {
    this.#lastRead.delete(rec.id);
    this.readLeases.forget(rec.id);
    const expired: ExecutionRecord = {
      ...baseOf(rec),
      state: 'QUERY_STATE_EXPIRED',
      startedAt: rec.startedAt,
      endedAt: rec.endedAt,
      expiresAt: at,
      costCredits: rec.costCredits,
    };
    this.#records.set(rec.id, expired);
    // The state change is durable before the result goes (see retentionTarget).
    const persisted = this.#store
      .put(rec.id, expired)
      .then(() => this.#engine.dropResult(rec.id))
      .catch((err: unknown) => console.error(`sluice service: expiring ${rec.id}:`, err))
      .finally(() => this.#expiring.delete(rec.id));
    this.#expiring.set(rec.id, persisted);
    return expired;
  }

  #pump(team: string): void {
    if (this.#closing) return;
    for (const id of this.#queues.admit(team, this.maxInflight(team))) {
      const run = this.#run(id).finally(() => {
        this.#runs.delete(run);
        this.#queues.finish(team, id);
        this.#aborts.delete(id);
        this.#pump(team);
      });
      this.#runs.add(run);
    }
  }

  async #run(id: string): Promise<void> {
    const rec = this.#records.get(id);
    if (rec === undefined || rec.state !== 'QUERY_STATE_PENDING') return;
    const startedAt = this.#clock.now();
    const executing: ExecutionRecord = { ...baseOf(rec), state: 'QUERY_STATE_EXECUTING', startedAt };
    this.#records.set(id, executing);
    const ac = new AbortController();
    this.#aborts.set(id, ac);
    const persisted = this.#store.put(id, executing);
    const tier = tierPolicy(this.#settings, rec.performance, rec.purpose);
    let next: ExecutionRecord;
    try {
      const info = await this.#engine.execute(rec.sql, {
        resultId: id,
        signal: ac.signal,
        threads: tier.threads,
        timeoutMs: tier.timeoutMs,
        bounds: { memoryBytes: tier.memoryLimitBytes, tempBytes: tier.tempLimitBytes, tier: rec.performance },
        maxResultBytes: this.#settings.limits.max_result_bytes,
        team: rec.team,
        dialect: this.#settings.teams.find((t) => t.name === rec.team)?.sql_dialect ?? this.#settings.sql_dialect,
        ...(this.#hooks.canRead === undefined ? {} : { canRead: this.#hooks.canRead }),
        ...(this.#hooks.storageQuota === undefined ? {} : { storageQuota: this.#hooks.storageQuota(rec.team) }),
      });
      // A view refresh stores its result as the view's table before it is reported COMPLETED.
      await this.#hooks.afterRun?.(executing, info);
      const endedAt = this.#clock.now();
      next = {
        ...baseOf(rec),
        state: info.truncated ? 'QUERY_STATE_COMPLETED_PARTIAL' : 'QUERY_STATE_COMPLETED',
        startedAt,
        endedAt,
        expiresAt: endedAt + this.#settings.limits.retention_days * DAY_MS,
        costCredits: this.#cost(rec.performance),
        result: info,
      };
    } catch (err) {
      next = { ...baseOf(rec), state: 'QUERY_STATE_FAILED', startedAt, endedAt: this.#clock.now(), costCredits: 0, error: failureOf(err, id) };
      // Refused by afterRun (storage quota): the engine had stored a result nobody will read.
      if (err instanceof ViewRefreshError) await this.#engine.dropResult(id).catch(() => {});
    }
    await persisted.catch(() => {});
    if (this.#closing) return;
    if (this.#records.get(id)?.state === 'QUERY_STATE_CANCELLED') {
      // Canceled while the engine finished anyway: the result belongs to no one.
      if (next.state !== 'QUERY_STATE_FAILED') await this.#engine.dropResult(id).catch(() => {});
      return;
    }
    // On disk before anyone can see it; the slot is released (in `#pump`'s finally) in the same
    // tick as the state changes, so no status shows a finished execution still holding its slot.
    await this.#store.put(id, next);
    if (this.#records.get(id)?.state === 'QUERY_STATE_CANCELLED') {
      // Canceled while this was being written: the cancel's write is queued after this one and
      // wins on disk too; the result belongs to no one.
      if (next.state !== 'QUERY_STATE_FAILED') await this.#engine.dropResult(id).catch(() => {});
      return;
    }
    this.#records.set(id, next);
    if (holdsResult(next)) {
      this.readLeases.stored(id);
      this.#onStored?.();
    }
    // Not awaited: the slot is released in this tick (see above). The ledger counts the cost in
    // memory at once; its write lands later (the service flushes it on close).
    void this.#finished(next);
  }

  /** Settles the execution's credits; a failure to persist them is logged, not the execution's. */
  async #finished(rec: ExecutionRecord): Promise<void> {
    await this.#hooks.finished?.(rec)?.catch((err: unknown) => console.error(`sluice service: settling ${rec.id}:`, err));
  }
}

/** The error of a FAILED execution; the message carries `line L:C` when the engine located it. */
function failureOf(err: unknown, id: string): ExecutionFailure {
  if (err instanceof ViewRefreshError) return { message: err.message };
  if (!(err instanceof EngineError)) {
    console.error(`sluice service: execution ${id} failed inside the engine:`, err);
    return { message: 'Internal error while executing the query' };
  }
  const { line, column } = err;
  if (line === undefined || column === undefined) return { message: err.message };
  const where = `line ${line}:${column}`;
  return { message: err.message.includes(where) ? err.message : `${err.message} (at ${where})`, line, column };
}
