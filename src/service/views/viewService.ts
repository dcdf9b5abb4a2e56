import type { Performance, UpsertViewRequest, View, ViewList } from '../../protocol/index.ts';
import type { Clock } from '../clock.ts';
import { checkSchedule, nextRunAfter } from './cron.ts';
import { ViewError, ViewRefreshError } from './errors.ts';
import { fullViewName, parseViewName, type ViewName } from './naming.ts';
import type { ViewRegistry } from './registry.ts';
import type { ViewTables } from './tables.ts';
import { LAST_EXECUTIONS, viewView, type ViewRecord } from './viewRecord.ts';

/** How a refresh becomes an ordinary execution: provided by the service that owns executions. */
export interface RefreshRunner {
  /**
   * Submits the view's query (its parameters' defaults) as a refresh execution of the team and
   * returns the execution id. The execution carries `view.id`, so that when it has run,
   * `complete(executionId, view.id, ...)` finds the view even before the id is recorded on it. Throws what a submission throws (CreditLimitError: 402).
   */
  submit(view: ViewRecord, performance: Performance): Promise<string>;
  /** True while the execution is PENDING or EXECUTING. */
  isRunning(executionId: string): boolean;
}

/** What a finished refresh execution produced (ResultInfo of the engine). */
export interface RefreshOutput {
  columnNames: string[];
  bytes: number;
  truncated: boolean;
}

export interface ViewServiceDeps {
  registry: ViewRegistry;
  tables: ViewTables;
  runner: RefreshRunner;
  clock: Clock;
  /** The team's plan storage_quota_bytes. */
  quotaOf(team: string): number;
  /** The team plan's tier: a view's when its upsert names none. */
  tierOf(team: string): Performance;
  /** What else the team stores under the same quota: its uploads and the tables its SQL created. */
  otherStorageBytes?(team: string): Promise<number>;
  newId(): string;
}

/**
 * The five materialized view operations (protocol.md section 3) and what happens when a refresh
 * execution completes. Upsert replaces the view's definition as given (an absent cron_expression
 * means no schedule), creating the view or updating the one that already belongs to the query.
 */
export class ViewService {
  readonly #d: ViewServiceDeps;

  constructor(deps: ViewServiceDeps) {
    this.#d = deps;
  }

  async upsert(team: string, req: UpsertViewRequest): Promise<{ execution_id: string; name: string }> {
    const { registry, tables, clock } = this.#d;
    const now = clock.now();
    if (req.cron_expression !== undefined) checkSchedule(req.cron_expression, now);
    const { name } = parseViewName(req.name, team);
    const byName = registry.get(team, name);
    if (byName !== undefined && byName.queryId !== req.query_id) {
      throw new ViewError(
        409,
        `Conflict: the materialized view ${fullViewName(team, name)} belongs to query ${byName.queryId}, not ${req.query_id}; choose another name or delete that view first`,
      );
    }
    const existing = registry.ofQuery(team, req.query_id);
    const performance = req.performance ?? this.#d.tierOf(team);
    const rec: ViewRecord = {
      id: existing?.id ?? this.#d.newId(),
      team,
      name,
      queryId: req.query_id,
      performance,
      isPrivate: req.is_private ?? false,
      tableSizeBytes: existing?.tableSizeBytes ?? 0,
      lastExecutionIds: existing?.lastExecutionIds ?? [],
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    if (existing?.appliedExecutionId !== undefined) rec.appliedExecutionId = existing.appliedExecutionId;
    if (req.cron_expression !== undefined) {
      rec.cron = req.cron_expression.trim();
      const next = nextRunAfter(rec.cron, now);
      if (next !== undefined) rec.nextRunAt = next;
    }
    const renamed = existing !== undefined && existing.name !== name;
    if (renamed) await tables.rename(team, existing.name, name);
    await registry.put(rec);
    let executionId: string;
    try {
      executionId = await this.#d.runner.submit(rec, performance);
    } catch (err) {
      // Refused (402): the view stays as it was.
      if (existing === undefined) await registry.delete(rec);
      else {
        await registry.put(existing);
        if (renamed) await tables.rename(team, name, existing.name);
      }
      throw err;
    }
    await this.#recordRefresh(rec, executionId);
    return { execution_id: executionId, name: fullViewName(team, name) };
  }

  async refresh(team: string, given: string, performance?: Performance): Promise<{ execution_id: string; sql_id: string }> {
    const rec = this.#own(team, given);
    const executionId = await this.#d.runner.submit(rec, performance ?? rec.performance);
    await this.#recordRefresh(rec, executionId);
    return { execution_id: executionId, sql_id: fullViewName(rec.team, rec.name) };
  }

  /** One view: the team's own, or another team's that is not private. */
  get(team: string, given: string): View {
    const n = parseViewName(given, team);
    const rec = this.#d.registry.get(n.team, n.name);
    if (rec === undefined || (rec.team !== team && rec.isPrivate)) throw notFound(n);
    return viewView(rec);
  }

  /** The team's views; `limit` is at most LIST_LIMIT_MAX (checked by the route). */
  list(team: string, limit: number, offset: number): ViewList {
    const page = this.#d.registry.list(team, limit, offset);
    return page.nextOffset === undefined
      ? { materialized_views: page.views.map(viewView) }
      : { materialized_views: page.views.map(viewView), next_offset: page.nextOffset };
  }

  /** Removes the view and drops its table. */
  async delete(team: string, given: string): Promise<{ message: string }> {
    const rec = this.#own(team, given);
    await this.#d.tables.drop(rec.team, rec.name);
    await this.#d.registry.delete(rec);
    return { message: `Materialized view ${fullViewName(rec.team, rec.name)} deleted` };
  }

  /**
   * Called when a refresh execution has run, before it is reported finished: stores its result as
   * the view's table. Throws ViewRefreshError (the execution then FAILS and the old table stays)
   * when the result is truncated or does not fit the team's storage quota. An execution that is no
   * view's (deleted meanwhile), or older than the refresh already applied, changes nothing.
   */
  async complete(executionId: string, viewId: string | undefined, out: RefreshOutput): Promise<void> {
    const rec = viewId === undefined ? this.#d.registry.ofExecution(executionId) : this.#d.registry.byId(viewId);
    if (rec === undefined) return;
    if (rec.appliedExecutionId !== undefined && executionId < rec.appliedExecutionId) return;
    const full = fullViewName(rec.team, rec.name);
    if (out.truncated) {
      throw new ViewRefreshError(
        `Refresh of materialized view ${full} failed: the result was truncated at the service's result size limit, and a view stores whole results only; the previous table is kept`,
      );
    }
    const quota = this.#d.quotaOf(rec.team);
    const others = this.#d.registry.storageBytes(rec.team, rec.name);
    const rest = (await this.#d.otherStorageBytes?.(rec.team)) ?? 0;
    if (others + rest + out.bytes > quota) {
      const also = rest > 0 ? ` and its uploads and tables (${rest} bytes)` : '';
      throw new ViewRefreshError(
        `Refresh of materialized view ${full} failed: its result is ${out.bytes} bytes, and with the team's other views (${others} bytes)${also} that exceeds the storage quota of ${quota} bytes; the previous table is kept. Make the query's result smaller or delete other views${rest > 0 ? ', uploads or tables' : ''}.`,
      );
    }
    await this.#d.tables.replaceFromResult(rec.team, rec.name, executionId, out.columnNames);
    // Re-read: the view may have been updated while the table was written.
    const now = this.#d.registry.byId(rec.id);
    if (now === undefined) return;
    await this.#d.registry.put({ ...now, tableSizeBytes: out.bytes, appliedExecutionId: executionId });
  }

  /** A scheduled refresh (the scheduler calls this); returns the execution id. */
  async refreshScheduled(rec: ViewRecord): Promise<string> {
    const executionId = await this.#d.runner.submit(rec, rec.performance);
    await this.#recordRefresh(rec, executionId);
    return executionId;
  }

  /** True while the view's newest refresh has not finished. */
  isRefreshing(rec: ViewRecord): boolean {
    const last = rec.lastExecutionIds[0];
    return last !== undefined && this.#d.runner.isRunning(last);
  }

  /** Bytes of the team's views (the storage quota applies to these). */
  storageBytes(team: string): number {
    return this.#d.registry.storageBytes(team);
  }

  /** The caller's own view: 404 when it does not exist or is another team's private one, 403 for another team's. */
  #own(team: string, given: string): ViewRecord {
    const n = parseViewName(given, team);
    const rec = this.#d.registry.get(n.team, n.name);
    if (rec === undefined || (rec.team !== team && rec.isPrivate)) throw notFound(n);
    if (rec.team !== team) throw new ViewError(403, `Not allowed: materialized view ${n.fullName} belongs to team ${rec.team}`);
    return rec;
  }

  async #recordRefresh(rec: ViewRecord, executionId: string): Promise<void> {
    const cur = this.#d.registry.get(rec.team, rec.name) ?? rec;
    await this.#d.registry.put({ ...cur, lastExecutionIds: [executionId, ...cur.lastExecutionIds.filter((id) => id !== executionId)].slice(0, LAST_EXECUTIONS) });
  }
}

function notFound(n: ViewName): ViewError {
  return new ViewError(404, `Materialized view ${n.fullName} not found`);
}
