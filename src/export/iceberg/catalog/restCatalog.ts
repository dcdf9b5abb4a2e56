import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { retrying } from '../../../client/retry.ts';
import { parseRetryAfter, type RetryPolicy } from '../../../client/retryPolicy.ts';
import { exactJsonText, parseExactJson } from '../metadata.ts';
import { type CatalogAuthorizer, catalogAuthorizer } from './catalogAuth.ts';
import { type RestCatalogConfig } from './catalogConfig.ts';
import { type CatalogErrorCode, IcebergCatalogError } from './catalogErrors.ts';

/** Attempts of a request the catalog may answer next time (network failure, 429, 503), with backoff from this base. */
/** Requests to the catalog: 4 tries, 250 ms doubled between them, a Retry-After taken up to 30 s. */
const CATALOG_RETRY: RetryPolicy = Object.freeze({ attempts: 4, baseDelayMs: 250, maxDelayMs: 30_000, maxElapsedMs: Number.POSITIVE_INFINITY, jitter: false, maxWaitMs: 30_000 });

export interface CatalogResponse {
  readonly status: number;
  readonly json: unknown;
  /** The error model's `type` (NoSuchTableException, CommitFailedException, ...), when the body has one. */
  readonly errorType: string | undefined;
  readonly message: string;
}

const errorModel = z.looseObject({ error: z.looseObject({ message: z.string(), type: z.string(), code: z.number() }) });
const configResponse = z.looseObject({ defaults: z.record(z.string(), z.string()).optional(), overrides: z.record(z.string(), z.string()).optional() });

/**
 * The few calls of the Iceberg REST catalog protocol a writer needs, over fetch: `GET /v1/config`
 * (the warehouse's prefix), then requests under `/v1/{prefix}/`. Every request carries the
 * configured auth; a 401 renews an OAuth2 token once. A network failure, a 429 or a 503 is tried
 * again with backoff; other answers go to the caller with the error model's type.
 */
export class RestCatalog {
  /** How errors name the catalog: its URI and warehouse. */
  readonly name: string;
  private readonly base: string;
  private readonly auth: CatalogAuthorizer;
  private readonly config: RestCatalogConfig;
  private prefix: Promise<string> | undefined;

  constructor(config: RestCatalogConfig) {
    this.config = config;
    this.base = config.uri.replace(/\/+$/, '');
    this.name = config.warehouse === undefined ? this.base : `${this.base} (warehouse ${config.warehouse})`;
    this.auth = catalogAuthorizer(config.auth, this.base, this.name);
  }

  /** `/v1/{prefix}/...` for a path under the prefix the catalog gave for the warehouse. */
  async path(rest: string, signal?: AbortSignal): Promise<string> {
    this.prefix ??= this.loadPrefix(signal);
    this.prefix.catch(() => (this.prefix = undefined));
    const prefix = await this.prefix;
    return prefix === '' ? `/v1/${rest}` : `/v1/${prefix.split('/').map(encodeURIComponent).join('/')}/${rest}`;
  }

  private async loadPrefix(signal?: AbortSignal): Promise<string> {
    const response = await this.request('GET', '/v1/config', { query: this.config.warehouse === undefined ? {} : { warehouse: this.config.warehouse }, signal });
    if (response.status !== 200) {
      const code: CatalogErrorCode = response.status === 404 || response.status === 400 ? 'CATALOG_NOT_FOUND' : 'CATALOG_REJECTED';
      const what = this.config.warehouse === undefined ? 'GET /v1/config failed' : `warehouse ${this.config.warehouse} was not accepted by GET /v1/config`;
      throw new IcebergCatalogError(code, this.name, `${what} (HTTP ${response.status}: ${response.message}); check catalog.warehouse and catalog.uri`);
    }
    const parsed = configResponse.safeParse(response.json);
    if (!parsed.success) throw new IcebergCatalogError('CATALOG_REJECTED', this.name, 'GET /v1/config did not answer an Iceberg REST catalog configuration; check catalog.uri (it is the URI engines are given, without /v1)');
    // Overrides win over the client's own settings, defaults only fill gaps (the spec's order).
    return parsed.data.overrides?.prefix ?? parsed.data.defaults?.prefix ?? '';
  }

  /** One request: auth, the JSON body (64-bit ids exact), retries of what may pass next time (`CATALOG_RETRY`). */
  async request(method: string, path: string, options: { query?: Record<string, string>; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal | undefined } = {}): Promise<CatalogResponse> {
    const url = new URL(`${this.base}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
    const body = options.body === undefined ? undefined : exactJsonText(options.body);
    const headers: Record<string, string> = { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers };
    const sent = { method, url, headers, body, signal: options.signal };
    let renewed = false;
    return retrying(
      async (attempt) => {
        const response = await this.#send(sent, attempt);
        const result = await catalogResponse(response);
        // A token the catalog refused once is renewed, and the request sent again.
        if (response.status === 401 && !renewed && this.auth.refused()) {
          renewed = true;
          throw new TryAgain(undefined);
        }
        if (response.status === 401 || response.status === 403 || response.status === 419) {
          throw new IcebergCatalogError('CATALOG_AUTH_REFUSED', this.name, `${method} ${url.pathname} was refused (HTTP ${response.status}: ${result.message}); check catalog.auth (the credentials and their grants on the warehouse, namespace and table)`);
        }
        // 503 and 429 mean "not now" for every call, a commit too (the spec: the commit was not applied); the last answer is the caller's.
        if ((response.status === 503 || response.status === 429) && attempt < CATALOG_RETRY.attempts) throw new TryAgain(parseRetryAfter(response.headers.get('retry-after') ?? undefined));
        return result;
      },
      {
        policy: CATALOG_RETRY,
        signal: options.signal,
        retryable: (error) => (error instanceof TryAgain ? { retryAfterMs: error.retryAfterMs } : error instanceof IcebergCatalogError && error.code === 'CATALOG_UNREACHABLE' && options.signal?.aborted !== true ? {} : false),
        sleep: (ms, signal) => sleep(ms, undefined, signal ? { signal } : {}),
      },
    );
  }

  async #send(sent: { method: string; url: URL; headers: Record<string, string>; body: string | undefined; signal: AbortSignal | undefined }, attempt: number): Promise<Response> {
    const { method, url, headers, body, signal } = sent;
    signal?.throwIfAborted();
    try {
      const auth = await this.auth.authorize({ method, url, headers, body }, signal);
      return await fetch(url, { method, headers: { ...headers, ...auth }, ...(body === undefined ? {} : { body }), ...(signal ? { signal } : {}) });
    } catch (error) {
      if (error instanceof IcebergCatalogError || signal?.aborted) throw error;
      throw new IcebergCatalogError('CATALOG_UNREACHABLE', this.name, `${method} ${url.pathname} did not answer after ${attempt} attempts (${(error as Error).message}); check catalog.uri and that the catalog is up`, { cause: error, retryable: true });
    }
  }
}

/** Tried again: the catalog said "not now" (after `retryAfterMs`, when it said), or a renewed token is to be sent. */
class TryAgain extends Error {
  readonly retryAfterMs: number | undefined;

  constructor(retryAfterMs: number | undefined) {
    super('try again');
    this.retryAfterMs = retryAfterMs;
  }
}

/** The catalog's answer, its error model read when it sent one. */
async function catalogResponse(response: Response): Promise<CatalogResponse> {
  const text = await response.text();
  const json = text === '' ? undefined : safeParse(text);
  const failure = errorModel.safeParse(json);
  return {
    status: response.status,
    json,
    errorType: failure.success ? failure.data.error.type : undefined,
    message: failure.success ? failure.data.error.message : text.slice(0, 200) || response.statusText,
  };
}

function safeParse(text: string): unknown {
  try {
    return parseExactJson(text);
  } catch {
    return undefined;
  }
}

/** A namespace as a path segment: levels joined by the unit separator (0x1F), as the spec says. */
export function namespacePath(levels: readonly string[]): string {
  return encodeURIComponent(levels.join('\u001f'));
}
