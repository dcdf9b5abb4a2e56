import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  BadRequestError,
  DEFAULT_RETRY,
  ForbiddenError,
  mayRetry,
  NetworkError,
  NotFoundError,
  parseRetryAfter,
  RateLimitedError,
  ServerError,
  SubmissionOutcomeUnknownError,
  TimeoutError,
} from '../../src/client/index.ts';

describe('retry policy', () => {
  it('backs off exponentially with full jitter, capped at maxDelayMs', () => {
    const top = () => 0.999999;
    expect(backoffDelay(DEFAULT_RETRY, 1, top)).toBe(199);
    expect(backoffDelay(DEFAULT_RETRY, 2, top)).toBe(399);
    expect(backoffDelay(DEFAULT_RETRY, 3, top)).toBe(799);
    expect(backoffDelay(DEFAULT_RETRY, 20, top)).toBe(9999);
    expect(backoffDelay(DEFAULT_RETRY, 3, () => 0)).toBe(0);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
    const now = Date.parse('2026-11-20T10:00:00Z');
    expect(parseRetryAfter('Fri, 20 Nov 2026 10:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter('Fri, 20 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it('retries reads on 429, 5xx, network errors and timeouts, never on other 4xx', () => {
    const ctx = { status: 500 };
    expect(mayRetry(new ServerError('x', { status: 504 }), 'idempotent')).toBe(true);
    expect(mayRetry(new RateLimitedError('x', { status: 429 }), 'idempotent')).toBe(true);
    expect(mayRetry(new NetworkError('x', { phase: 'response-body' }), 'idempotent')).toBe(true);
    expect(mayRetry(new TimeoutError('x', { retryable: true }), 'idempotent')).toBe(true);
    for (const E of [BadRequestError, ForbiddenError, NotFoundError]) expect(mayRetry(new E('x', ctx), 'idempotent')).toBe(false);
  });

  it('resends a submission only when it provably created nothing', () => {
    expect(mayRetry(new RateLimitedError('x', { status: 429 }), 'creates')).toBe(true);
    expect(mayRetry(new ServerError('x', { status: 500 }), 'creates')).toBe(true);
    expect(mayRetry(new ServerError('x', { status: 503 }), 'creates')).toBe(true);
    expect(mayRetry(new ServerError('x', { status: 504 }), 'creates')).toBe(false);
    expect(mayRetry(new NetworkError('x', { phase: 'connect' }), 'creates')).toBe(true);
    expect(mayRetry(new NetworkError('x', { phase: 'response-headers' }), 'creates')).toBe(false);
    expect(mayRetry(new SubmissionOutcomeUnknownError('x', { phase: 'response-body' }), 'creates')).toBe(false);
    expect(mayRetry(new TimeoutError('x', { retryable: true }), 'creates')).toBe(false);
  });
});
