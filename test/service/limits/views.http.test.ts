// Over HTTP: the five materialized view operations, naming, upsert and 409, atomic
// replacement, the storage quota, paging, privacy between teams; CSV uploads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ViewSchema } from '../../../src/protocol/index.ts';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, waitFor } from '../api.ts';
import { query, startLimitsService } from './limitsService.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 10, 12));

async function createQuery(svc: TestService, name: string, sql: string, key = svc.keys.demo.write): Promise<number> {
  const res = await call(svc, 'POST', '/v1/query', { key, body: { name, query_sql: sql } });
  if (res.status !== 200) throw new Error(`create query: ${res.status} ${res.text}`);
  return res.json.query_id as number;
}

async function upsert(svc: TestService, body: Record<string, unknown>, key = svc.keys.demo.write) {
  return call(svc, 'POST', '/v1/materialized-views', { key, body });
}

async function upload(svc: TestService, table: string, data: string, extra: Record<string, unknown> = {}, key = svc.keys.demo.write) {
  return call(svc, 'POST', '/v1/uploads/csv', { key, body: { table_name: table, data, ...extra } });
}

/** Upserts (or refreshes) and waits for the refresh; returns its final status. */
async function refreshed(svc: TestService, res: { status: number; json: any; text: string }, key = svc.keys.demo.read): Promise<any> {
  if (res.status !== 200) throw new Error(`refresh not started: ${res.status} ${res.text}`);
  return waitFor(svc, res.json.execution_id, undefined, key);
}

describe('the five operations', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startLimitsService({ clock });
  });
  afterAll(() => svc?.close());

  it('upsert creates the view and fills service.<team>.result_<x>; get, list, refresh, delete', async () => {
    const a = await createQuery(svc, 'a', 'SELECT id % 3 AS k, count(*)::BIGINT AS n FROM sample.events GROUP BY 1 ORDER BY 1');
    const created = await upsert(svc, { name: 'result_a', query_id: a, cron_expression: '*/30 * * * *' });
    expect(created.json).toEqual({ execution_id: expect.any(String), name: 'service.demo.result_a' });
    expect((await refreshed(svc, created)).state).toBe('QUERY_STATE_COMPLETED');
    expect((await query(svc, 'SELECT sum(n)::BIGINT AS total, count(*)::BIGINT AS k FROM service.demo.result_a')).rows).toEqual([{ total: 200, k: 3 }]);

    const got = await call(svc, 'GET', '/v1/materialized-views/service.demo.result_a', { key: svc.keys.demo.read });
    expect(ViewSchema.strict().safeParse(got.json).success).toBe(true);
    expect(got.json).toMatchObject({ name: 'service.demo.result_a', query_id: a, cron_expression: '*/30 * * * *', performance: 'medium', is_private: false, owner_team: 'demo', last_execution_ids: [created.json.execution_id] });
    expect(got.json.table_size_bytes).toBeGreaterThan(0);
    // The short name means the caller's team.
    expect((await call(svc, 'GET', '/v1/materialized-views/result_a', { key: svc.keys.demo.read })).json.id).toBe(got.json.id);

    const refresh = await call(svc, 'POST', '/v1/materialized-views/service.demo.result_a/refresh', { key: svc.keys.demo.write, body: { performance: 'large' } });
    expect(refresh.json).toEqual({ execution_id: expect.any(String), sql_id: 'service.demo.result_a' });
    const rs = await refreshed(svc, refresh);
    expect(rs.state).toBe('QUERY_STATE_COMPLETED');
    expect(rs.execution_cost_credits).toBe(20);
    // A refresh is an ordinary execution: its result pages like any other.
    expect((await call(svc, 'GET', `/v1/execution/${refresh.json.execution_id}/results`, { key: svc.keys.demo.read })).json.result.rows).toHaveLength(3);
    const after = await call(svc, 'GET', '/v1/materialized-views/result_a', { key: svc.keys.demo.read });
    expect(after.json.last_execution_ids).toEqual([refresh.json.execution_id, created.json.execution_id]);

    const del = await call(svc, 'DELETE', '/v1/materialized-views/service.demo.result_a', { key: svc.keys.demo.write });
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ message: 'Materialized view service.demo.result_a deleted' });
    expect((await query(svc, 'SELECT * FROM service.demo.result_a')).error).toMatch(/result_a does not exist/);
    expect((await call(svc, 'GET', '/v1/materialized-views/result_a', { key: svc.keys.demo.read })).status).toBe(404);
    expect((await call(svc, 'DELETE', '/v1/materialized-views/result_a', { key: svc.keys.demo.write })).status).toBe(404);
    expect((await call(svc, 'POST', '/v1/materialized-views/result_a/refresh', { key: svc.keys.demo.write })).status).toBe(404);
    // Changing views needs Write; reading them Read.
    expect((await upsert(svc, { name: 'result_a', query_id: a }, svc.keys.demo.read)).status).toBe(403);
  });

  it('refuses bad names and schedules with 400 and the rule', async () => {
    const q = await createQuery(svc, 'named', 'SELECT 1 AS x');
    for (const name of ['totals', 'result_', 'result_Bad', 'result_a-b', `result_${'x'.repeat(100)}`]) {
      const res = await upsert(svc, { name, query_id: q });
      expect(res.status, name).toBe(400);
      expect(res.json.error, name).toMatch(/name/);
    }
    for (const full of ['service.demo.totals', 'demo.result_x', 'service.demo.result_x.y', 'service..result_x']) {
      const res = await call(svc, 'GET', `/v1/materialized-views/${full}`, { key: svc.keys.demo.read });
      expect(res.status, full).toBe(400);
      expect(res.json.error).toMatch(/service\.<team>\.result_<x>/);
    }
    const cases: [string, RegExp][] = [
      ['*/5 * * * *', /runs 5 minutes after a previous run; views refresh every 15 minutes at the most/],
      ['0 0 1 * *', /views refresh at least once a week/],
      ['0 * * *', /has 4 fields/],
      ['0 25 * * *', /cron_expression "0 25 \* \* \*"/],
    ];
    for (const [cron, why] of cases) {
      const res = await upsert(svc, { name: 'result_named', query_id: q, cron_expression: cron });
      expect(res.status, cron).toBe(400);
      expect(res.json.error, cron).toMatch(why);
    }
    expect((await call(svc, 'GET', '/v1/materialized-views/result_named', { key: svc.keys.demo.read })).status).toBe(404);
    for (const cron of ['*/15 * * * *', '0 0 * * 0']) expect((await upsert(svc, { name: 'result_named', query_id: q, cron_expression: cron })).status, cron).toBe(200);
  });

  it('upsert updates the view of the same query (renaming its table); a name of another query is 409', async () => {
    const q1 = await createQuery(svc, 'first', 'SELECT 1 AS v');
    const q2 = await createQuery(svc, 'second', 'SELECT 2 AS v');
    const v1 = await upsert(svc, { name: 'result_first', query_id: q1, cron_expression: '0 * * * *' });
    await refreshed(svc, v1);
    const id = (await call(svc, 'GET', '/v1/materialized-views/result_first', { key: svc.keys.demo.read })).json.id;

    const renamed = await upsert(svc, { name: 'result_renamed', query_id: q1 });
    expect(renamed.json.name).toBe('service.demo.result_renamed');
    await refreshed(svc, renamed);
    const view = (await call(svc, 'GET', '/v1/materialized-views/result_renamed', { key: svc.keys.demo.read })).json;
    expect(view.id).toBe(id);
    expect(view).not.toHaveProperty('cron_expression');
    expect(view.last_execution_ids).toHaveLength(2);
    expect((await call(svc, 'GET', '/v1/materialized-views/result_first', { key: svc.keys.demo.read })).status).toBe(404);
    expect((await query(svc, 'SELECT v FROM service.demo.result_renamed')).rows).toEqual([{ v: 1 }]);
    expect((await query(svc, 'SELECT v FROM service.demo.result_first')).error).toMatch(/does not exist/);

    const conflict = await upsert(svc, { name: 'result_renamed', query_id: q2 });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toBe(
      `Conflict: the materialized view service.demo.result_renamed belongs to query ${q1}, not ${q2}; choose another name or delete that view first`,
    );
    // An unknown query is 404, whatever the name.
    expect((await upsert(svc, { name: 'result_renamed', query_id: 999_999 })).status).toBe(404);
  });

  it('lists the team\'s views in pages with limit and offset', async () => {
    const own = await startLimitsService({ clock });
    try {
      for (const n of ['p1', 'p2', 'p3']) {
        const q = await createQuery(own, n, `SELECT '${n}' AS n`);
        await refreshed(own, await upsert(own, { name: `result_${n}`, query_id: q }));
        clock.advance(1);
      }
      const list = (query: Record<string, string | number>) => call(own, 'GET', '/v1/materialized-views', { key: own.keys.demo.read, query });
      const all = await list({});
      expect(all.json.materialized_views.map((v: { name: string }) => v.name)).toEqual(['service.demo.result_p1', 'service.demo.result_p2', 'service.demo.result_p3']);
      expect(all.json).not.toHaveProperty('next_offset');
      const first = await list({ limit: 2 });
      expect(first.json.materialized_views).toHaveLength(2);
      expect(first.json.next_offset).toBe(2);
      const second = await list({ limit: 2, offset: 2 });
      expect(second.json.materialized_views.map((v: { name: string }) => v.name)).toEqual(['service.demo.result_p3']);
      expect(second.json).not.toHaveProperty('next_offset');
      expect((await list({ offset: 10 })).json).toEqual({ materialized_views: [] });
      expect((await list({ limit: 50_000 })).json.materialized_views).toHaveLength(3);
      for (const bad of [{ limit: 0 }, { limit: 'x' }, { offset: -1 }, { page: 2 }] as Record<string, string | number>[]) expect((await list(bad)).status, JSON.stringify(bad)).toBe(400);
      expect((await call(own, 'GET', '/v1/materialized-views', { key: own.keys.other.read })).json).toEqual({ materialized_views: [] });
    } finally {
      await own.close();
    }
  });
});

describe('teams and private views stay apart', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startLimitsService({ clock });
  });
  afterAll(() => svc?.close());

  it('another team sees a public view (record and table), not a private one, and changes neither', async () => {
    const q = await createQuery(svc, 'shared', 'SELECT 41 + 1 AS answer');
    await refreshed(svc, await upsert(svc, { name: 'result_pub', query_id: q }));
    const q2 = await createQuery(svc, 'secret', 'SELECT 7 AS secret');
    await refreshed(svc, await upsert(svc, { name: 'result_priv', query_id: q2, is_private: true }));

    const other = svc.keys.other;
    expect((await call(svc, 'GET', '/v1/materialized-views/service.demo.result_pub', { key: other.read })).status).toBe(200);
    const priv = await call(svc, 'GET', '/v1/materialized-views/service.demo.result_priv', { key: other.read });
    expect(priv.status).toBe(404);
    expect(priv.json).toEqual({ error: 'Materialized view service.demo.result_priv not found' });
    expect((await call(svc, 'GET', '/v1/materialized-views', { key: other.read })).json).toEqual({ materialized_views: [] });
    expect((await query(svc, 'SELECT answer FROM service.demo.result_pub', other.write)).rows).toEqual([{ answer: 42 }]);
    expect((await query(svc, 'SELECT secret FROM service.demo.result_priv', other.write)).error).toMatch(/Not allowed: schema service\.demo belongs to another team/);
    expect((await call(svc, 'DELETE', '/v1/materialized-views/service.demo.result_pub', { key: other.write })).status).toBe(403);
    expect((await call(svc, 'POST', '/v1/materialized-views/service.demo.result_pub/refresh', { key: other.write })).status).toBe(403);
    expect((await call(svc, 'DELETE', '/v1/materialized-views/service.demo.result_priv', { key: other.write })).status).toBe(404);
    // User SQL cannot write a view's table, not even the owner's.
    expect((await query(svc, 'DROP TABLE service.demo.result_pub')).error).toMatch(/tables named result_\* in your team's schema are materialized views/);
    expect((await query(svc, 'INSERT INTO service.demo.result_pub VALUES (1)')).error).toMatch(/Not allowed/);
    expect((await query(svc, 'DROP TABLE service.demo.result_pub', other.write)).error).toMatch(/belongs to another team/);

    // The same short name in another team is another view.
    const oq = await createQuery(svc, 'mine', 'SELECT 1 AS mine', other.write);
    const mine = await upsert(svc, { name: 'result_pub', query_id: oq }, other.write);
    expect(mine.json.name).toBe('service.other.result_pub');
    await refreshed(svc, mine, other.read);
    expect((await query(svc, 'SELECT mine FROM service.other.result_pub', other.write)).rows).toEqual([{ mine: 1 }]);
    expect((await query(svc, 'SELECT answer FROM service.demo.result_pub')).rows).toEqual([{ answer: 42 }]);
  });

  it('uploads: a private dataset is the team\'s alone, a public one readable by others; bad CSV is 400 with the line', async () => {
    expect((await upload(svc, 'open', 'a,b\n1,x\n2,y\n')).json).toEqual({ success: true, table_name: 'service.demo.dataset_open', full_name: 'service.demo.dataset_open', example_query: 'SELECT * FROM service.demo.dataset_open LIMIT 10' });
    expect((await upload(svc, 'closed', 'a\n5\n', { is_private: true })).status).toBe(200);
    expect((await query(svc, 'SELECT sum(a)::BIGINT AS s, string_agg(b, \'\' ORDER BY b) AS t FROM service.demo.dataset_open', svc.keys.other.write)).rows).toEqual([{ s: 3, t: 'xy' }]);
    expect((await query(svc, 'SELECT * FROM service.demo.dataset_closed', svc.keys.other.write)).error).toMatch(/belongs to another team/);
    expect((await query(svc, 'SELECT a FROM service.demo.dataset_closed')).rows).toEqual([{ a: 5 }]);
    // Uploading again replaces the table; user SQL cannot write it.
    await upload(svc, 'open', 'a,b\n10,z\n');
    expect((await query(svc, 'SELECT a, b FROM service.demo.dataset_open')).rows).toEqual([{ a: 10, b: 'z' }]);
    expect((await query(svc, 'DROP TABLE service.demo.dataset_open')).error).toMatch(/uploaded datasets/);

    const bad = await upload(svc, 'open', 'a,b\n1,x\n2,y\n3,z,extra\n');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^Bad Request: CSV line 4: /);
    expect(bad.json.error).toContain('3,z,extra');
    const header = await upload(svc, 'open', 'a,a\n1,2\n');
    expect(header.status).toBe(400);
    expect(header.json.error).toMatch(/CSV line 1 \(the header\): columns 1 and 2 are both named "a"/);
    // A refused upload keeps the previous table.
    expect((await query(svc, 'SELECT a FROM service.demo.dataset_open')).rows).toEqual([{ a: 10 }]);
    expect((await upload(svc, 'bad name!', 'a\n1\n')).status).toBe(400);
    expect((await upload(svc, 'open', 'a\n1\n', {}, svc.keys.demo.read)).status).toBe(403);
  });
});

describe('refreshes replace the table atomically; the storage quota', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startLimitsService({ clock, plans: { demo: { storage_quota_bytes: 4_000, max_inflight: 6 } } });
  });
  afterAll(() => svc?.close());

  const versioned = (v: number, rows: number): string => `v,i\n${Array.from({ length: rows }, (_, i) => `${v},${i}`).join('\n')}\n`;

  it('a query running during refreshes sees the old table or the new one, never a mix', async () => {
    await upload(svc, 'ver', versioned(1, 300));
    const q = await createQuery(svc, 'ver', 'SELECT v, i FROM service.demo.dataset_ver');
    await refreshed(svc, await upsert(svc, { name: 'result_ver', query_id: q }));
    const seen = new Set<number>();
    let refreshing = true;
    const reader = async (): Promise<void> => {
      while (refreshing) {
        const r = await query(svc, 'SELECT count(*)::BIGINT AS n, count(DISTINCT v)::BIGINT AS d, min(v)::BIGINT AS v FROM service.demo.result_ver');
        expect(r.rows).toEqual([{ n: 300, d: 1, v: expect.any(Number) }]);
        seen.add((r.rows![0] as { v: number }).v);
      }
    };
    const readers = [reader(), reader(), reader()];
    try {
      for (let v = 2; v <= 5; v += 1) {
        await upload(svc, 'ver', versioned(v, 300));
        expect((await refreshed(svc, await call(svc, 'POST', '/v1/materialized-views/result_ver/refresh', { key: svc.keys.demo.write }))).state).toBe('QUERY_STATE_COMPLETED');
      }
    } finally {
      refreshing = false;
      await Promise.all(readers);
    }
    expect(seen.size).toBeGreaterThan(1);
    expect((await query(svc, 'SELECT DISTINCT v FROM service.demo.result_ver')).rows).toEqual([{ v: 5 }]);
  });

  it('a refresh over the quota fails with a clear error, costs 0, and the previous table stays', async () => {
    await upload(svc, 'grow', versioned(1, 10));
    // Version 1 gives 10 rows; version 2 (an upload as small) 2,000: uploads count toward the
    // same quota, so the view's result grows, not the upload.
    const q = await createQuery(svc, 'grow', 'SELECT d.v, d.i FROM service.demo.dataset_grow d, range(200) r WHERE d.v > 1 OR r.range = 0');
    await refreshed(svc, await upsert(svc, { name: 'result_grow', query_id: q }));
    const before = (await call(svc, 'GET', '/v1/materialized-views/result_grow', { key: svc.keys.demo.read })).json;
    expect((await upload(svc, 'grow', versioned(2, 10))).status).toBe(200);
    const s = await refreshed(svc, await call(svc, 'POST', '/v1/materialized-views/result_grow/refresh', { key: svc.keys.demo.write }));
    expect(s.state).toBe('QUERY_STATE_FAILED');
    expect(s.execution_cost_credits).toBe(0);
    expect(s.error.message).toMatch(/^Refresh of materialized view service\.demo\.result_grow failed: its result is \d+ bytes, and with the team's other views \(\d+ bytes\) and its uploads and tables \(\d+ bytes\) that exceeds the storage quota of 4000 bytes; the previous table is kept/);
    expect((await query(svc, 'SELECT count(*)::BIGINT AS n, min(v)::BIGINT AS v FROM service.demo.result_grow')).rows).toEqual([{ n: 10, v: 1 }]);
    const after = (await call(svc, 'GET', '/v1/materialized-views/result_grow', { key: svc.keys.demo.read })).json;
    expect(after.table_size_bytes).toBe(before.table_size_bytes);
    // The failed refresh's stored result is not kept either.
    expect((await call(svc, 'GET', `/v1/execution/${s.execution_id}/results`, { key: svc.keys.demo.read })).json.state).toBe('QUERY_STATE_FAILED');
    const usage = (await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json;
    expect(usage.storage_bytes).toBeGreaterThanOrEqual(after.table_size_bytes);
    expect(usage.storage_quota_bytes).toBe(4_000);
  });
});
