import { createServer, type Server } from 'node:http';
import { answerClientError } from './http/clientError.ts';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { API_PREFIX } from '../protocol/index.ts';
import { KeyRing } from './auth.ts';
import { systemClock, type Clock } from './clock.ts';
import type { ServiceContext } from './context.ts';
import { openEngine, type OpenEngineOptions, type SqlEngine } from './engine/index.ts';
import { availableParallelism } from 'node:os';
import type { ExecutionRecord } from './executionRecord.ts';
import { Executions } from './executions.ts';
import { Faults, type FaultCounts } from './http/faults.ts';
import { Router } from './http/router.ts';
import { createRequestHandler } from './http/server.ts';
import { classifyRoutes } from './routes/classifyRoutes.ts';
import { executionRoutes } from './routes/executionRoutes.ts';
import { queryRoutes } from './routes/queryRoutes.ts';
import { queryListRoutes } from './routes/queryListRoutes.ts';
import { resultRoutes } from './routes/resultRoutes.ts';
import { SavedQueries, type QueryRecord } from './savedQueries.ts';
import { defaultSettings, loadSettingsOver, parseSettings, type FaultSettings, type FaultSettingsInput, type ServiceSettings, type ServiceSettingsInput } from './settings.ts';
import { JsonStore } from './store.ts';
import { secureDataFolder, tightenContents } from './dataFolder.ts';
import { advertiseOwner, loopbackUrl, newOwnerToken, waitForBorrowers } from './owner.ts';
import { defaultPageRows } from './resultShape.ts';
import { openCreditLedger } from './limits/credits.ts';
import { executionHooks, readableWhenShared } from './limits/hooks.ts';
import { rateLimiterFor } from './limits/rateLimit.ts';
import { RetentionSweeper } from './limits/retention.ts';
import { ForgottenExecutions } from './forgotten.ts';
import { ResultStoreBound } from './limits/resultStore.ts';
import { usageRoutes } from './limits/routes.ts';
import { uploadRoutes } from './uploads/routes.ts';
import { datasetRoutes } from './uploads/datasetRoutes.ts';
import { openDatasets, type Datasets } from './uploads/datasets.ts';
import { tableRoutes } from './uploads/tableRoutes.ts';
import { UploadTables } from './uploads/uploadTables.ts';
import type { CreditLedger } from './limits/credits.ts';
import type { Route } from './http/router.ts';
import { openViews, type Views } from './views/views.ts';
import { startTelemetry } from '../telemetry/index.ts';

export interface ServiceOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port (see `url`). */
  port?: number;
  /** Where queries, executions and stored results live; a restart on the same directory finds them. */
  dataDir: string;
  /** Settings, or the path of a YAML settings file. Default: team `demo` with one Admin key (SERVICE_API_KEY or generated). */
  settings?: ServiceSettingsInput | string;
  /** Rows of the generated sample.events table (default: the engine's, 1,000,000). Tests pass a few thousand. */
  sampleRows?: number;
  /** Told what starting did that a user should hear of (sample data generated or rebuilt). */
  onNotice?: (message: string) => void;
  /** Results of at least this many result_set_bytes get pre-encoded pages (default 64 KiB; tests pass 0). */
  encodeMinBytes?: number;
  clock?: Clock;
  /**
   * Makes this service the data folder's shared one (owner.ts): its loopback URL (and `key`, the
   * Admin key other processes use with it: by default the default settings' key; none with a
   * settings file, whose keys they have) go into the folder's owner.json until it closes. Ignored
   * when bound to a non-loopback host.
   */
  advertise?: { key?: string };
}

export interface ServiceHandle {
  /** Base URL including the API prefix: `http://127.0.0.1:PORT/api`. */
  url: string;
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  settings: ServiceSettings;
  /** Set when no settings were given and no SERVICE_API_KEY either: the Admin key of team `demo`. */
  generatedKey?: string;
  clock: Clock;
  /** Changes the faults at runtime (the given fields only). */
  setFaults(patch: FaultSettingsInput): void;
  readonly faults: FaultSettings;
  /** How many requests were delayed, answered with a faulted error, or reset. */
  readonly faultCounts: FaultCounts;
  /**
   * Settles when the pre-encoded pages of an execution's result are written (or their writing
   * ended otherwise); until then its pages are built per request. For tests and benchmarks.
   */
  whenEncoded(executionId: string): Promise<void>;
  /**
   * Stops accepting connections, interrupts running executions, closes the engine. An advertised
   * service first withdraws its owner record; given `borrowers`, it then waits until no other
   * process uses it (owner.ts leases) or that signal aborts.
   */
  close(borrowers?: AbortSignal): Promise<void>;
  /**
   * Stops the engine at once (every statement interrupted, the instance closed once none is in
   * flight), for a process about to exit without the graceful close: ending a process or thread
   * while DuckDB has a call in flight aborts it. Requests after it fail.
   */
  halt(): Promise<void>;
}

/** Starts the local query service (protocol.md) on an embedded DuckDB. */
export async function startService(options: ServiceOptions): Promise<ServiceHandle> {
  const clock = options.clock ?? systemClock;
  const { settings, generatedKey } = await resolveSettings(options.settings);
  const dataDir = resolve(options.dataDir);
  await secureDataFolder(dataDir, (message) => console.warn(`sluice service: ${message}`));

  const engine = await openEngine({
    dataDir: join(dataDir, 'engine'),
    datasets: settings.datasets,
    ...(options.sampleRows === undefined ? {} : { sampleRows: options.sampleRows }),
    ...(options.onNotice === undefined ? {} : { onNotice: options.onNotice }),
    duneSampleTransactions: settings.dune_sample_transactions,
    ...(options.encodeMinBytes === undefined ? {} : { encodeMinBytes: options.encodeMinBytes }),
    arrowChunkRows: (columnCount) => defaultPageRows(settings, columnCount),
    ...engineBounds(settings, dataDir),
  });
  let server: Server | undefined;
  try {
    const { executions, views, router, faults, flushLimits, rateLimiter } = await assemble(engine, settings, clock, dataDir);

    // A span per request, continuing the caller's traceparent, when the environment asks for OpenTelemetry.
    const telemetry = await startTelemetry(process.env, 'service');
    const host = options.host ?? '127.0.0.1';
    const srv = createServer({ keepAliveTimeout: 5_000 });
    server = srv;
    let linkOrigin = '';
    /** Set while this service is advertised as the folder's owner: it then answers owner challenges. */
    let ownerToken: string | undefined;
    srv.on('clientError', answerClientError);
    srv.on('request', createRequestHandler({ router, keys: new KeyRing(settings), faults, maxBodyBytes: () => settings.limits.max_body_bytes, origin: () => linkOrigin, ownerToken: () => ownerToken, rateLimit: (key, cls, team) => rateLimiter.take(key, cls, team) }));
    const port = await listen(srv, options.port ?? 0, host);
    const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    linkOrigin = linkOriginOf(settings.public_url, host, port);

    const sweeper = startSweeper(executions, settings, clock);
    views.start();

    const advertised = options.advertise === undefined ? undefined : loopbackUrl(host, port, API_PREFIX);
    // With the default settings, other processes use the one key there is (team demo, Admin).
    const sharedKey = options.advertise?.key ?? (options.settings === undefined ? settings.teams[0]?.keys[0]?.key : undefined);
    if (advertised !== undefined) ownerToken = newOwnerToken();
    const unadvertise =
      advertised === undefined || ownerToken === undefined ? async () => undefined : await advertiseOwner(dataDir, {
            url: advertised,
            ...(sharedKey === undefined ? {} : { key: sharedKey }),
            ...(options.sampleRows === undefined ? {} : { sample_rows: options.sampleRows }),
          }, ownerToken);

    let closing: Promise<void> | undefined;
    const handle: ServiceHandle = {
      url: `${origin}${API_PREFIX}`,
      origin,
      settings,
      clock,
      setFaults: (patch) => faults.set(patch),
      get faults() {
        return faults.settings;
      },
      faultCounts: faults.counts,
      whenEncoded: (id) => engine.encodingSettled(id),
      // Other processes stop finding this service first: they wait for the folder, then open it.
      close: (borrowers) =>
        (closing ??= (async () => {
          await unadvertise();
          if (advertised !== undefined && borrowers !== undefined) await waitForBorrowers(dataDir, borrowers);
          await shutdown(srv, executions, engine, sweeper, views, flushLimits);
          await telemetry?.shutdown();
        })()),
      halt: () => unadvertise().finally(() => engine.close()),
    };
    if (generatedKey !== undefined) handle.generatedKey = generatedKey;
    return handle;
  } catch (err) {
    server?.close();
    await engine.close();
    throw err;
  }
}

/** The service's parts over its engine: catalogs, limits, views, uploads, executions, routes. */
async function assemble(engine: SqlEngine, settings: ServiceSettings, clock: Clock, dataDir: string) {
  // After the engine (it creates its files with the process's umask): owner-only, as the folder.
  await tightenContents(dataDir);
  // After the engine: opening it takes the folder's lock, and only its holder may clean up the
  // temp files of interrupted writes (another process's are not interrupted).
  const executionStore = new JsonStore<ExecutionRecord>(join(dataDir, 'catalog', 'executions'));
  const queryStore = new JsonStore<QueryRecord>(join(dataDir, 'catalog', 'queries'));
  await executionStore.init();
  await queryStore.init();
  // Work tables of refreshes and uploads a crash left half-written.
  await engine.tables.dropStagingLeftovers();
  await engine.openTeams?.(settings.teams.map((t) => t.name));
  // Credits and views come before executions: loading executions settles those a restart ended.
  const credits = await openCreditLedger(settings, clock, join(dataDir, 'limits'));
  let svc: ServiceContext | undefined;
  const service = (): ServiceContext => {
    if (svc === undefined) throw new Error('the service is not assembled yet');
    return svc;
  };
  // One storage quota per team covers its materialized views, uploads and the tables its SQL
  // created (engine/storageQuota.ts); each store checks it against what the others hold.
  const storageQuota = (team: string): number => settings.teams.find((t) => t.name === team)?.plan.storage_quota_bytes ?? 0;
  let datasetsOf: ((team: string) => number) | undefined;
  const views = await openViews({
    settings,
    clock,
    dir: join(dataDir, 'catalog', 'views'),
    tables: engine.tables,
    service,
    otherStorageBytes: async (team) => (datasetsOf?.(team) ?? 0) + (await engine.tables.teamTableBytes(team)),
  });
  const uploads = await openDatasets(engine.tables, clock, join(dataDir, 'catalog', 'datasets'), async (team) => ({
    limitBytes: storageQuota(team),
    otherBytes: views.service.storageBytes(team) + (await engine.tables.teamTableBytes(team)),
  }));
  datasetsOf = (team) => uploads.datasets.storageBytes(team);
  const canRead = readableWhenShared(views.registry, uploads.datasets);
  const hooks = executionHooks({
    settings,
    ledger: credits.ledger,
    views: views.service,
    canRead,
    storageQuota: (team) => ({ limitBytes: storageQuota(team), otherBytes: views.service.storageBytes(team) + uploads.datasets.storageBytes(team) }),
  });
  // Past limits.result_store_max_bytes, the results read least recently expire (limits/resultStore.ts).
  let resultStore: ResultStoreBound | undefined;
  const bound = (): void => void resultStore?.enforce().catch((err: unknown) => console.error('sluice service: bounding the result store failed:', err));
  const forgotten = new ForgottenExecutions(join(dataDir, 'catalog', 'forgotten-executions.json'));
  const executions = new Executions({ engine, store: executionStore, clock, settings, hooks, onStored: bound, forgotten });
  const queries = new SavedQueries({ store: queryStore, clock });
  await executions.load();
  await queries.load();
  svc = { settings, clock, engine, executions, queries };
  const rateLimiter = rateLimiterFor(settings, clock);
  const limitRoutes = [
    ...views.routes(svc),
    ...uploadRoutes(uploads.datasets),
    ...catalogRoutes(engine, uploads.datasets, clock, credits.ledger),
    ...usageRoutes({
      ledger: credits.ledger,
      storageBytes: async (team) => views.service.storageBytes(team) + uploads.datasets.storageBytes(team) + (await engine.tables.teamTableBytes(team)),
      storageQuotaBytes: storageQuota,
      resultStore: () => resultStore!.measure(),
      privateQueries: (team) => queries.privateCount(team),
    }),
  ];
  const flushLimits = async (): Promise<void> => {
    // The bound reads the results folder: it settles before the engine closes and the folder may go.
    await resultStore?.close();
    await credits.flush();
    await views.flush();
    await uploads.flush();
  };
  const faults = new Faults(settings.faults);
  const router = new Router([...executionRoutes(svc), ...classifyRoutes(svc), ...queryRoutes(svc), ...queryListRoutes(svc), ...resultRoutes(svc), ...limitRoutes]);
  resultStore = new ResultStoreBound(settings.limits.result_store_max_bytes, () => engine.resultStoreBytes(), executions.resultStoreTarget(), executions.readLeases);
  // A read that held a result ended: the store, if over its bound, is bounded again at once.
  executions.readLeases.onRelease(() => resultStore?.enforceIfOver());
  // Encodings written on a first read grow the store after the result was stored.
  engine.onResultStoreGrew?.(bound);
  bound();
  return { executions, views, router, faults, flushLimits, rateLimiter };
}

/** Tables created with a schema and filled by inserts (uploads v2), and datasets listed and searched. */
function catalogRoutes(engine: SqlEngine, datasets: Datasets, clock: Clock, ledger: CreditLedger): Route[] {
  return [...tableRoutes(new UploadTables({ datasets, ops: engine.tables, clock, ledger })), ...datasetRoutes(datasets)];
}

/** Listens on host:port (0: any free port); resolves to the port. */
async function listen(srv: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((ok, fail) => {
    srv.once('error', fail);
    srv.listen(port, host, () => {
      srv.off('error', fail);
      ok();
    });
  });
  return (srv.address() as AddressInfo).port;
}

/**
 * Retention: expired results are also found lazily on every read; the sweep deletes the results
 * nobody reads, and leftovers of a crash between EXPIRED and the delete (at start too).
 */
function startSweeper(executions: Executions, settings: ServiceSettings, clock: Clock): RetentionSweeper {
  const sweeper = new RetentionSweeper(executions.retentionTarget(), () => clock.now());
  const onSweepError = (err: unknown): void => console.error('sluice service: retention sweep failed:', err);
  sweeper.start(settings.limits.sweep_interval_ms, onSweepError);
  void sweeper.sweep().catch(onSweepError);
  return sweeper;
}

/**
 * The origin of the service's links: `public_url` (without a trailing '/'), else the address bound,
 * a wildcard one as its loopback address (a client elsewhere needs `public_url`).
 */
function linkOriginOf(publicUrl: string | undefined, host: string, port: number): string {
  if (publicUrl !== undefined) return new URL(publicUrl).origin;
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

/** The engine-wide bounds of the settings' `engine` block (docs/local-service.md, "Engine and memory"). */
function engineBounds(
  settings: ServiceSettings,
  dataDir: string,
): Pick<OpenEngineOptions, 'memoryLimit' | 'maxTempDirectorySize' | 'tempDirectory' | 'defaultThreads' | 'memoryAdmission' | 'encodeResults' | 'walledTeams'> {
  const { memory_limit, max_temp_directory_size, temp_directory, threads, memory_admission, encode_results, walled_teams } = settings.engine;
  return {
    walledTeams: walled_teams,
    encodeResults: encode_results,
    memoryLimit: memory_limit,
    maxTempDirectorySize: max_temp_directory_size,
    tempDirectory: temp_directory === undefined ? join(dataDir, 'engine', 'tmp') : resolve(temp_directory),
    defaultThreads: threads ?? Math.min(4, availableParallelism()),
    ...(memory_admission === undefined ? {} : { memoryAdmission: memory_admission }),
  };
}

async function resolveSettings(given: ServiceOptions['settings']): Promise<{ settings: ServiceSettings; generatedKey?: string }> {
  if (given === undefined) return defaultSettings();
  if (typeof given === 'string') {
    // A file changes what it names; one without teams keeps the default team and its key.
    const defaults = defaultSettings();
    const { settings, ownTeams } = await loadSettingsOver(given, defaults.settings);
    return ownTeams ? { settings } : { ...defaults, settings };
  }
  return { settings: parseSettings(given) };
}

/** Stop accepting, let in-flight requests finish (briefly), stop executions, then the engine. */
async function shutdown(
  server: Server,
  executions: Executions,
  engine: { close(): Promise<void> },
  sweeper: RetentionSweeper,
  views: Views,
  flushLimits: () => Promise<void>,
): Promise<void> {
  await sweeper.close();
  await views.close();
  const closed = new Promise<void>((ok) => server.close(() => ok()));
  server.closeIdleConnections();
  await executions.close();
  await flushLimits();
  const grace = setTimeout(() => server.closeAllConnections(), 2_000);
  await closed;
  clearTimeout(grace);
  await engine.close();
}
