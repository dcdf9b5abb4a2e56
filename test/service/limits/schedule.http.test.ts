// Over HTTP: the service's scheduler runs views' cron schedules on the service clock, and
// retention expires results and deletes their files. Time is a ManualClock the tests move; the
// scheduler and the sweep look every few milliseconds of real time.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, runSql, status, waitFor } from '../api.ts';
import { eventually, query, startLimitsService } from './limitsService.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const FAST = { view_scheduler_interval_ms: 20, sweep_interval_ms: 20 };

async function viewOf(svc: TestService, name: string): Promise<any> {
  return (await call(svc, 'GET', `/v1/materialized-views/${name}`, { key: svc.keys.demo.read })).json;
}

describe('scheduled refreshes', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12, 0, 0));
  let dataDir: string;
  let svc: TestService;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-schedule-'));
    svc = await startLimitsService({ clock, dataDir, limits: FAST });
  });
  afterAll(async () => {
    await svc?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('the scheduler refreshes a view when the clock passes its cron time, once per missed stretch, and after a restart', async () => {
    const upload = (n: number) => call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.demo.write, body: { table_name: 'src', data: `n\n${n}\n` } });
    await upload(1);
    const q = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'src', query_sql: 'SELECT n FROM service.demo.dataset_src' } });
    const up = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_hourly', query_id: q.json.query_id, cron_expression: '0 * * * *' } });
    await waitFor(svc, up.json.execution_id);
    await upload(2);

    // 12:59: not due yet; the scheduler has had many chances to look.
    clock.advance(59 * 60_000);
    await sleep(150);
    expect((await viewOf(svc, 'result_hourly')).last_execution_ids).toEqual([up.json.execution_id]);

    // 13:00 passes: the service starts the refresh by itself, an ordinary execution.
    clock.advance(60_000);
    const second = await eventually('the 13:00 refresh', async () => {
      const ids: string[] = (await viewOf(svc, 'result_hourly')).last_execution_ids;
      return ids.length === 2 ? ids[0] : undefined;
    });
    const s = await waitFor(svc, second!);
    expect(s.state).toBe('QUERY_STATE_COMPLETED');
    expect(s.execution_cost_credits).toBe(10);
    expect(Date.parse(s.submitted_at)).toBe(Date.UTC(2026, 0, 10, 13));
    expect((await query(svc, 'SELECT n FROM service.demo.result_hourly')).rows).toEqual([{ n: 2 }]);

    // Three hours pass at once: one refresh, not three.
    await upload(3);
    clock.advance(3 * HOUR);
    await eventually('the catch-up refresh', async () => ((await viewOf(svc, 'result_hourly')).last_execution_ids.length === 3 ? true : undefined));
    await sleep(150);
    const ids: string[] = (await viewOf(svc, 'result_hourly')).last_execution_ids;
    expect(ids).toHaveLength(3);
    await waitFor(svc, ids[0]!);
    expect((await query(svc, 'SELECT n FROM service.demo.result_hourly')).rows).toEqual([{ n: 3 }]);

    // A run due while the service was stopped happens when it starts again.
    await svc.close();
    clock.advance(HOUR);
    svc = await startLimitsService({ clock, dataDir, limits: FAST });
    await eventually('the refresh after the restart', async () => ((await viewOf(svc, 'result_hourly')).last_execution_ids.length === 4 ? true : undefined));
  });
});

describe('retention', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
  let dataDir: string;
  let svc: TestService;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-retention-'));
    svc = await startLimitsService({ clock, dataDir, limits: { ...FAST, retention_days: 2 } });
  });
  afterAll(async () => {
    await svc?.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const resultFile = (id: string): string => join(dataDir, 'engine', 'results', `${id}.duckdb`);

  it('after expires_at the execution is EXPIRED and its stored result is deleted, read or not', async () => {
    const read = await runSql(svc, 'SELECT 1 AS a');
    const unread = await runSql(svc, 'SELECT 2 AS b');
    const s = await status(svc, read);
    expect(Date.parse(s.expires_at) - Date.parse(s.execution_ended_at)).toBe(2 * DAY);
    expect(existsSync(resultFile(read)) && existsSync(resultFile(unread))).toBe(true);

    clock.advance(2 * DAY - 1);
    await sleep(100);
    expect((await status(svc, read)).state).toBe('QUERY_STATE_COMPLETED');
    expect(existsSync(resultFile(unread))).toBe(true);

    clock.advance(1);
    // Nobody reads `unread`: the sweep finds it.
    await eventually('the sweep to delete the unread result', async () => (existsSync(resultFile(unread)) ? undefined : true));
    const e = await status(svc, read);
    expect(e.state).toBe('QUERY_STATE_EXPIRED');
    expect(e.is_execution_finished).toBe(true);
    expect(e.expires_at).toBe(s.expires_at);
    expect(e.execution_cost_credits).toBe(10);
    expect(e).not.toHaveProperty('result_metadata');
    await eventually('the read result to be deleted', async () => (existsSync(resultFile(read)) ? undefined : true));
    const page = await call(svc, 'GET', `/v1/execution/${read}/results`, { key: svc.keys.demo.read });
    expect(page.status).toBe(200);
    expect(page.json.state).toBe('QUERY_STATE_EXPIRED');
    expect(page.json).not.toHaveProperty('result');
    expect((await call(svc, 'GET', `/v1/execution/${read}/results/csv`, { key: svc.keys.demo.read })).json).toEqual({ error: 'Query state is QUERY_STATE_EXPIRED, cannot provide CSV result' });
    expect((await status(svc, unread)).state).toBe('QUERY_STATE_EXPIRED');
  });

  it('a result left behind by a crash between EXPIRED and the delete is deleted when the service starts', async () => {
    const id = await runSql(svc, 'SELECT 3 AS c');
    await svc.close();
    // What a crash right after persisting EXPIRED leaves: the EXPIRED record and the result file.
    const recordPath = join(dataDir, 'catalog', 'executions', `${id}.json`);
    const rec = JSON.parse(await readFile(recordPath, 'utf8'));
    const { result: _result, ...rest } = rec;
    await writeFile(recordPath, JSON.stringify({ ...rest, state: 'QUERY_STATE_EXPIRED' }));
    expect(existsSync(resultFile(id))).toBe(true);
    clock.advance(3 * DAY);
    svc = await startLimitsService({ clock, dataDir, limits: { ...FAST, retention_days: 2 } });
    await eventually('the leftover result to be deleted', async () => (existsSync(resultFile(id)) ? undefined : true));
    expect((await status(svc, id)).state).toBe('QUERY_STATE_EXPIRED');
  });
});
