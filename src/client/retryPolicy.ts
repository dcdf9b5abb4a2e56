import { NetworkError, saysRetryLater, TimeoutError, type ServiceError } from './errors.ts';

export interface RetryPolicy {
  /** Total attempts including the first; 1 disables retries. */
  attempts: number;
  /** Backoff before retry n is a random delay in [0, min(maxDelayMs, baseDelayMs * 2^(n-1))] ("full jitter"). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry starts later than this after the first attempt, and no Retry-After wait may cross it. */
  maxElapsedMs: number;
  /** Whether backoff waits are random in [0, ceiling] (default) or the ceiling itself (`false`: 1x, 2x, 4x ... the base). */
  jitter?: boolean;
  /** A cap on one wait, a server's Retry-After included (undefined: a Retry-After past `maxElapsedMs` ends the retries instead). */
  maxWaitMs?: number;
}

/** The one place the retry defaults live. */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  attempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  maxElapsedMs: 60_000,
});

/**
 * Whether an operation may simply be sent again. Reads, cancel, archive/unarchive, update, upsert and
 * delete are idempotent. Execute (SQL or query), view refresh and query create are not: each accepted
 * request creates something (an execution, a query), so a blind resend can create a second one.
 */
export type Idempotency = 'idempotent' | 'creates';

/** 504 is left out for `creates`: a gateway timing out says nothing about whether the service acted. */
const REJECTED_BEFORE_ACTING = new Set([429, 500, 502, 503]);

/**
 * The retry rule, including the resubmission rule for requests that create something:
 *
 * - Idempotent requests are retried on 429, any 5xx, connection failures at any point (refused,
 *   reset before or during the response, socket closed mid-body) and per-request timeouts.
 * - Creating requests (execute, refresh, create query) are retried only when the first attempt
 *   provably created nothing:
 *   - the answer was 429, 500, 502 or 503: the service rejects with these before acting
 *     (rate limit, fault, overload), so nothing was accepted;
 *   - the connection failed before the request was written (`phase: 'connect'`: refused,
 *     unreachable, DNS, connect timeout).
 *   When the request was written but the answer was lost (reset before the status line, reset
 *   mid-body, timeout), the service may have accepted it. The transport first tries to salvage the
 *   execution id from whatever part of a 200 body arrived; failing that the caller gets
 *   `SubmissionOutcomeUnknownError` (not retryable) and nothing is resent.
 * - Every other status (400, 401, 402, 403, 404, 409, ...) is final.
 */
export function mayRetry(error: ServiceError, idempotency: Idempotency): boolean {
  if (!error.retryable) return false;
  if (idempotency === 'idempotent') return true;
  if (saysRetryLater(error)) {
    return error.status !== undefined && REJECTED_BEFORE_ACTING.has(error.status);
  }
  if (error instanceof NetworkError) return !error.requestSent;
  if (error instanceof TimeoutError) return false;
  return false;
}

/** Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): spreads retrying clients apart. */
export function backoffDelay(policy: RetryPolicy, retryNumber: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retryNumber - 1));
  return policy.jitter === false ? ceiling : Math.floor(random() * ceiling);
}

/** The wait before retry `retryNumber`: the backoff, at least what the server asked for (`Retry-After`), within the policy's cap. */
export function retryDelay(policy: RetryPolicy, retryNumber: number, retryAfterMs: number | undefined, random: () => number = Math.random): number {
  const wait = Math.max(backoffDelay(policy, retryNumber, random), retryAfterMs ?? 0);
  return policy.maxWaitMs === undefined ? wait : Math.min(wait, policy.maxWaitMs);
}

/** `Retry-After` as delta-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const trimmed = v.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
