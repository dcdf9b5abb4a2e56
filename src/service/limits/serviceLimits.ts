import { join } from 'node:path';
import { monotonicFactory } from 'ulid';
import type { Clock } from '../clock.ts';
import type { ServiceContext } from '../context.ts';
import type { Submission } from '../executions.ts';
import type { Route } from '../http/router.ts';
import { resolveParameters, substitute } from '../parameters.ts';
import type { ServiceSettings } from '../settings.ts';
import { JsonStore } from '../store.ts';
import { Datasets, type DatasetRecord } from '../uploads/datasets.ts';
import { uploadRoutes } from '../uploads/routes.ts';
import { ViewError } from '../views/errors.ts';
import { ViewRegistry } from '../views/registry.ts';
import { viewRoutes } from '../views/routes.ts';
import { ViewScheduler } from '../views/scheduler.ts';
import { dropStagingLeftovers, type TableHost } from '../views/tableHost.ts';
import { ViewTables } from '../views/tables.ts';
import type { ViewRecord } from '../views/viewRecord.ts';
import { ViewService, type RefreshRunner } from '../views/viewService.ts';
import { CreditLedger, type LedgerDoc } from './credits.ts';
import { daysCycle } from './cycle.ts';
import type { ExecutionHooks } from './hooks.ts';
import { RateLimiter } from './rate-limit.ts';
import { usageRoutes } from './routes.ts';
import { executionCost } from './tiers.ts';

export interface ServiceLimitsDeps {
  settings: ServiceSettings;
  clock: Clock;
  /** The service's data directory: limits/, catalog/views, catalog/datasets and uploads-tmp/ go under it. */
  dataDir: string;
  /** The engine's DuckDB (for view tables and uploads). */
  tables: TableHost;
}

/**
 * Issue 7 assembled: the credit ledger, rate limiter, views (registry, tables, scheduler) and
 * datasets, the routes they add, and the hooks Executions calls. `bind(svc)` connects them to the
 * service once Executions and SavedQueries exist; `start()` / `close()` run the timers.
 */
export class ServiceLimits {
  readonly ledger: CreditLedger;
  readonly rateLimiter: RateLimiter;
  readonly registry: ViewRegistry;
  readonly datasets: Datasets;
  readonly views: ViewService;
  readonly scheduler: ViewScheduler;
  readonly hooks: ExecutionHooks;
  readonly #deps: ServiceLimitsDeps;
  readonly #stores: { ledger: JsonStore<LedgerDoc>; views: JsonStore<ViewRecord>; datasets: JsonStore<DatasetRecord> };
  #svc: ServiceContext | undefined;

  constructor(deps: ServiceLimitsDeps) {
    this.#deps = deps;
    const { settings, clock, dataDir } = deps;
    const plan = (team: string) => settings.teams.find((t) => t.name === team)?.plan;
    this.#stores = {
      ledger: new JsonStore<LedgerDoc>(join(dataDir, 'limits')),
      views: new JsonStore<ViewRecord>(join(dataDir, 'catalog', 'views')),
      datasets: new JsonStore<DatasetRecord>(join(dataDir, 'catalog', 'datasets')),
    };
    this.ledger = new CreditLedger({
      clock,
      cycle: daysCycle(settings.limits.billing_cycle_days),
      limitOf: (team) => plan(team)?.credits_per_cycle ?? 0,
      store: this.#stores.ledger,
    });
    this.rateLimiter = new RateLimiter({
      clock,
      perMinute: (cls) => (cls === 'read' ? settings.limits.read_requests_per_minute : settings.limits.write_requests_per_minute),
    });
    this.registry = new ViewRegistry(this.#stores.views);
    this.datasets = new Datasets({ host: deps.tables, clock, tmpDir: join(dataDir, 'uploads-tmp'), store: this.#stores.datasets });
    const ids = monotonicFactory();
    this.views = new ViewService({
      registry: this.registry,
      tables: new ViewTables(deps.tables),
      runner: this.#runner(),
      clock,
      quotaOf: (team) => plan(team)?.storage_quota_bytes ?? 0,
      newId: () => ids(Math.floor(clock.now())),
    });
    this.scheduler = new ViewScheduler({
      clock,
      registry: this.registry,
      refresh: (v) => this.views.refreshScheduled(v),
      isRefreshing: (v) => this.views.isRefreshing(v),
      onError: (v, err) => console.error(`sluice service: scheduled refresh of service.${v.team}.${v.name} not started: ${(err as Error).message}`),
    });
    this.hooks = {
      admit: (rec) => this.ledger.reserve(rec.team, executionCost(settings, rec.performance, true), rec.id),
      abandon: (rec) => this.ledger.release(rec.id),
      afterRun: async (rec, info) => {
        if (rec.purpose !== 'view') return;
        await this.views.complete(rec.id, rec.viewId, info);
      },
      canRead: (owner, name) => this.canRead(owner, name),
      finished: (rec) => this.ledger.settle(rec.id, 'costCredits' in rec ? rec.costCredits : 0),
    };
  }

  async load(): Promise<void> {
    for (const s of Object.values(this.#stores)) await s.init();
    await dropStagingLeftovers(this.#deps.tables);
    await this.ledger.load();
    await this.registry.load();
    await this.datasets.load();
  }

  /** Connects to the service's executions and saved queries (refreshes are their executions). */
  bind(svc: ServiceContext): void {
    this.#svc = svc;
  }

  routes(): Route[] {
    const svc = this.#bound();
    return [
      ...viewRoutes(svc, this.views),
      ...uploadRoutes(this.datasets),
      ...usageRoutes({
        ledger: this.ledger,
        storageBytes: (team) => this.views.storageBytes(team) + this.datasets.storageBytes(team),
        storageQuotaBytes: (team) => this.#deps.settings.teams.find((t) => t.name === team)?.plan.storage_quota_bytes ?? 0,
      }),
    ];
  }

  /** Lets the engine's sandbox read another team's view or dataset when it is not private. */
  canRead(owner: string, name: string): boolean {
    const view = this.registry.get(owner, name);
    if (view !== undefined) return !view.isPrivate;
    const dataset = this.datasets.get(owner, name);
    return dataset !== undefined && !dataset.isPrivate;
  }

  start(): void {
    this.scheduler.start(this.#deps.settings.limits.view_scheduler_interval_ms, (err) =>
      console.error('sluice service: view scheduler tick failed:', err),
    );
  }

  /** Stops the scheduler (no more refreshes are submitted). */
  async close(): Promise<void> {
    await this.scheduler.close();
  }

  /** Waits for every write of the ledger, views and datasets (after executions have stopped). */
  async flush(): Promise<void> {
    for (const s of Object.values(this.#stores)) await s.flush();
  }

  #bound(): ServiceContext {
    if (this.#svc === undefined) throw new Error('ServiceLimits.bind(svc) was not called');
    return this.#svc;
  }

  #runner(): RefreshRunner {
    return {
      submit: async (view, performance) => {
        const svc = this.#bound();
        const q = svc.queries.get(view.queryId);
        if (q === undefined) throw new ViewError(404, `Materialized view service.${view.team}.${view.name}: its query ${view.queryId} no longer exists`);
        if (q.isArchived) throw new ViewError(403, `Not allowed: the query ${q.id} of materialized view service.${view.team}.${view.name} is archived; unarchive it to refresh the view`);
        // A refresh runs the query with its parameters' defaults.
        const parameters = resolveParameters(q.parameters, {});
        const submission: Submission = {
          team: view.team,
          sql: substitute(q.sql, q.parameters, parameters),
          queryId: q.id,
          queryVersion: q.version,
          parameters,
          performance,
          purpose: 'view',
          viewId: view.id,
        };
        const rec = await svc.executions.submit(submission);
        return rec.id;
      },
      isRunning: (id) => {
        const state = this.#svc?.executions.get(id)?.state;
        return state === 'QUERY_STATE_PENDING' || state === 'QUERY_STATE_EXECUTING';
      },
    };
  }
}
