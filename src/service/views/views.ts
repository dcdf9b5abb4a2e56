import { monotonicFactory } from 'ulid';
import type { Clock } from '../clock.ts';
import type { ServiceContext } from '../context.ts';
import type { ServiceTables } from '../engine/types.ts';
import type { Submission } from '../executions.ts';
import type { Route } from '../http/router.ts';
import { resolveParameters, substitute } from '../parameters.ts';
import { requestTier, type ServiceSettings } from '../settings.ts';
import { JsonStore } from '../store.ts';
import { ViewError } from './errors.ts';
import { ViewRegistry } from './registry.ts';
import { viewRoutes } from './routes.ts';
import { ViewScheduler } from './scheduler.ts';
import { ViewTables } from './tables.ts';
import type { ViewRecord } from './viewRecord.ts';
import { ViewService, type RefreshRunner } from './viewService.ts';

/** Materialized views: their records, tables, refreshes and schedule, as one part of the service. */
export interface Views {
  registry: ViewRegistry;
  service: ViewService;
  scheduler: ViewScheduler;
  routes(svc: ServiceContext): Route[];
  /** Starts the scheduler's timer. */
  start(): void;
  /** Stops the scheduler (no more refreshes are submitted). */
  close(): Promise<void>;
  /** Waits for the records' writes (after executions have stopped). */
  flush(): Promise<void>;
}

export interface ViewsDeps {
  settings: ServiceSettings;
  clock: Clock;
  /** Where the view records live (one file each). */
  dir: string;
  tables: ServiceTables;
  /** The service's executions and saved queries: a refresh is an execution of the view's query. */
  service(): ServiceContext;
  /** What else the team stores under its storage quota (uploads, the tables its SQL created). */
  otherStorageBytes?(team: string): Promise<number>;
}

/** The views kept under `deps.dir`, loaded. */
export async function openViews(deps: ViewsDeps): Promise<Views> {
  const { settings, clock } = deps;
  const store = new JsonStore<ViewRecord>(deps.dir);
  await store.init();
  const registry = new ViewRegistry(store);
  await registry.load();
  const ids = monotonicFactory();
  const service = new ViewService({
    registry,
    tables: new ViewTables(deps.tables),
    runner: refreshRunner(deps.service),
    clock,
    quotaOf: (team) => settings.teams.find((t) => t.name === team)?.plan.storage_quota_bytes ?? 0,
    tierOf: (team) => requestTier(settings, team, undefined),
    ...(deps.otherStorageBytes === undefined ? {} : { otherStorageBytes: deps.otherStorageBytes }),
    newId: () => ids(Math.floor(clock.now())),
  });
  const scheduler = new ViewScheduler({
    clock,
    registry,
    refresh: (v) => service.refreshScheduled(v),
    isRefreshing: (v) => service.isRefreshing(v),
    onError: (v, err) => console.error(`sluice service: scheduled refresh of service.${v.team}.${v.name} not started: ${(err as Error).message}`),
  });
  return {
    registry,
    service,
    scheduler,
    routes: (svc) => viewRoutes(svc, service),
    start: () => scheduler.start(settings.limits.view_scheduler_interval_ms, (err) => console.error('sluice service: view scheduler tick failed:', err)),
    close: () => scheduler.close(),
    flush: () => store.flush(),
  };
}

/** A refresh runs the view's query, with its parameters' defaults, as an execution of the view's team. */
function refreshRunner(service: () => ServiceContext): RefreshRunner {
  return {
    submit: async (view, performance) => {
      const svc = service();
      const q = svc.queries.get(view.queryId);
      if (q === undefined) throw new ViewError(404, `Materialized view service.${view.team}.${view.name}: its query ${view.queryId} no longer exists`);
      if (q.isArchived) throw new ViewError(403, `Not allowed: the query ${q.id} of materialized view service.${view.team}.${view.name} is archived; unarchive it to refresh the view`);
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
      return (await svc.executions.submit(submission)).id;
    },
    isRunning: (id) => {
      const state = service().executions.get(id)?.state;
      return state === 'QUERY_STATE_PENDING' || state === 'QUERY_STATE_EXECUTING';
    },
  };
}
