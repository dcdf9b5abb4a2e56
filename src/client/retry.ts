import { AbortedError, saysRetryLater, ServiceError, type ErrorContext } from './errors.ts';
import type { ClientStats, RetryEvent } from './hooks.ts';
import { backoffDelay, mayRetry, type Idempotency, type RetryPolicy } from './retry-policy.ts';

export interface RetryContext {
  operation: string;
  idempotency: Idempotency;
  policy: RetryPolicy;
  signal?: AbortSignal | undefined;
  stats: ClientStats;
  onRetry?: ((event: RetryEvent) => void) | undefined;
  /** For the error raised when the caller aborts during a backoff wait. */
  errorContext: ErrorContext;
}

/**
 * The middle layer: runs `attempt` until it succeeds, the error is final (see `mayRetry`), the attempts
 * are used up, or the next wait would cross `maxElapsedMs`. The last error is rethrown unchanged.
 * A `Retry-After` (on a 429, or a 5xx such as 503) is a floor on the wait; when it lies beyond the time budget we give up at once
 * rather than retry early into another 429.
 */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, ctx: RetryContext): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!(err instanceof ServiceError) || n >= ctx.policy.attempts || !mayRetry(err, ctx.idempotency)) throw err;
      let delayMs = backoffDelay(ctx.policy, n);
      if (saysRetryLater(err) && err.retryAfterMs !== undefined) {
        delayMs = Math.max(delayMs, err.retryAfterMs);
      }
      if (Date.now() - started + delayMs > ctx.policy.maxElapsedMs) throw err;
      ctx.stats.retries++;
      ctx.onRetry?.({ operation: ctx.operation, attempt: n, delayMs, error: err });
      await sleep(delayMs, ctx.signal, ctx.errorContext);
    }
  }
}

/** Resolves after `ms`, or rejects with `AbortedError` as soon as `signal` fires. */
export function sleep(ms: number, signal: AbortSignal | undefined, ctx: ErrorContext): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => new AbortedError('aborted by the caller', { ...ctx, cause: signal?.reason });
    if (signal?.aborted) return reject(aborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
