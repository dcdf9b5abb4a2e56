// Performance tiers as the real service has them: small, medium, large and the legacy free (run as
// small), each priced by its factor; a request naming none runs at its team plan's tier.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, waitFor } from '../api.ts';
import { startLimitsService } from './limitsService.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startLimitsService({ clock: new ManualClock(Date.UTC(2026, 0, 10, 12)), plans: { demo: { performance: 'large' }, other: { performance: 'small' } } });
});
afterAll(() => svc?.close());

async function cost(key: string, body: Record<string, unknown>): Promise<number> {
  const res = await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql: 'SELECT 1 AS one', ...body } });
  expect(res.status, res.text).toBe(200);
  const done = await waitFor(svc, res.json.execution_id, undefined, key);
  expect(done.state).toBe('QUERY_STATE_COMPLETED');
  return done.execution_cost_credits as number;
}

describe('performance tiers', () => {
  it('prices small 5, medium 10, large 20 and the legacy free as small', async () => {
    const read = svc.keys.demo.read;
    expect(await cost(read, { performance: 'small' })).toBe(5);
    expect(await cost(read, { performance: 'medium' })).toBe(10);
    expect(await cost(read, { performance: 'large' })).toBe(20);
    expect(await cost(read, { performance: 'free' })).toBe(5);
  });

  it("runs a request naming no tier at its team plan's tier", async () => {
    expect(await cost(svc.keys.demo.read, {})).toBe(20);
    expect(await cost(svc.keys.other.read, {})).toBe(5);
    const q = await call(svc, 'POST', '/v1/query', { key: svc.keys.other.write, body: { name: 'plan tier', query_sql: 'SELECT 2 AS two' } });
    const saved = await call(svc, 'POST', `/v1/query/${q.json.query_id}/execute`, { key: svc.keys.other.read });
    expect((await waitFor(svc, saved.json.execution_id, undefined, svc.keys.other.read)).execution_cost_credits).toBe(5);
  });

  it('refuses an unknown tier with 400 naming the field and the tiers', async () => {
    const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.read, body: { sql: 'SELECT 1', performance: 'huge' } });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/performance/);
    expect(res.json.error).toMatch(/small.*medium.*large.*free/);
  });
});
