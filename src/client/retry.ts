import { AbortedError, saysRetryLater, ServiceError, type ErrorContext } from './errors.ts';
import type { ClientStats, RetryEvent } from './hooks.ts';
import { mayRetry, retryDelay, type Idempotency, type RetryPolicy } from './retryPolicy.ts';

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
 * Whether a failed try is tried again: `false` (final: the error is rethrown), or the wait the
 * server asked for (`retryAfterMs`, from `Retry-After`; undefined: the backoff alone).
 */
export type RetryVerdict = false | { readonly retryAfterMs?: number | undefined };

export interface RetryLoop {
  readonly policy: RetryPolicy;
  /** Whether (and how soon) the error of try `n` is tried again. */
  readonly retryable: (error: unknown, n: number) => RetryVerdict;
  readonly signal?: AbortSignal | undefined;
  readonly onRetry?: ((n: number, delayMs: number, error: unknown) => void) | undefined;
  /** The wait (the default rejects with `AbortedError` when `signal` fires). */
  readonly sleep?: ((ms: number, signal: AbortSignal | undefined) => Promise<void>) | undefined;
}

/**
 * The one retry loop (the client's requests, the REST catalog's, the webhook's deliveries): runs
 * `attempt` until it succeeds, the error is final, the attempts are used up, or the next wait would
 * cross `maxElapsedMs`. The last error is rethrown unchanged. A `Retry-After` is a floor on the
 * wait (`retryDelay`); when it lies beyond the time budget the loop gives up at once rather than
 * retry early into another 429.
 */
export async function retrying<T>(attempt: (n: number) => Promise<T>, loop: RetryLoop): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      const verdict = n >= loop.policy.attempts ? false : loop.retryable(err, n);
      if (verdict === false) throw err;
      const delayMs = retryDelay(loop.policy, n, verdict.retryAfterMs);
      if (Date.now() - started + delayMs > loop.policy.maxElapsedMs) throw err;
      loop.onRetry?.(n, delayMs, err);
      await (loop.sleep ?? ((ms, signal) => sleep(ms, signal, {})))(delayMs, loop.signal);
    }
  }
}

/** The client's middle layer: `retrying` with the rule of `mayRetry`, counted in the client's stats. */
export function withRetry<T>(attempt: (n: number) => Promise<T>, ctx: RetryContext): Promise<T> {
  return retrying(attempt, {
    policy: ctx.policy,
    signal: ctx.signal,
    retryable: (err) => (err instanceof ServiceError && mayRetry(err, ctx.idempotency) ? { retryAfterMs: saysRetryLater(err) ? err.retryAfterMs : undefined } : false),
    onRetry: (n, delayMs, err) => {
      ctx.stats.retries++;
      ctx.onRetry?.({ operation: ctx.operation, attempt: n, delayMs, error: err as ServiceError });
    },
    sleep: (ms, signal) => sleep(ms, signal, ctx.errorContext),
  });
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
