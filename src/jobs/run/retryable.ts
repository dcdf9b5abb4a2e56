import { policyOf } from './errorPolicy.ts';

/**
 * Whether running the job again could succeed: the `retryJob` column of the one error table
 * (src/jobs/run/errorPolicy.ts, which says why it differs from `SluiceError.retryable`). After an abort,
 * never: an abort means stop.
 */
export function worthRetrying(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && policyOf(error).retryJob;
}
