import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionStatusSchema, isExecutionId } from '../../src/protocol/index.ts';
import { SAMPLE_EVENTS_COLUMNS } from '../../src/service/engine/tables/sampleEvents.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, LONG_SQL, runSql, status, waitFor, waitRunning } from './api.ts';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ tiers: { medium: { timeout_ms: 60_000 }, large: { timeout_ms: 60_000 } } });
});
afterAll(() => svc?.close());

describe('execute SQL and status', () => {
  it('sample.events reports the columns and types SAMPLE_EVENTS_COLUMNS says (benchmarks and tests build its pages from them)', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events LIMIT 1');
    const m = (await status(svc, id)).result_metadata;
    expect(SAMPLE_EVENTS_COLUMNS.map((c) => c.name)).toEqual(m.column_names);
    expect(SAMPLE_EVENTS_COLUMNS.map((c) => c.type)).toEqual(m.column_types);
  });

  it('answers the execution id in PENDING state and completes with correct metadata', async () => {
    const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: 'SELECT id, name, value FROM sample.events ORDER BY id LIMIT 7' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual(['execution_id', 'state']);
    expect(res.json.state).toBe('QUERY_STATE_PENDING');
    expect(isExecutionId(res.json.execution_id)).toBe(true);

    const s = await waitFor(svc, res.json.execution_id);
    expect(ExecutionStatusSchema.safeParse(s).success).toBe(true);
    expect(s.state).toBe('QUERY_STATE_COMPLETED');
    expect(s.is_execution_finished).toBe(true);
    expect(s.query_id).toBe(0);
    expect(s.execution_cost_credits).toBe(10);
    expect(s.max_inflight_interactive_executions).toBe(3);
    for (const f of ['submitted_at', 'execution_started_at', 'execution_ended_at', 'expires_at']) expect(s[f]).toMatch(TIMESTAMP);
    for (const f of ['cancelled_at', 'error', 'queue_position', 'max_inflight_interactive_reached']) expect(s).not.toHaveProperty(f);
    // expires_at = end + 90 days
    expect(Date.parse(s.expires_at) - Date.parse(s.execution_ended_at)).toBe(90 * 86_400_000);
    const m = s.result_metadata;
    expect(m.column_names).toEqual(['id', 'name', 'value']);
    expect(m.column_types).toEqual(['bigint', 'varchar', 'double']);
    expect(m.row_count).toBe(7);
    expect(m.total_row_count).toBe(7);
    expect(m.datapoint_count).toBe(21);
    expect(m.result_set_bytes).toBe(m.total_result_set_bytes);
    expect(m.pending_time_millis).toBeGreaterThanOrEqual(0);
    expect(m.execution_time_millis).toBeGreaterThanOrEqual(0);

    // result_set_bytes: a header line plus the values as text (CSV without quoting).
    const csv = await call(svc, 'GET', `/v1/execution/${res.json.execution_id}/results/csv`, { key: svc.keys.demo.read });
    expect(m.result_set_bytes).toBe(Buffer.byteLength(csv.text));
  });

  it('reports a multi-line SQL error with line and column, cost 0', async () => {
    const id = await executeSql(svc, 'SELECT 1,\n  2,\n     no_such_column\nFROM sample.events');
    const s = await waitFor(svc, id);
    expect(s.state).toBe('QUERY_STATE_FAILED');
    expect(s.execution_cost_credits).toBe(0);
    expect(s.error.type).toBe('FAILED_TYPE_EXECUTION_FAILED');
    expect(s.error.metadata).toEqual({ line: 3, column: 6 });
    expect(s.error.message).toContain('line 3:6');
    expect(s.execution_ended_at).toMatch(TIMESTAMP);
    for (const f of ['result_metadata', 'cancelled_at', 'queue_position', 'expires_at']) expect(s).not.toHaveProperty(f);
  });

  it('reports a syntax error at its position', async () => {
    const id = await executeSql(svc, 'SELECT 1\nFROM sample.events\nWHERE id = = 3');
    const s = await waitFor(svc, id);
    expect(s.state).toBe('QUERY_STATE_FAILED');
    expect(s.error.metadata.line).toBe(3);
    expect(s.error.message).toContain(`line 3:${s.error.metadata.column}`);
    expect(s.execution_cost_credits).toBe(0);
  });

  it('charges the large tier twice', async () => {
    const id = await executeSql(svc, 'SELECT 42 AS answer', svc.keys.demo.write, { performance: 'large' });
    const s = await waitFor(svc, id);
    expect(s.state).toBe('QUERY_STATE_COMPLETED');
    expect(s.execution_cost_credits).toBe(20);
  });

  it('cancels a long query promptly: CANCELED with cancelled_at, the engine really stops', async () => {
    const id = await executeSql(svc, LONG_SQL);
    await waitRunning(svc, id);
    const running = await status(svc, id);
    expect(running.is_execution_finished).toBe(false);
    expect(running.execution_started_at).toMatch(TIMESTAMP);
    for (const f of ['execution_ended_at', 'result_metadata', 'error', 'cancelled_at', 'execution_cost_credits', 'queue_position']) expect(running).not.toHaveProperty(f);

    const t0 = Date.now();
    const res = await call(svc, 'POST', `/v1/execution/${id}/cancel`, { key: svc.keys.demo.write });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ success: true });
    const s = await status(svc, id);
    expect(s.state).toBe('QUERY_STATE_CANCELLED');
    expect(s.is_execution_finished).toBe(true);
    expect(s.cancelled_at).toMatch(TIMESTAMP);
    expect(s.execution_cost_credits).toBe(10);
    for (const f of ['execution_ended_at', 'result_metadata', 'error', 'expires_at']) expect(s).not.toHaveProperty(f);

    // The engine slot frees once DuckDB has stopped: a new query runs right away.
    const next = await runSql(svc, 'SELECT 1');
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(next).toBeTruthy();
    // Cancelling again is harmless; cancelling a completed one reports success false.
    expect((await call(svc, 'POST', `/v1/execution/${id}/cancel`, { key: svc.keys.demo.write })).json).toEqual({ success: true });
    expect((await call(svc, 'POST', `/v1/execution/${next}/cancel`, { key: svc.keys.demo.write })).json).toEqual({ success: false });
    // Results of a canceled execution: the state, no result.
    const r = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
    expect(r.status).toBe(200);
    expect(r.json.state).toBe('QUERY_STATE_CANCELLED');
    expect(r.json).not.toHaveProperty('result');
  });

  it('times out per tier: FAILED, cost 0', async () => {
    const local = await startTestService({ tiers: { medium: { timeout_ms: 300 } } });
    try {
      const id = await executeSql(local, LONG_SQL, local.keys.demo.write);
      const s = await waitFor(local, id);
      expect(s.state).toBe('QUERY_STATE_FAILED');
      expect(s.execution_cost_credits).toBe(0);
      expect(s.error.message).toMatch(/timeout/i);
    } finally {
      await local.close();
    }
  });

  it('gives unfinished results as the state without a result, and CSV as 400', async () => {
    const id = await executeSql(svc, LONG_SQL);
    await waitRunning(svc, id);
    const r = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
    expect(r.status).toBe(200);
    expect(r.json.state).toBe('QUERY_STATE_EXECUTING');
    expect(r.json.is_execution_finished).toBe(false);
    expect(r.json).not.toHaveProperty('result');
    const c = await call(svc, 'GET', `/v1/execution/${id}/results/csv`, { key: svc.keys.demo.read });
    expect(c.status).toBe(400);
    expect(c.json).toEqual({ error: 'Query state is QUERY_STATE_EXECUTING, cannot provide CSV result' });
    await call(svc, 'POST', `/v1/execution/${id}/cancel`, { key: svc.keys.demo.write, rawBody: '' });
    await waitFor(svc, id);
  });

  it('gives a failed execution\'s results as 200 with the error', async () => {
    const id = await executeSql(svc, 'SELECT nope');
    await waitFor(svc, id);
    const r = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
    expect(r.status).toBe(200);
    expect(r.json.state).toBe('QUERY_STATE_FAILED');
    expect(r.json.error.type).toBe('FAILED_TYPE_EXECUTION_FAILED');
    expect(r.json).not.toHaveProperty('result');
  });
});
