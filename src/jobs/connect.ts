import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { ServiceClient } from '../client/service-client.ts';
import { ConfigError as ClientConfigError } from '../client/errors.ts';
import { DEFAULT_API_KEY_ENV, DEFAULT_EMBEDDED_DATA_DIR, type Connection } from '../config/jobSchema.ts';
import type { ServiceSettingsInput } from '../service/settings.ts';

export interface Connected {
  readonly client: ServiceClient;
  /** The API base URL in use (`http://127.0.0.1:PORT/api` for the embedded service). */
  readonly baseUrl: string;
  /** True when the local service was started by this process (in a worker thread of its own). */
  readonly embedded: boolean;
  /** Closes the client, then the embedded service if one was started. */
  close(): Promise<void>;
}

export interface ConnectOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Relative paths (the embedded data dir, its settings file) are resolved against this. */
  readonly cwd: string;
  /** Told once the embedded service is up (it takes a moment on first start: sample data). */
  readonly onEmbedded?: (info: { url: string; dataDir: string }) => void;
}

/**
 * A client for the connection of a job file. With a `base_url` the service is remote and the
 * key must be in the environment; without one the local service is started in a worker thread
 * of this process on 127.0.0.1 and a free port, keeping its data in `embedded.data_dir` so results (and resumable
 * executions) survive from one run to the next.
 */
export async function connect(connection: Connection | undefined, options: ConnectOptions): Promise<Connected> {
  const keyEnv = connection?.api_key_env ?? DEFAULT_API_KEY_ENV;
  const key = options.env[keyEnv];
  const baseUrl = connection?.base_url;
  if (baseUrl !== undefined && baseUrl !== '') {
    if (key === undefined || key === '') {
      throw new ClientConfigError(`the API key is missing: set the environment variable ${keyEnv} (connection.api_key_env) for ${baseUrl}`);
    }
    const client = new ServiceClient({ baseUrl: apiBase(baseUrl), apiKey: key, apiKeyFrom: `the environment variable ${keyEnv}`, env: {} });
    return { client, baseUrl: client.baseUrl, embedded: false, close: () => client.close() };
  }

  // Imported here so that talking to a remote service never loads DuckDB.
  const { startServiceThread } = await import('../service/thread.ts');
  const embedded = connection?.embedded;
  const dataDir = resolve(options.cwd, embedded?.data_dir ?? DEFAULT_EMBEDDED_DATA_DIR);
  let settings: ServiceSettingsInput | string;
  let apiKey: string;
  let apiKeyFrom = `the environment variable ${keyEnv}`;
  if (embedded?.settings !== undefined) {
    settings = resolve(options.cwd, embedded.settings);
    const { loadSettingsFile } = await import('../service/settings.ts');
    const loaded = await loadSettingsFile(settings);
    apiKey = key !== undefined && key !== '' ? key : firstWriteKey(loaded.teams) ?? '';
    if (apiKey === '') throw new ClientConfigError(`${settings}: no API key with the Write or Admin scope; add one or set ${keyEnv}`);
    apiKeyFrom = key !== undefined && key !== '' ? `the environment variable ${keyEnv}` : `the first Write or Admin key of ${settings}`;
  } else {
    // The embedded service is private to this process: any key works, the environment's if set.
    apiKey = key !== undefined && key !== '' ? key : `sk_local_${randomBytes(12).toString('hex')}`;
    settings = { teams: [{ name: 'demo', keys: [{ key: apiKey, scopes: ['Admin'] }] }] };
  }
  // In a thread of its own: the service's page work runs on another core than the export's.
  const service = await startServiceThread({
    dataDir,
    settings,
    ...(embedded?.sample_rows === undefined ? {} : { sampleRows: embedded.sample_rows }),
  });
  options.onEmbedded?.({ url: service.url, dataDir });
  const client = new ServiceClient({ baseUrl: service.url, apiKey, apiKeyFrom, env: {} });
  return {
    client,
    baseUrl: service.url,
    embedded: true,
    async close() {
      await client.close();
      await service.close();
    },
  };
}

/** `https://host` -> `https://host/api`; a URL that already has a path is taken as given. */
export function apiBase(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname === '/' || parsed.pathname === '' ? `${parsed.origin}/api` : url.replace(/\/+$/, '');
}

function firstWriteKey(teams: readonly { keys: readonly { key: string; scopes: readonly string[] }[] }[]): string | undefined {
  for (const team of teams) for (const k of team.keys) if (k.scopes.includes('Write') || k.scopes.includes('Admin')) return k.key;
  return undefined;
}
