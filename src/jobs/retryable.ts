import {
  AbortedError,
  BadRequestError,
  ConfigError as ClientConfigError,
  ForbiddenError,
  InvalidApiKeyError,
  InvalidArgumentError,
  NotFoundError,
  PaymentRequiredError,
} from '../client/errors.ts';
import { KitError } from '../kit/errors.ts';
import { BudgetExceededError, JobBusyError } from './errors.ts';

/**
 * Whether running the job again could succeed. Mistakes in the job or the account (bad
 * options, bad key, no credits, over budget, unknown query) fail the same way every time, and
 * an abort means stop: those are not retried. Everything else (an execution that failed, the
 * network, a full disk, S3) is.
 *
 * Not `SluiceError.retryable`, on purpose: that flag answers "would the same request succeed if
 * sent again" (the client's retry policy), and says no for a failed execution or a write error.
 * A job retry is not the same request: it starts a new execution (engine hiccups, a result that
 * expired) and writes a new staging area, so it is worth trying exactly when the cause is not in
 * the job file or the account. The test (test/jobs/retryable.test.ts) pins both lists.
 */
export function worthRetrying(error: unknown, signal: AbortSignal): boolean {
  if (signal.aborted) return false;
  if (error instanceof AbortedError || (error instanceof Error && error.name === 'AbortError')) return false;
  if (
    error instanceof ClientConfigError ||
    error instanceof InvalidArgumentError ||
    error instanceof BadRequestError ||
    error instanceof InvalidApiKeyError ||
    error instanceof ForbiddenError ||
    error instanceof PaymentRequiredError ||
    error instanceof NotFoundError ||
    error instanceof BudgetExceededError ||
    error instanceof JobBusyError
  ) {
    return false;
  }
  if (error instanceof KitError && error.code === 'config_invalid') return false;
  return true;
}
