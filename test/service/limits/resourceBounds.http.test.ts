// Over HTTP: an execution that needs more engine memory or temporary disk than its tier allows
// fails cleanly (FAILED, capacity, cost 0, a message naming the tier's bound), and the service
// and the other teams carry on. Before, memory was DuckDB's default (80% of the machine, shared
// by every team) and spilled data could fill the disk.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, waitFor } from '../api.ts';
import { query, startLimitsService } from './limitsService.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
const MiB = 1024 * 1024;
let svc: TestService;
beforeAll(async () => {
  svc = await startLimitsService({
    clock,
    tiers: { medium: { memory_limit_bytes: 64 * MiB, temp_limit_bytes: 16 * MiB }, large: { memory_limit_bytes: 128 * MiB, temp_limit_bytes: 32 * MiB } },
  });
});
afterAll(() => svc?.close());

async function failed(sql: string, performance = 'medium'): Promise<any> {
  const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql, performance } });
  expect(res.status).toBe(200);
  const st = await waitFor(svc, res.json.execution_id, undefined, svc.keys.demo.read, 120_000);
  expect(st.state).toBe('QUERY_STATE_FAILED');
  expect(st.execution_cost_credits).toBe(0);
  return st;
}

describe('memory and temporary disk per execution, from the tier', () => {
  it('a query that holds more memory than its tier allows fails with the tier\'s bound in the message', async () => {
    const st = await failed('SELECT length(list(range)) AS n FROM range(50000000)');
    expect(st.error.message).toMatch(/^Query exceeded the memory of its tier: a medium execution may use 64 MiB of engine memory .*failed to allocate|^Query exceeded the temporary disk of its tier: a medium execution may spill 16 MiB/);
    expect(st.error.message).not.toContain('SET memory_limit');
  }, 150_000);

  it('a query that spills more than its tier allows fails the same way', async () => {
    const st = await failed("SELECT count(*) FROM (SELECT DISTINCT range::VARCHAR || 'abcdefghijklmnop' AS s FROM range(6000000))");
    expect(st.error.message).toMatch(/^Query exceeded the (temporary disk|memory) of its tier: a medium execution/);
  }, 150_000);

  it('afterwards the service answers, other teams included, and the engine limits are back to the instance\'s', async () => {
    expect((await query(svc, 'SELECT count(*)::INTEGER AS n FROM sample.events', svc.keys.other.write)).rows).toEqual([{ n: 200 }]);
    expect((await query(svc, "SELECT current_setting('memory_limit') <> '64.0 MiB' AS restored")).rows).toEqual([{ restored: true }]);
  });
});
