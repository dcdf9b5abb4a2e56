// Two teams on one service, over HTTP: team `demo` attacks what team `other` stores. Each case
// read another team's rows or paths while the sandbox denied only what it knew to be dangerous.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/service/clock.ts';
import type { TestService } from '../helpers/service.ts';
import { call, waitFor } from './api.ts';
import { eventually, query, startLimitsService } from './limits/limitsService.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
let svc: TestService;
beforeAll(async () => {
  svc = await startLimitsService({ clock });
});
afterAll(() => svc?.close());

const q = (s: string): string => s.replaceAll("'", "''");

describe("another team's stored results", () => {
  it('json_serialize_plan cannot bind read_csv over a pre-encoded result of another team', async () => {
    // A result of 64 KiB or more gets its CSV encoding on disk, under the results directory, once read.
    const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.other.write, body: { sql: "SELECT range AS id, 'SECRET-' || range AS s FROM range(6000)" } });
    const id = res.json.execution_id as string;
    await waitFor(svc, id, undefined, svc.keys.other.read);
    // Encodings are written when a format is first read: the owner reads its CSV once.
    await call(svc, 'GET', `/v1/execution/${id}/results/csv`, { key: svc.keys.other.read, query: { limit: 10 } });
    const csv = join(svc.dataDir, 'engine', 'results', `${id}.enc`, 'csv', 'rows.csv');
    await eventually('the encoding', async () => ((await import('node:fs')).existsSync(csv) ? true : undefined), 20_000);
    for (const sql of [
      `SELECT json_serialize_plan('${q(`SELECT * FROM read_csv('${csv}', skip = 5, header = true, names = ['a', 'b', 'c'])`)}') AS p`,
      "SELECT current_setting('allowed_directories') AS d",
    ]) {
      const out = await query(svc, sql);
      expect(out.rows).toBeUndefined();
      expect(out.error).toMatch(/^line 1:\d+: Not allowed: /);
      expect(out.error).not.toContain('SECRET-');
      expect(out.error).not.toContain(svc.dataDir);
    }
  });
});

describe('privacy is checked when a view is read, through views and materialized views', () => {
  it('once other makes its upload private, demo\'s view and materialized view over it stop reading it', async () => {
    const upload = (isPrivate: boolean, rows: string) =>
      call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.other.write, body: { table_name: 'pub', data: `x\n${rows}\n`, is_private: isPrivate } });
    expect((await upload(false, '1')).status).toBe(200);
    expect((await query(svc, 'CREATE VIEW service.demo.spy AS SELECT x FROM service.other.dataset_pub')).error).toBeUndefined();
    expect((await query(svc, 'SELECT x FROM service.demo.spy')).rows).toEqual([{ x: 1 }]);
    const saved = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'spy', query_sql: 'SELECT x FROM service.demo.spy' } });
    const mv = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_spy', query_id: saved.json.query_id } });
    expect((await waitFor(svc, mv.json.execution_id)).state).toBe('QUERY_STATE_COMPLETED');

    // other re-uploads with new rows, now private.
    expect((await upload(true, '2')).status).toBe(200);
    const direct = await query(svc, 'SELECT x FROM service.other.dataset_pub');
    expect(direct.error).toContain('service.other belongs to another team');
    const through = await query(svc, 'SELECT x FROM service.demo.spy');
    expect(through.rows).toBeUndefined();
    expect(through.error).toMatch(/^line 1:15: Not allowed: schema service\.other belongs to another team \(read through view service\.demo\.spy\)/);
    const refresh = await call(svc, 'POST', '/v1/materialized-views/result_spy/refresh', { key: svc.keys.demo.write });
    const st = await waitFor(svc, refresh.json.execution_id);
    expect(st.state).toBe('QUERY_STATE_FAILED');
    expect(st.error.message).toContain('service.other belongs to another team');
    // The materialized table keeps the rows it had while the upload was shared, never the new ones.
    expect((await query(svc, 'SELECT x FROM service.demo.result_spy')).rows).toEqual([{ x: 1 }]);
  });
});
