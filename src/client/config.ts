import type { Dispatcher } from 'undici';
import { ConfigError } from './errors.ts';
import { DEFAULT_RETRY, type RetryPolicy } from './retryPolicy.ts';
import type { RequestEvent, RetryEvent, ThrottleEvent } from './hooks.ts';
import { ACCEPT_ENCODING } from './contentCoding.ts';
import { RATE_PLANS, rateLimitOf, type RateLimit, type RatePlan } from './governor.ts';

export const API_KEY_ENV = 'SERVICE_API_KEY';
export const BASE_URL_ENV = 'SERVICE_BASE_URL';

/**
 * Most result pages a caller may fetch at once (a job's `concurrency` is capped by it). The client's
 * own connection pool holds this many connections, so that many page requests never wait for a socket.
 */
export const MAX_PAGE_CONCURRENCY = 32;

/** Per-request timeout (from the request being sent on a connection to its last body byte) unless the caller sets `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Whether the client asks for compressed answers (`ClientOptions.compression`). */
export const COMPRESSION_MODES = ['auto', 'on', 'off'] as const;
export type Compression = (typeof COMPRESSION_MODES)[number];

export interface ClientOptions {
  /** Defaults to `$SERVICE_API_KEY`. */
  apiKey?: string;
  /**
   * Where the key came from, as the user set it, e.g. `the environment variable MY_KEY`: a 401 tells
   * them to check exactly that. Default: `the apiKey option` when `apiKey` is given, else `SERVICE_API_KEY`.
   */
  apiKeyFrom?: string;
  /** Origin plus the API prefix, e.g. `http://127.0.0.1:8080/api`. Defaults to `$SERVICE_BASE_URL`. */
  baseUrl?: string;
  /** Send the key as `X-Service-Api-Key` (default) or as the `api_key` query parameter. */
  apiKeyIn?: 'header' | 'query';
  /** Timeout of one HTTP attempt, from its being sent on a connection (not its wait for one in the pool) to the last body byte. */
  timeoutMs?: number;
  /** Overrides of `DEFAULT_RETRY`; `{ attempts: 1 }` turns retries off. */
  retry?: Partial<RetryPolicy>;
  /**
   * The key's request rate: a plan name (`free`, `plus`, `enterprise`: the real service's published
   * limits) or requests per minute per class (`{ read, write }`). Every client of the key in this
   * process shares one budget (governor.ts). Unset: not limited until a 429, then learned from it.
   */
  rateLimit?: RatePlan | RateLimit;
  /** This process's part of the key's rate, in (0, 1]: a shard of N takes 1/N. Default 1. */
  rateShare?: number;
  /** The shared state of a parent thread's governor (`connectionOptions()` carries it): this client takes from that bucket. */
  governor?: SharedArrayBuffer;
  /** An undici dispatcher; default: a keep-alive `Agent` owned (and closed) by the client. */
  dispatcher?: Dispatcher;
  /** False opens a fresh connection per request (benchmarks; proxies that mishandle keep-alive). */
  keepAlive?: boolean;
  userAgent?: string;
  /**
   * Whether to ask for compressed answers (`Accept-Encoding: zstd, br, gzip`; a service that
   * ignores it answers uncompressed, which works the same). `auto` (default): on, except for a
   * service on this machine (a loopback host), where compressing costs more time than the bytes
   * it saves: see docs/protocol.md section 7.
   */
  compression?: Compression;
  /**
   * The service is known to serve Arrow pages (the embedded local service): a read that may go
   * native asks for no CSV pages ahead of its first page (`ResultStream.headStart`), which such a
   * service would answer by encoding CSV that no output reads.
   */
  servesArrowPages?: boolean;
  /** Called before every HTTP attempt (the URL is key-free). */
  onRequest?: (event: RequestEvent) => void;
  /** Called before every retry, with the error that caused it and the delay chosen. */
  onRetry?: (event: RetryEvent) => void;
  /** Called when a request was held back by the key's rate governor, with how long it waited. */
  onThrottle?: (event: ThrottleEvent) => void;
  /** Extra headers for every HTTP attempt, asked for as it is sent, with the client method's name (trace context: `traceparent`); the client's own headers win. */
  requestHeaders?: (operation: string) => Record<string, string>;
  /** Environment to read defaults from (tests); default `process.env`. */
  env?: Record<string, string | undefined>;
}

export interface ResolvedConfig {
  apiKey: string;
  /** Named in the message of a 401 (see `ClientOptions.apiKeyFrom`). */
  apiKeyFrom: string;
  baseUrl: string;
  apiKeyIn: 'header' | 'query';
  timeoutMs: number;
  retry: RetryPolicy;
  keepAlive: boolean;
  userAgent: string;
  compression: Compression;
  /** What the client sends as Accept-Encoding (undefined: no header, answers uncompressed). */
  acceptEncoding: string | undefined;
  rateLimit: RateLimit | undefined;
  rateShare: number;
}

export function resolveConfig(options: ClientOptions): ResolvedConfig {
  const env = options.env ?? process.env;
  const { apiKey, parsed } = where(options.apiKey ?? env[API_KEY_ENV], options.baseUrl ?? env[BASE_URL_ENV]);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new ConfigError(`ServiceClient timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`);
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  if (!Number.isInteger(retry.attempts) || retry.attempts < 1) {
    throw new ConfigError(`ServiceClient retry.attempts must be an integer >= 1 (1 = no retries), got ${retry.attempts}`);
  }
  const compression = options.compression ?? 'auto';
  if (!COMPRESSION_MODES.includes(compression)) {
    throw new ConfigError(`ServiceClient compression must be 'auto', 'on' or 'off', got ${JSON.stringify(compression)}`);
  }
  const rateLimit = options.rateLimit === undefined ? undefined : checkRateLimit(options.rateLimit);
  const rateShare = options.rateShare ?? 1;
  if (!(rateShare > 0 && rateShare <= 1)) throw new ConfigError(`ServiceClient rateShare must be in (0, 1] (a shard of N takes 1/N), got ${rateShare}`);
  const compress = compression === 'on' || (compression === 'auto' && !isLoopback(parsed.hostname));
  return {
    apiKey,
    apiKeyFrom: options.apiKeyFrom ?? (options.apiKey !== undefined ? 'the apiKey option' : `the environment variable ${API_KEY_ENV}`),
    baseUrl: `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`,
    apiKeyIn: options.apiKeyIn ?? 'header',
    timeoutMs,
    retry,
    keepAlive: options.keepAlive ?? true,
    userAgent: options.userAgent ?? 'sluice-client/0.1',
    compression,
    acceptEncoding: compress ? ACCEPT_ENCODING : undefined,
    rateLimit,
    rateShare,
  };
}

/** The API key and the base URL, both given and the URL an http(s) one. */
function where(apiKey: string | undefined, baseUrl: string | undefined): { apiKey: string; parsed: URL } {
  const missing: string[] = [];
  if (!apiKey) missing.push(`the API key: set ${API_KEY_ENV} or pass { apiKey }`);
  if (!baseUrl) {
    missing.push(
      `the base URL: set ${BASE_URL_ENV} (origin plus /api, e.g. http://127.0.0.1:8080/api) or pass { baseUrl }; the library starts no service (the CLI does): for the local one, startService from 'sluice/service' and pass its url`,
    );
  }
  if (!apiKey || !baseUrl) throw new ConfigError(`ServiceClient is missing ${missing.join('; and ')}`);
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new ConfigError(`ServiceClient baseUrl is not a URL: ${JSON.stringify(redactBase(baseUrl))} (expected e.g. http://127.0.0.1:8080/api)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`ServiceClient baseUrl must be http or https, got ${parsed.protocol} (expected e.g. http://127.0.0.1:8080/api)`);
  }
  return { apiKey, parsed };
}

function checkRateLimit(value: RatePlan | RateLimit): RateLimit {
  if (typeof value === 'string' && !Object.hasOwn(RATE_PLANS, value)) {
    throw new ConfigError(`ServiceClient rateLimit ${JSON.stringify(value)} is not a plan: use ${Object.keys(RATE_PLANS).join(', ')} or { read, write } requests per minute`);
  }
  const limit = rateLimitOf(value);
  for (const [cls, rpm] of Object.entries(limit)) {
    if (rpm !== undefined && !(typeof rpm === 'number' && rpm > 0 && Number.isFinite(rpm))) {
      throw new ConfigError(`ServiceClient rateLimit.${cls} must be a positive number of requests per minute, got ${JSON.stringify(rpm)}`);
    }
  }
  return limit;
}

/** A host name that is this machine: `localhost`, 127.0.0.0/8, ::1. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1' || host === '0:0:0:0:0:0:0:1';
}

function redactBase(url: string): string {
  return url.replace(/api_key=[^&#]*/gi, 'api_key=***');
}
