import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, LONG_SQL, runSql, status, waitFor, waitRunning } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ maxInflight: 1 });
});
afterAll(() => svc?.close());

describe('per-team queue with max_inflight = 1', () => {
  it('runs one at a time in FIFO order with queue_position; other teams are not blocked', async () => {
    const a = await executeSql(svc, LONG_SQL);
    await waitRunning(svc, a);
    const b = await executeSql(svc, 'SELECT 2 AS b');
    const c = await executeSql(svc, 'SELECT 3 AS c');

    const sa = await status(svc, a);
    expect(sa.state).toBe('QUERY_STATE_EXECUTING');
    expect(sa).not.toHaveProperty('queue_position');
    expect(sa.max_inflight_interactive_executions).toBe(1);
    expect(sa.max_inflight_interactive_reached).toBe(1);
    const sb = await status(svc, b);
    const sc = await status(svc, c);
    expect([sb.state, sb.queue_position, sb.max_inflight_interactive_reached]).toEqual(['QUERY_STATE_PENDING', 1, 1]);
    expect([sc.state, sc.queue_position]).toEqual(['QUERY_STATE_PENDING', 2]);
    for (const f of ['execution_started_at', 'execution_ended_at', 'execution_cost_credits', 'result_metadata']) expect(sb).not.toHaveProperty(f);

    // Team other has its own queue.
    const o = await runSql(svc, 'SELECT 1 AS other', svc.keys.other.write);
    expect((await status(svc, o, svc.keys.other.read)).state).toBe('QUERY_STATE_COMPLETED');

    // Cancel a waiting one: c moves up.
    expect((await call(svc, 'POST', `/v1/execution/${b}/cancel`, { key: svc.keys.demo.write })).json).toEqual({ success: true });
    const cb = await status(svc, b);
    expect(cb.state).toBe('QUERY_STATE_CANCELLED');
    expect(cb.execution_cost_credits).toBe(0);
    expect(cb).not.toHaveProperty('execution_started_at');
    expect(cb).not.toHaveProperty('queue_position');
    expect((await status(svc, c)).queue_position).toBe(1);

    // Free the slot: c runs and completes; the cap is no longer hit.
    await call(svc, 'POST', `/v1/execution/${a}/cancel`, { key: svc.keys.demo.write });
    const done = await waitFor(svc, c);
    expect(done.state).toBe('QUERY_STATE_COMPLETED');
    expect(Date.parse(done.execution_started_at)).toBeGreaterThanOrEqual(Date.parse((await status(svc, a)).cancelled_at));
    expect(done).not.toHaveProperty('max_inflight_interactive_reached');
    expect(done.result_metadata.pending_time_millis).toBeGreaterThan(0);
  });

  it('starts queued executions in submission order', async () => {
    const blocker = await executeSql(svc, LONG_SQL);
    await waitRunning(svc, blocker);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await executeSql(svc, `SELECT ${i} AS i`));
    expect(await Promise.all(ids.map(async (id) => (await status(svc, id)).queue_position))).toEqual([1, 2, 3, 4]);
    await call(svc, 'POST', `/v1/execution/${blocker}/cancel`, { key: svc.keys.demo.write });
    const finished = await Promise.all(ids.map((id) => waitFor(svc, id)));
    const starts = finished.map((s) => s.execution_started_at as string);
    expect([...starts].sort()).toEqual(starts);
  });
});
