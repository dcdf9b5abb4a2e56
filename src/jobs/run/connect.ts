import { randomBytes } from 'node:crypto';
import type { HeapInfo } from 'node:v8';
import { resolve } from 'node:path';
import { ServiceClient } from '../../client/serviceClient.ts';
import type { ClientOptions } from '../../client/config.ts';
import { ConfigError as ClientConfigError } from '../../client/errors.ts';
import { DEFAULT_API_KEY_ENV, DEFAULT_EMBEDDED_DATA_DIR, type Connection } from '../../config/jobSchema.ts';
import type { ServiceSettingsInput } from '../../service/settings.ts';
import { embeddedSettings, embeddedSettingsFile } from './embeddedDefaults.ts';
import { findOwner, isLockConflict, takeLease } from '../../service/owner.ts';

export interface Connected {
  readonly client: ServiceClient;
  /** The API base URL in use (`http://127.0.0.1:PORT/api` for the embedded service). */
  readonly baseUrl: string;
  /** True when the local service was started by this process (in a worker thread of its own). */
  readonly embedded: boolean;
  /** Closes the client, then the embedded service if one was started. */
  close(): Promise<void>;
  /** The embedded service thread's V8 heap, when this process started it (its memory split by thread). */
  readonly serviceHeap?: () => Promise<HeapInfo>;
}

export interface ConnectOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** This process's part of the key's rate (`connection.rate_limit`): a shard of N takes 1/N. Default 1. */
  readonly rateShare?: number;
  /** Relative paths (the embedded data dir, its settings file) are resolved against this. */
  readonly cwd: string;
  /** Told once the embedded service is up (it takes a moment on first start: sample data). */
  readonly onEmbedded?: (info: { url: string; dataDir: string; notices: readonly string[] }) => void;
  /**
   * The command's signal: while it has not aborted, closing an embedded service this process
   * started waits for the other processes using it (it is the data folder's shared service).
   * Without one, close does not wait for them.
   */
  readonly signal?: AbortSignal;
  /**
   * For a long-lived process (`schedule`): never use another process's service (its owner would
   * wait for this one to exit before it could); wait until that process has closed the folder
   * and open it, until `signal` aborts.
   */
  readonly ownFolder?: boolean;
  /** Told once when `ownFolder` waits for the process that serves the folder. */
  readonly onWaiting?: (info: { dataDir: string; pid: number }) => void;
  /** Told when the folder's service runs in another process, which this one then uses. */
  readonly onShared?: (info: { url: string; dataDir: string; pid: number; ignoredSampleRows?: number }) => void;
  /** Hooks for every client made (telemetry: trace context on each request, retries as spans). */
  readonly clientHooks?: Pick<ClientOptions, 'requestHeaders' | 'onRetry' | 'onThrottle'> | undefined;
}

/**
 * A client for the connection of a job file. With a `base_url` the service is remote and the
 * key must be in the environment; without one it is the data folder's service (`embedded.data_dir`,
 * so results and resumable executions survive from one run to the next): the one another process
 * runs for that folder, found through it (src/service/owner.ts), or else one started in a worker
 * thread of this process on 127.0.0.1 and a free port, which other processes then use.
 */
export async function connect(connection: Connection | undefined, options: ConnectOptions): Promise<Connected> {
  const keyEnv = connection?.api_key_env ?? DEFAULT_API_KEY_ENV;
  const given = options.env[keyEnv];
  const key = given === undefined || given === '' ? undefined : given;
  const rate: Rate = {
    ...(connection?.rate_limit === undefined ? {} : { rateLimit: connection.rate_limit }),
    rateShare: options.rateShare ?? 1,
    ...(connection?.compression === undefined ? {} : { compression: connection.compression }),
    ...options.clientHooks,
  };
  const baseUrl = connection?.base_url;
  if (baseUrl !== undefined && baseUrl !== '') {
    if (key === undefined) throw new ClientConfigError(`the API key is missing: set the environment variable ${keyEnv} (connection.api_key_env) for ${baseUrl}`);
    const client = new ServiceClient({ baseUrl: apiBase(baseUrl), apiKey: key, apiKeyFrom: `the environment variable ${keyEnv}`, env: {}, ...rate });
    return { client, baseUrl: client.baseUrl, embedded: false, close: () => client.close() };
  }
  const embedded = connection?.embedded;
  const folder: Folder = {
    dataDir: resolve(options.cwd, embedded?.data_dir ?? DEFAULT_EMBEDDED_DATA_DIR),
    sampleRows: embedded?.sample_rows,
    ...(await embeddedKey(embedded?.settings === undefined ? undefined : resolve(options.cwd, embedded.settings), key, keyEnv)),
  };
  return openFolder(folder, rate, options);
}

type Rate = Pick<ClientOptions, 'rateLimit' | 'rateShare' | 'compression' | 'requestHeaders' | 'onRetry' | 'onThrottle'>;

/** The data folder of the embedded service, and the key this process uses with it. */
interface Folder {
  readonly dataDir: string;
  readonly sampleRows: number | undefined;
  /** No settings file, or one without teams: the service's one team and key are made up here (and advertised to other processes). */
  readonly defaultSettings: boolean;
  readonly settings: ServiceSettingsInput;
  readonly apiKey: string;
  readonly apiKeyFrom: string;
}

/**
 * The settings the embedded service starts with, and the key to use: the environment's, else the
 * settings file's first Write or Admin key, else a made-up one. A settings file is read over the
 * embedded defaults (it need only name what it changes); one without `teams` keeps their team.
 */
async function embeddedKey(settingsFile: string | undefined, key: string | undefined, keyEnv: string): Promise<Pick<Folder, 'settings' | 'apiKey' | 'apiKeyFrom' | 'defaultSettings'>> {
  const fromEnv = `the environment variable ${keyEnv}`;
  // The embedded service is private to this process: any key works, the environment's if set.
  const madeUp = key ?? `sk_local_${randomBytes(12).toString('hex')}`;
  if (settingsFile === undefined) return { settings: embeddedSettings(madeUp), apiKey: madeUp, apiKeyFrom: fromEnv, defaultSettings: true };
  const { settings, ownTeams } = await embeddedSettingsFile(settingsFile, madeUp);
  if (!ownTeams) return { settings, apiKey: madeUp, apiKeyFrom: fromEnv, defaultSettings: true };
  const apiKey = key ?? firstWriteKey(settings.teams) ?? '';
  if (apiKey === '') throw new ClientConfigError(`${settingsFile}: no API key with the Write or Admin scope; add one or set ${keyEnv}`);
  return { settings, apiKey, apiKeyFrom: key !== undefined ? fromEnv : `the first Write or Admin key of ${settingsFile}`, defaultSettings: false };
}

/**
 * The folder's service: the one another process runs already (`sluice schedule`, `serve`, the
 * parent of --processes), used over loopback, or one this process starts. The lease comes first:
 * an owner that has withdrawn its record and sees no lease is sure no process can still be about
 * to use it (owner.ts).
 */
async function openFolder(folder: Folder, rate: Rate, options: ConnectOptions): Promise<Connected> {
  const { dataDir } = folder;
  const deadline = performance.now() + FOLDER_WAIT_MS;
  let waiting = false;
  for (;;) {
    const releaseLease = await takeLease(dataDir);
    const owner = await findOwner(dataDir);
    if (owner !== undefined && options.ownFolder !== true) return useOwner(folder, owner, releaseLease, rate, options);
    await releaseLease();
    if (owner !== undefined) {
      // A long-lived process never borrows: the owner would wait for it to exit, for ever.
      if (!waiting) options.onWaiting?.({ dataDir, pid: owner.pid });
      waiting = true;
      await abortableSleep(FOLDER_POLL_MS * 5, options.signal);
      continue;
    }
    try {
      return await startOwn(folder, rate, options);
    } catch (error) {
      // Another process holds the folder: it is starting (its record comes once it listens) or
      // closing (the folder frees once its engine is closed). Anything else is an error here.
      if (!isLockConflict(error) || (performance.now() > deadline && options.ownFolder !== true)) throw lockError(error, dataDir);
      await abortableSleep(FOLDER_POLL_MS, options.signal);
    }
  }
}

type Owner = NonNullable<Awaited<ReturnType<typeof findOwner>>>;

function useOwner(folder: Folder, owner: Owner, releaseLease: () => Promise<void>, rate: Rate, options: ConnectOptions): Connected {
  const apiKey = folder.defaultSettings && owner.key !== undefined ? owner.key : folder.apiKey;
  // The other process made sample.events with its own row count; this job's cannot apply.
  const ignored = folder.sampleRows === undefined || folder.sampleRows === owner.sample_rows ? {} : { ignoredSampleRows: folder.sampleRows };
  options.onShared?.({ url: owner.url, dataDir: folder.dataDir, pid: owner.pid, ...ignored });
  const client = new ServiceClient({ baseUrl: owner.url, apiKey, apiKeyFrom: folder.defaultSettings ? `the owner record of ${folder.dataDir}` : folder.apiKeyFrom, env: {}, ...rate });
  return connected(client, owner.url, false, releaseLease);
}

/** The folder's service, started in a thread of its own: its page work runs on another core than the export's. */
async function startOwn(folder: Folder, rate: Rate, options: ConnectOptions): Promise<Connected> {
  // Imported here so that talking to a remote service never loads DuckDB.
  const { startServiceThread } = await import('../../service/thread.ts');
  const service = await startServiceThread({
    dataDir: folder.dataDir,
    settings: folder.settings,
    ...(folder.sampleRows === undefined ? {} : { sampleRows: folder.sampleRows }),
    advertise: folder.defaultSettings ? { key: folder.apiKey } : {},
  });
  options.onEmbedded?.({ url: service.url, dataDir: folder.dataDir, notices: service.notices });
  const client = new ServiceClient({ baseUrl: service.url, apiKey: folder.apiKey, apiKeyFrom: folder.apiKeyFrom, env: {}, ...rate });
  // Other processes using this service finish first, unless this command was stopped.
  return { ...connected(client, service.url, true, () => service.close(options.signal)), serviceHeap: () => service.heapStatistics() };
}

/** A connection whose close closes the client, then what holds the service (a lease, the service itself). */
function connected(client: ServiceClient, baseUrl: string, embedded: boolean, then: () => Promise<void>): Connected {
  return {
    client,
    baseUrl,
    embedded,
    async close() {
      await client.close();
      await then();
    },
  };
}

/** How long a process waits for a folder another process is opening or closing. */
const FOLDER_WAIT_MS = 60_000;
const FOLDER_POLL_MS = 200;

async function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted();
  await new Promise((resolve) => setTimeout(resolve, ms));
  signal?.throwIfAborted();
}

function lockError(error: unknown, dataDir: string): unknown {
  if (!isLockConflict(error)) return error;
  return new ClientConfigError(
    `the embedded service's data folder ${dataDir} is held by another process that does not answer as its service (${(error as Error).message}); stop that process, or give this one another data_dir`,
    { cause: error },
  );
}

/** `https://host` -> `https://host/api`; a URL that already has a path is taken as given. */
export function apiBase(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname === '/' || parsed.pathname === '' ? `${parsed.origin}/api` : url.replace(/\/+$/, '');
}

function firstWriteKey(teams: readonly { keys: readonly { key: string; scopes: readonly string[] }[] }[]): string | undefined {
  for (const team of teams) for (const k of team.keys) if (k.scopes.includes('Read/Write') || k.scopes.includes('Write') || k.scopes.includes('Admin')) return k.key;
  return undefined;
}
