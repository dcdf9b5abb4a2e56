import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ExecutionFailedError,
  ForbiddenError,
  InvalidApiKeyError,
  NetworkError,
  NotFoundError,
  PartialResultError,
  PaymentRequiredError,
} from '../../src/client/errors.ts';
import { BudgetExceededError, JobBusyError } from '../../src/jobs/errors.ts';
import { worthRetrying } from '../../src/jobs/run/retryable.ts';
import { ConfigError, DestinationCheckError, DestinationError } from '../../src/kit/errors.ts';

const live = new AbortController().signal;

describe('worthRetrying (whole-run retries of a job)', () => {
  it('retries what a new attempt can fix, even where the request-level `retryable` says no', () => {
    const failed = new ExecutionFailedError('failed', {});
    const write = new DestinationError('file:///x', 'writing', new Error('EIO'));
    // A new attempt is a new execution and a new staging area, not the same request again.
    expect(failed.retryable).toBe(false);
    expect(write.retryable).toBe(false);
    for (const error of [failed, write, new NetworkError('down', { phase: 'connect' }), new Error('anything else')]) {
      expect(worthRetrying(error, live), String(error)).toBe(true);
    }
  });

  it('does not retry mistakes in the job or the account, nor anything after an abort', () => {
    const mistakes = [
      new InvalidApiKeyError('401'),
      new ForbiddenError('403'),
      new PaymentRequiredError('402'),
      new BadRequestError('400'),
      new NotFoundError('404'),
      new BudgetExceededError('j', 'max_credits', 'over'),
      new JobBusyError('j', '/tmp/lock'),
      new ConfigError('output', [{ path: 'format', message: 'bad', value: 'x' }]),
      new PartialResultError('truncated again by a new execution'),
      new DestinationCheckError('s3://b/p', 'the bucket b does not exist'),
    ];
    for (const error of mistakes) expect(worthRetrying(error, live), error.constructor.name).toBe(false);
    const abortError = Object.assign(new Error('stop'), { name: 'AbortError' });
    expect(worthRetrying(abortError, live)).toBe(false);
    expect(worthRetrying(new ExecutionFailedError('failed', {}), AbortSignal.abort())).toBe(false);
  });
});
