// Over HTTP: one storage quota per team covers everything it stores (materialized views,
// uploads, and the tables its SQL creates in service.<team>); /v1/usage counts all three. Each
// case filled the disk or went uncounted when only views were limited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, waitFor } from '../api.ts';
import { query, startLimitsService } from './limitsService.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));
const QUOTA = 20_000;

let svc: TestService;
beforeAll(async () => {
  svc = await startLimitsService({ clock, plans: { demo: { storage_quota_bytes: QUOTA }, other: { storage_quota_bytes: QUOTA } } });
});
afterAll(() => svc?.close());

async function usage(key = svc.keys.demo.admin): Promise<{ storage_bytes: number; storage_quota_bytes: number }> {
  const res = await call(svc, 'GET', '/v1/usage', { key });
  expect(res.status).toBe(200);
  return res.json;
}

const QUOTA_ERROR = /^Storage quota exceeded: the tables of service\.demo would hold \d+ bytes, and with the team's materialized views and uploads \(\d+ bytes\) that exceeds the storage quota of 20000 bytes; nothing this execution wrote to service\.demo was kept/;

describe('tables a team creates in its own schema', () => {
  it('a table past the quota fails cleanly: FAILED, cost 0, nothing kept, usage unchanged', async () => {
    const before = (await usage()).storage_bytes;
    const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: "CREATE TABLE service.demo.hog AS SELECT range AS id, repeat('x', 100) AS pad FROM range(100000)" } });
    const st = await waitFor(svc, res.json.execution_id, undefined, svc.keys.demo.read);
    expect(st).toMatchObject({ state: 'QUERY_STATE_FAILED', execution_cost_credits: 0 });
    expect(st.error.message).toMatch(QUOTA_ERROR);
    expect((await query(svc, 'SELECT count(*) AS n FROM service.demo.hog')).error).toContain('does not exist');
    expect((await usage()).storage_bytes).toBe(before);
  });

  it('the statements before the one that went over are undone too, and a query after them still answers', async () => {
    const out = await query(svc, 'CREATE TABLE service.demo.small AS SELECT 1 AS a; INSERT INTO service.demo.small SELECT range FROM range(50000); SELECT count(*) AS n FROM service.demo.small');
    expect(out.error).toMatch(QUOTA_ERROR);
    expect((await query(svc, 'SELECT count(*) AS n FROM service.demo.small')).error).toContain('does not exist');
  });

  it('a table within the quota is stored and counted by /v1/usage; dropping it gives the bytes back', async () => {
    const before = (await usage()).storage_bytes;
    expect((await query(svc, 'CREATE TABLE service.demo.kept AS SELECT range AS id FROM range(1000); SELECT count(*)::INTEGER AS n FROM service.demo.kept')).rows).toEqual([{ n: 1000 }]);
    const after = (await usage()).storage_bytes;
    // The CSV text of the rows: "id\n" and 1000 numbers of 1-3 digits, each with its line end.
    expect(after - before).toBe(3 + 10 * 2 + 90 * 3 + 900 * 4);
    expect((await query(svc, 'DROP TABLE service.demo.kept')).error).toBeUndefined();
    expect((await usage()).storage_bytes).toBe(before);
  });

  it('an INSERT that takes an existing table over the quota is undone, the table keeps its rows', async () => {
    expect((await query(svc, 'CREATE TABLE service.demo.grow AS SELECT 1 AS a')).error).toBeUndefined();
    expect((await query(svc, 'INSERT INTO service.demo.grow SELECT range FROM range(100000)')).error).toMatch(QUOTA_ERROR);
    expect((await query(svc, 'SELECT count(*)::INTEGER AS n FROM service.demo.grow')).rows).toEqual([{ n: 1 }]);
    await query(svc, 'DROP TABLE service.demo.grow');
  });

  it('a table far past the quota is stopped while it is written, not after: the disk is not filled first', async () => {
    const res = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: 'CREATE TABLE service.demo.flood AS SELECT range AS id, md5(range::VARCHAR) AS s FROM range(200000000)' } });
    const st = await waitFor(svc, res.json.execution_id, undefined, svc.keys.demo.read, 110_000);
    expect(st.state).toBe('QUERY_STATE_FAILED');
    expect(st.error.message).toMatch(/^Storage quota exceeded: the SQL was stopped after writing \d+ bytes to the service's database for service\.demo, more than the storage quota of 20000 bytes leaves .*nothing this execution wrote to service\.demo was kept/);
    expect((await query(svc, 'SELECT count(*) FROM service.demo.flood')).error).toContain('does not exist');
  }, 120_000);

  it('temporary tables and queries are not limited by the quota', async () => {
    expect((await query(svc, 'CREATE TEMP TABLE t AS SELECT range AS id FROM range(100000); SELECT count(*)::INTEGER AS n FROM t')).rows).toEqual([{ n: 100000 }]);
  });
});

describe('uploads and views share the same quota', () => {
  it('an upload past the quota is 402 and stores nothing', async () => {
    const data = `id,pad\n${Array.from({ length: 400 }, (_, i) => `${i},${'y'.repeat(60)}`).join('\n')}\n`;
    const res = await call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.demo.write, body: { table_name: 'big', data } });
    expect(res.status).toBe(402);
    expect(res.json.error).toMatch(/^This upload would exceed your team's storage quota: the CSV is \d+ bytes, .* exceeds the quota of 20000 bytes\. Nothing was stored/);
    expect((await query(svc, 'SELECT count(*) FROM service.demo.dataset_big')).error).toContain('does not exist');
  });

  it('tables count against uploads: an upload that fits alone is refused once a table holds the room', async () => {
    const data = `id\n${Array.from({ length: 1000 }, (_, i) => i).join('\n')}\n`;
    expect((await call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.other.write, body: { table_name: 'fits', data } })).status).toBe(200);
    expect((await query(svc, 'CREATE TABLE service.other.room AS SELECT range AS id FROM range(3000)', svc.keys.other.write)).error).toBeUndefined();
    const again = await call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.other.write, body: { table_name: 'second', data } });
    expect(again.status).toBe(402);
    const u = await usage(svc.keys.other.admin);
    expect(u.storage_bytes).toBeGreaterThan(Buffer.byteLength(data) + 3000 * 4);
    expect(u.storage_bytes).toBeLessThanOrEqual(QUOTA);
  });
});
