import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AbortedError, RateLimitedError, ServiceClient, type RetryEvent } from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// The client against the real service misbehaving on purpose (its `faults` setting).
const SQL = 'SELECT id, name, value, amount, ts FROM sample.events ORDER BY id';
const SLOW_SQL = 'SELECT sum(hash(a.range * b.range)) FROM range(200000) a, range(200000) b';
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 100 } });
});

afterAll(async () => {
  svc.setFaults({ error_rate: 0, reset_rate: 0, latency_ms: 0 });
  await svc.close();
});

/** Executions the service has recorded (its catalog keeps one document per execution). */
async function executionCount(): Promise<number> {
  const names = await readdir(join(svc.dataDir, 'catalog', 'executions'));
  return names.filter((n) => n.endsWith('.json')).length;
}

describe('faults', () => {
  it('run() under 500/502/503/429, resets mid-body and latency returns exactly the fault-free rows; retries bounded and counted', async () => {
    const clean = new ServiceClient({ apiKey: svc.keys.demo.write, baseUrl: svc.url });
    const expected = await clean.run(SQL);
    await clean.close();
    expect(expected).toHaveLength(2000);

    const events: RetryEvent[] = [];
    const policy = { attempts: 12, baseDelayMs: 1, maxDelayMs: 10 };
    const client = new ServiceClient({ apiKey: svc.keys.demo.write, baseUrl: svc.url, retry: policy, onRetry: (e) => events.push(e) });
    const before = { ...svc.faultCounts };
    const executionsBefore = await executionCount();
    svc.setFaults({ error_rate: 0.25, error_statuses: [500, 502, 503, 429], reset_rate: 0.25, latency_ms: 2 });
    try {
      const rows = await client.run(SQL);
      expect(rows).toEqual(expected);
    } finally {
      svc.setFaults({ error_rate: 0, reset_rate: 0, latency_ms: 0 });
      await client.close();
    }
    const errors = svc.faultCounts.errors - before.errors;
    const resets = svc.faultCounts.resets - before.resets;
    // Each faulted answer cost exactly one retry (a reset may also hit a faulted error answer, which
    // is then one failure, not two); and there were some of each kind.
    expect(errors).toBeGreaterThan(0);
    expect(resets).toBeGreaterThan(0);
    expect(client.stats.retries).toBeGreaterThanOrEqual(errors);
    expect(client.stats.retries).toBeLessThanOrEqual(errors + resets);
    expect(events).toHaveLength(client.stats.retries);
    expect(events.every((e) => ['SERVER_ERROR', 'RATE_LIMITED', 'NETWORK'].includes(e.error.code))).toBe(true);
    expect(events.some((e) => e.error.code === 'NETWORK')).toBe(true);
    expect(Math.max(...events.map((e) => e.attempt))).toBeLessThan(policy.attempts);
    // Faulted submissions were resent, and yet exactly one execution was created.
    expect(await executionCount()).toBe(executionsBefore + 1);
  });

  it('a submission answered 429/500 is resent and creates exactly one execution', async () => {
    const statuses: number[] = [];
    const client = new ServiceClient({ apiKey: svc.keys.demo.write, baseUrl: svc.url, retry: { attempts: 50, baseDelayMs: 1, maxDelayMs: 2 }, onRetry: (e) => statuses.push(e.error.status ?? 0) });
    const executionsBefore = await executionCount();
    svc.setFaults({ error_rate: 0.6, error_statuses: [500, 429] });
    // Faults are drawn at random: submit until some were answered with one (at least 5 submissions;
    // the chance of none in 50 is 0.4^50), so the test always checks a resent submission.
    let submitted = 0;
    try {
      while (submitted < 5 || (statuses.length === 0 && submitted < 50)) {
        await client.executeSql('SELECT 1');
        submitted++;
      }
    } finally {
      svc.setFaults({ error_rate: 0 });
      await client.close();
    }
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 500 || s === 429)).toBe(true);
    expect(await executionCount()).toBe(executionsBefore + submitted);
  });

  it('honours Retry-After: the wait before the retry is at least the advertised delay', async () => {
    const events: RetryEvent[] = [];
    const client = new ServiceClient({ apiKey: svc.keys.demo.read, baseUrl: svc.url, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }, onRetry: (e) => events.push(e) });
    svc.setFaults({ error_rate: 1, error_statuses: [429], retry_after_seconds: 1 });
    try {
      const err = await client.getStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitedError);
      expect((err as RateLimitedError).retryAfterMs).toBe(1000);
    } finally {
      svc.setFaults({ error_rate: 0, retry_after_seconds: 0 });
      await client.close();
    }
    expect(events.map((e) => e.delayMs)).toEqual([1000]);
  });

  it('gives up at once when Retry-After lies beyond the time budget', async () => {
    // A 429 pauses its key's requests in the whole process (the rate governor is per URL and key):
    // a key no other test here uses, or the next test's first request would wait out the 30 s.
    const client = new ServiceClient({ apiKey: svc.keys.other.read, baseUrl: svc.url, retry: { maxElapsedMs: 500 } });
    svc.setFaults({ error_rate: 1, error_statuses: [429], retry_after_seconds: 30 });
    try {
      await expect(client.getStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV')).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 30_000 });
      expect(client.stats).toEqual({ requests: 1, retries: 0 });
    } finally {
      svc.setFaults({ error_rate: 0, retry_after_seconds: 0 });
      await client.close();
    }
  });
});

describe('abort', () => {
  it('aborting during wait() stops polling at once: no status request after the abort', async () => {
    let statusRequests = 0;
    let afterAbort = 0;
    const controller = new AbortController();
    const client = new ServiceClient({
      apiKey: svc.keys.demo.write,
      baseUrl: svc.url,
      onRequest: (e) => {
        if (e.operation !== 'getStatus') return;
        statusRequests++;
        if (controller.signal.aborted) afterAbort++;
        if (statusRequests === 3) controller.abort(new Error('user pressed ^C'));
      },
    });
    const exec = await client.execute({ sql: SLOW_SQL });
    try {
      const err = await exec.wait({ signal: controller.signal, pollIntervalMs: 5, maxPollIntervalMs: 5 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AbortedError);
      expect((err as AbortedError).executionId).toBe(exec.id);
      expect((err as Error).cause).toEqual(new Error('user pressed ^C'));
      const atAbort = statusRequests;
      // Give a leaked poll loop (5 ms interval) every chance to show itself.
      await new Promise((r) => setTimeout(r, 100));
      expect(statusRequests).toBe(atAbort);
      expect(afterAbort).toBe(0);
      expect(client.stats.retries).toBe(0);
    } finally {
      await exec.cancel();
      await client.close();
    }
  });

  it('aborting while a backoff wait is pending ends the call at once', async () => {
    const controller = new AbortController();
    const client = new ServiceClient({
      apiKey: svc.keys.demo.read,
      baseUrl: svc.url,
      retry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000, maxElapsedMs: 600_000 },
      onRetry: () => controller.abort(),
    });
    svc.setFaults({ error_rate: 1, error_statuses: [503] });
    try {
      const err = await client.getStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV', { signal: controller.signal }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AbortedError);
      expect(client.stats).toEqual({ requests: 1, retries: 1 });
    } finally {
      svc.setFaults({ error_rate: 0 });
      await client.close();
    }
  });
});

describe('wait deadline', () => {
  it('a slow status answer does not stretch deadlineMs: TimeoutError, not retried', async () => {
    const client = new ServiceClient({ apiKey: svc.keys.demo.write, baseUrl: svc.url });
    const exec = await client.execute({ sql: 'SELECT 1' });
    svc.setFaults({ latency_ms: 2_000 });
    const started = Date.now();
    try {
      const err = await exec.wait({ deadlineMs: 100 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'TIMEOUT', retryable: false, executionId: exec.id });
      expect((err as Error).message).toContain('status request unanswered (no state known yet)');
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(client.stats.retries).toBe(0);
    } finally {
      svc.setFaults({ latency_ms: 0 });
      await client.close();
    }
  });
});
