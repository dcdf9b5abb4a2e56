import { afterEach, describe, expect, it } from 'vitest';
import { PaymentRequiredError, RateLimitedError } from '../../src/client/errors.ts';
import { startHealthServer, type HealthServer } from '../../src/scheduler/healthServer.ts';
import { JobHealth, type HealthChange } from '../../src/scheduler/jobHealth.ts';
import { Metrics } from '../../src/scheduler/metrics.ts';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
const paymentRequired = () => new PaymentRequiredError('402 This API request would exceed your configured limits per billing cycle.', { method: 'POST', url: 'http://127.0.0.1/api/v1/sql/execute' });
const rateLimited = () => new RateLimitedError('429 Too many requests', { method: 'GET', url: 'http://127.0.0.1/api/v1/execution/x/status' });

describe('job health', () => {
  it('says a job is failing once its last N runs failed, once per change, not once per run', () => {
    const changes: HealthChange[] = [];
    const health = new JobHealth(['sync', 'other'], { failingAfter: 3, onChange: (c) => changes.push(c) });
    health.succeeded('sync', at(0));
    health.failed('sync', at(1), paymentRequired());
    health.failed('sync', at(2), paymentRequired());
    expect(health.failingJobs()).toEqual([]);
    for (let m = 3; m < 50; m++) health.failed('sync', at(m), paymentRequired());
    expect(changes.map((c) => c.kind)).toEqual(['failing']);
    expect(health.failingJobs().map((s) => [s.job, s.consecutiveFailures, s.lastFailure?.code])).toEqual([['sync', 49, 'PAYMENT_REQUIRED']]);
    // Another cause while failing is a change; the same one again is not.
    health.failed('sync', at(50), rateLimited());
    health.failed('sync', at(51), rateLimited());
    expect(changes.map((c) => c.kind)).toEqual(['failing', 'cause changed']);
    expect(changes[1]).toMatchObject({ previous: { code: 'PAYMENT_REQUIRED' }, state: { lastFailure: { code: 'RATE_LIMITED' } } });
    // A stop by shutdown counts neither way.
    health.stopped('sync', at(52));
    expect(health.isFailing('sync')).toBe(true);
    health.succeeded('sync', at(53));
    expect(changes.map((c) => c.kind)).toEqual(['failing', 'cause changed', 'recovered']);
    expect(health.failingJobs()).toEqual([]);
    expect(health.states().find((s) => s.job === 'other')).toMatchObject({ runs: 0, failing: false });
  });

  it('refuses a threshold that is not a whole number of runs', () => {
    expect(() => new JobHealth([], { failingAfter: 0 })).toThrow(/at least 1/);
  });
});

describe('/readyz and /status', () => {
  let server: HealthServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('/healthz stays 200 (liveness) while /readyz answers 503 with the failing jobs and why; /status lists every job', async () => {
    const health = new JobHealth(['sync', 'report'], { failingAfter: 2 });
    let stopping = false;
    server = await startHealthServer({ port: 0, metrics: new Metrics(), healthy: () => !stopping, health, nextRun: () => at(59) });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    health.succeeded('report', at(0));
    health.failed('sync', at(1), paymentRequired());
    health.failed('sync', at(2), paymentRequired());
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { status: string; failing: { job: string; consecutive_failures: number; last_error: { code: string; message: string } }[] };
    expect(body.status).toBe('failing');
    expect(body.failing.map((j) => [j.job, j.consecutive_failures, j.last_error.code])).toEqual([['sync', 2, 'PAYMENT_REQUIRED']]);
    expect(body.failing[0]!.last_error.message).toMatch(/billing cycle/);

    const status = (await (await fetch(`${server.url}/status`)).json()) as { status: string; jobs: Record<string, unknown>[] };
    expect(status.status).toBe('failing');
    expect(status.jobs).toEqual([
      expect.objectContaining({ job: 'sync', failing: true, runs: 2, failures: 2, last_outcome: 'failed', last_success_at: null, next_run_at: at(59).toISOString() }),
      expect.objectContaining({ job: 'report', failing: false, runs: 1, failures: 0, last_outcome: 'succeeded', last_success_at: at(0).toISOString(), last_error: null }),
    ]);
    stopping = true;
    expect(await (await fetch(`${server.url}/readyz`)).json()).toMatchObject({ status: 'stopping' });
  });
});
