// Over HTTP: credits per billing cycle (402, roll-over), rate limits (429 per key and
// class), tier timeouts and usage. Time is a ManualClock the tests move.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGES, UsageSchema } from '../../../src/protocol/index.ts';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, executeSql, LONG_SQL, status, waitFor } from '../api.ts';
import { startLimitsService } from './limitsService.ts';

const DAY = 86_400_000;

describe('credits per billing cycle', () => {
  let svc: TestService;
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
  beforeAll(async () => {
    // 25 credits: two medium executions (10 each) fit, a third does not.
    svc = await startLimitsService({ clock, limits: { billing_cycle_days: 30 }, plans: { demo: { credits_per_cycle: 25 } } });
  });
  afterAll(() => svc?.close());

  it('refuses a submission, a view upsert and a refresh with 402 once the cycle would be exceeded; the next cycle allows them', async () => {
    const q = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'one', query_sql: 'SELECT 1 AS one' } });
    const view = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_one', query_id: q.json.query_id } });
    expect(view.status).toBe(200);
    expect((await waitFor(svc, view.json.execution_id)).execution_cost_credits).toBe(10);
    // A failing execution reserves its price but costs 0 in the end.
    const bad = await executeSql(svc, 'SELEC 1');
    expect((await waitFor(svc, bad)).execution_cost_credits).toBe(0);
    const ok = await executeSql(svc, 'SELECT 2');
    expect((await waitFor(svc, ok)).execution_cost_credits).toBe(10);

    const refused = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: 'SELECT 3' } });
    expect(refused.status).toBe(402);
    expect(refused.json).toEqual({ error: MESSAGES.billingLimit });
    const saved = await call(svc, 'POST', `/v1/query/${q.json.query_id}/execute`, { key: svc.keys.demo.write, body: {} });
    expect(saved.status).toBe(402);
    const refresh = await call(svc, 'POST', '/v1/materialized-views/result_one/refresh', { key: svc.keys.demo.write });
    expect(refresh.status).toBe(402);
    expect(refresh.json).toEqual({ error: MESSAGES.billingLimit });
    const q2 = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'two', query_sql: 'SELECT 2 AS two' } });
    const upsert = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_two', query_id: q2.json.query_id } });
    expect(upsert.status).toBe(402);
    // The refused upsert left no view behind.
    expect((await call(svc, 'GET', '/v1/materialized-views/result_two', { key: svc.keys.demo.read })).status).toBe(404);
    // Another team's credits are its own.
    expect((await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.other.write, body: { sql: 'SELECT 1' } })).status).toBe(200);

    const usage = await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin });
    expect(usage.json).toMatchObject({ team: 'demo', credits_used: 20, credits_limit: 25, executions: 3 });

    // The cycle rolls over: everything is allowed again, and usage starts from zero.
    clock.advance(30 * DAY);
    const fresh = await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin });
    expect(fresh.json).toMatchObject({ credits_used: 0, executions: 0 });
    expect(Date.parse(fresh.json.cycle_start)).toBeGreaterThan(Date.parse(usage.json.cycle_start));
    const again = await call(svc, 'POST', '/v1/materialized-views/result_one/refresh', { key: svc.keys.demo.write });
    expect(again.status).toBe(200);
    expect((await waitFor(svc, again.json.execution_id)).state).toBe('QUERY_STATE_COMPLETED');
    expect((await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json).toMatchObject({ credits_used: 10, executions: 1 });
  });

  it('usage is for Admin keys of the team only', async () => {
    const usage = await call(svc, 'GET', '/v1/usage', { key: svc.keys.other.admin });
    expect(usage.status).toBe(200);
    expect(UsageSchema.strict().safeParse(usage.json).success).toBe(true);
    expect(usage.json.team).toBe('other');
    expect(usage.json.storage_quota_bytes).toBe(1_048_576);
    for (const key of [svc.keys.demo.write, svc.keys.demo.read]) {
      const res = await call(svc, 'GET', '/v1/usage', { key });
      expect(res.status).toBe(403);
      expect(res.json).toEqual({ error: MESSAGES.missingScope('Admin') });
    }
  });
});

describe('rate limits per key, read and write apart', () => {
  let svc: TestService;
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
  beforeAll(async () => {
    svc = await startLimitsService({ clock, limits: { read_requests_per_minute: 4, write_requests_per_minute: 2 } });
  });
  afterAll(() => svc?.close());

  it('answers 429 with Retry-After past the write rate; reads of the same key and other keys go on; time refills', async () => {
    const key = svc.keys.demo.write;
    const first = await executeSql(svc, 'SELECT 1', key);
    await executeSql(svc, 'SELECT 2', key);
    const limited = await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql: 'SELECT 3' } });
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: MESSAGES.tooManyRequests });
    expect(limited.headers['retry-after']).toBe('30');
    // Cancel is a write too.
    expect((await call(svc, 'POST', `/v1/execution/${first}/cancel`, { key })).status).toBe(429);
    // The same key's reads are another class; another key of the team has its own allowance.
    expect((await call(svc, 'GET', `/v1/execution/${first}/status`, { key })).status).toBe(200);
    expect((await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.admin, body: { sql: 'SELECT 4' } })).status).toBe(200);
    clock.advance(29_000);
    expect((await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql: 'SELECT 5' } })).status).toBe(429);
    clock.advance(1_000);
    expect((await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql: 'SELECT 5' } })).status).toBe(200);
  });

  it('answers 429 past the read rate, with Retry-After in seconds', async () => {
    const key = svc.keys.other.read;
    for (let i = 0; i < 4; i += 1) expect((await call(svc, 'GET', '/v1/materialized-views', { key })).status).toBe(200);
    const limited = await call(svc, 'GET', '/v1/materialized-views', { key });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('15');
    // A refused request costs nothing: after 15 s exactly one more is allowed.
    clock.advance(15_000);
    expect((await call(svc, 'GET', '/v1/materialized-views', { key })).status).toBe(200);
    expect((await call(svc, 'GET', '/v1/materialized-views', { key })).status).toBe(429);
    // A bad key is 401 before any rate limit.
    expect((await call(svc, 'GET', '/v1/materialized-views', { key: 'sk_not_a_key' })).status).toBe(401);
  });
});

describe('performance tiers', () => {
  let svc: TestService;
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
  beforeAll(async () => {
    svc = await startLimitsService({ clock, tiers: { medium: { timeout_ms: 60_000 }, large: { timeout_ms: 150 } } });
  });
  afterAll(() => svc?.close());

  it('each tier has its own timeout: a timed-out execution is FAILED and costs 0', async () => {
    const medium = await executeSql(svc, LONG_SQL);
    const large = await executeSql(svc, LONG_SQL, svc.keys.demo.write, { performance: 'large' });
    const s = await waitFor(svc, large);
    expect(s.state).toBe('QUERY_STATE_FAILED');
    expect(s.execution_cost_credits).toBe(0);
    expect(s.error.message).toBe('Query exceeded the execution timeout of 150 ms');
    expect(s).not.toHaveProperty('error.metadata');
    // The medium one, submitted first, still runs under its own timeout.
    expect((await status(svc, medium)).state).toBe('QUERY_STATE_EXECUTING');
    await call(svc, 'POST', `/v1/execution/${medium}/cancel`, { key: svc.keys.demo.write });
    // Large costs twice as much when it runs. Its 150 ms timeout can catch even SELECT 1 on a loaded
    // machine (then it is FAILED for that reason and costs 0): a few tries for one that completes.
    let completed: any;
    for (let i = 0; i < 5 && completed === undefined; i += 1) {
      const s = await waitFor(svc, await executeSql(svc, 'SELECT 1', svc.keys.demo.write, { performance: 'large' }));
      if (s.state === 'QUERY_STATE_COMPLETED') completed = s;
      else expect(s).toMatchObject({ state: 'QUERY_STATE_FAILED', execution_cost_credits: 0, error: { message: 'Query exceeded the execution timeout of 150 ms' } });
    }
    expect(completed?.execution_cost_credits).toBe(20);
  });
});
