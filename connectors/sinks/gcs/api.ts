import { setTimeout as sleep } from 'node:timers/promises';
import type { GoogleAuth } from 'google-auth-library';
import { type Dispatcher, request } from 'undici';
import { ConfigError, DestinationError } from '../../../src/kit/index.ts';
import type { GcsConfig } from './options.ts';

export const SCOPE = 'https://www.googleapis.com/auth/devstorage.read_write';
const DEFAULT_ENDPOINT = 'https://storage.googleapis.com';

// Google's advice for its JSON API: retry 408, 429 and 5xx (and broken connections) with
// exponential backoff and jitter; a request whose body cannot be sent again is not retried here.
const ATTEMPTS = 5;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 8000;
const RETRY_STATUS = (status: number) => status === 408 || status === 429 || status >= 500;

export interface Call {
  readonly method: Dispatcher.HttpMethod;
  /** Absolute URL (a resumable session's) or a path under the endpoint. */
  readonly path: string;
  readonly query?: Record<string, string | undefined>;
  readonly headers?: Record<string, string>;
  readonly body?: Uint8Array | string;
  readonly signal?: AbortSignal | undefined;
  /** What the call is, for messages: `PUT part-0.csv`. */
  readonly what: string;
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Dispatcher.ResponseData['body'];
}

export interface GcsApi {
  readonly endpoint: string;
  /** Sends a call (retrying transient failures); every status comes back, the caller decides. */
  send(call: Call): Promise<Answer>;
  /** An error for an answer the caller did not expect: the method, name, status and Google's message. */
  fail(call: Call, answer: Answer): Promise<DestinationError>;
}

/** The JSON API's endpoint and credentials for a `gcs` block: the block's, else STORAGE_EMULATOR_HOST, else Google's. */
export function gcsApi(config: GcsConfig, url: string, env: NodeJS.ProcessEnv): GcsApi {
  const emulator = env.STORAGE_EMULATOR_HOST === undefined || env.STORAGE_EMULATOR_HOST === '' ? undefined : env.STORAGE_EMULATOR_HOST.replace(/^(?!https?:\/\/)/, 'http://');
  const endpoint = (config.endpoint ?? emulator ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
  const anonymous = config.anonymous || (emulator !== undefined && config.endpoint === undefined && config.key_file === undefined);
  const authorize = anonymous ? async () => ({}) : authorizer(config, url);
  const send = async (call: Call): Promise<Answer> => {
    const target = new URL(call.path.startsWith('http') ? call.path : `${endpoint}${call.path}`);
    for (const [key, value] of Object.entries({ ...call.query, userProject: config.user_project })) if (value !== undefined) target.searchParams.set(key, value);
    for (let attempt = 1; ; attempt += 1) {
      const headers = { ...(await authorize()), ...call.headers };
      try {
        const answer = await request(target, { method: call.method, headers, body: call.body, signal: call.signal });
        if (attempt < ATTEMPTS && RETRY_STATUS(answer.statusCode)) {
          await answer.body.dump();
        } else {
          return { status: answer.statusCode, headers: answer.headers, body: answer.body };
        }
      } catch (error) {
        call.signal?.throwIfAborted();
        if (attempt >= ATTEMPTS || !isConnectionError(error)) throw new DestinationError(url, call.what, error, true);
      }
      const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1));
      await sleep(delay / 2 + Math.random() * (delay / 2), undefined, { signal: call.signal });
    }
  };
  const fail = async (call: Call, answer: Answer): Promise<DestinationError> => {
    const text = await answer.body.text().catch(() => '');
    const message = googleMessage(text);
    return new DestinationError(url, call.what, new Error(`${answer.status}${message ? ` ${message}` : ''}`), RETRY_STATUS(answer.status));
  };
  return { endpoint, send, fail };
}

/** Request headers from google-auth-library's chain: the block's key file, else application default credentials. */
function authorizer(config: GcsConfig, url: string): () => Promise<Record<string, string>> {
  let auth: Promise<GoogleAuth> | undefined;
  return async () => {
    // A project id is named so that none is looked up: the object calls take no project (a
    // requester-pays bucket's comes with each call as userProject), and application default
    // credentials otherwise look one up before the first token: for workload identity federation
    // through Cloud Resource Manager, which the identity is seldom allowed to read (the run then
    // fails), elsewhere by running gcloud or asking the metadata server.
    auth ??= import('google-auth-library').then(({ GoogleAuth }) => new GoogleAuth({ scopes: [SCOPE], projectId: config.user_project ?? '-', ...(config.key_file ? { keyFile: config.key_file } : {}) }));
    try {
      const headers = await (await auth).getRequestHeaders();
      return Object.fromEntries(headers.entries());
    } catch (error) {
      const from = config.key_file ? `the key file ${config.key_file}` : 'application default credentials';
      throw new ConfigError(`${url}: no Google credentials from ${from} (${(error as Error).message}): set GOOGLE_APPLICATION_CREDENTIALS to a key file, run \`gcloud auth application-default login\`, run with a workload identity, or give the gcs block's key_file (anonymous: true for a public bucket)`, { cause: error });
    }
  };
}

function googleMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
  } catch {
    // Not Google's JSON error: its text, cut short.
  }
  return text.slice(0, 200);
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^(?:ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/.test(code);
}
