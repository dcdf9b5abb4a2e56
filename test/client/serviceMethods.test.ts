import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Execution, NotFoundError, PaymentRequiredError, ServiceClient } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/index.ts';
import type { Row } from '../../src/types/index.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from '../../src/service/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// Every operation of protocol.md section 3 through the client, against the real local service.
let svc: TestService;
let client: ServiceClient;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 300 } });
  client = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url });
});

afterAll(async () => {
  await client.close();
  await svc.close();
});

describe('executions', () => {
  it('executeSql, getStatus and wait report the lifecycle', async () => {
    const submitted = await client.executeSql('SELECT 42 AS answer', { performance: 'large' });
    expect(submitted.state).toBe('QUERY_STATE_PENDING');
    expect(submitted.execution_id).toMatch(/^01[0-9A-Z]{24}$/);
    const done = await client.execution(submitted.execution_id).wait();
    expect(done).toMatchObject({ state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, query_id: 0 });
    expect(done.result_metadata).toMatchObject({ column_names: ['answer'], column_types: ['integer'], total_row_count: 1 });
    expect(done.execution_cost_credits).toBe(20);
    const status = await client.getStatus(submitted.execution_id);
    expect(status.execution_ended_at).toBe(done.execution_ended_at);
  });

  it('run returns every row across pages, following next_offset', async () => {
    const pages: number[] = [];
    const rows = await client.run('SELECT id, name FROM sample.events ORDER BY id', { limit: 700 });
    expect(rows).toHaveLength(2000);
    expect(rows[1999]).toEqual({ id: 1999n, name: 'event_999' });
    // The server lowered the page size to its cap (300): offsets come from next_offset, not from limit.
    const exec = await client.execute({ sql: 'SELECT id FROM sample.events' });
    for await (const page of exec.pages({ limit: 700 })) pages.push(page.result?.rows.length ?? -1);
    expect(pages).toEqual([300, 300, 300, 300, 300, 300, 200]);
  });

  it('run() and Execution.rows() type rows as stream() does: one typing for every way rows come out', async () => {
    const sql = 'SELECT * FROM sample.all_types ORDER BY id';
    const streamed: Row[] = [];
    for await (const row of stream(client, { sql })) streamed.push(row);
    const ran = await client.run(sql);
    expect(ran).toEqual(streamed);
    const rows: Row[] = [];
    for await (const row of (await client.execute({ sql })).rows()) rows.push(row);
    expect(rows).toEqual(streamed);
    // What stream() gives, not the wire's text: a Date, bytes, a Map, a bigint.
    const first = ran[0]!;
    expect(first['c_timestamptz']).toBeInstanceOf(Date);
    expect(first['c_varbinary']).toBeInstanceOf(Uint8Array);
    expect(first['c_map']).toBeInstanceOf(Map);
    expect(typeof first['c_hugeint']).toBe('bigint');
    // The wire values stay a call away, as pages.
    const exec = await client.execute({ sql });
    for await (const page of exec.pages()) expect(typeof page.result!.rows[0]!['c_timestamptz']).toBe('string');
  });

  it('timestamps exactly, by option: epoch microseconds or nanoseconds as bigint, the same from run() and stream()', async () => {
    const sql = 'SELECT id, c_timestamptz, c_timestamp_ns FROM sample.all_types ORDER BY id';
    const exact = await client.run(sql, { timestamps: 'nanos' });
    const streamed: Row[] = [];
    for await (const row of stream(client, { sql }, { timestamps: 'nanos' })) streamed.push(row);
    expect(exact).toEqual(streamed);
    const at = BigInt(Date.UTC(2026, 10, 20, 10, 15, 30)) * 1_000_000n;
    expect(exact[0]).toEqual({ id: exact[0]!['id'], c_timestamptz: at + 123_456_000n, c_timestamp_ns: at + 123_456_789n });
    // The default keeps what a Date holds: milliseconds.
    expect(((await client.run(sql))[0]!['c_timestamptz'] as Date).toISOString()).toBe('2026-11-20T10:15:30.123Z');
  });

  it('keeps integers beyond 2^53 exact (lossless parse)', async () => {
    const rows = await client.run('SELECT id, c_bigint FROM sample.all_types ORDER BY id');
    expect(rows.map((r) => r['c_bigint'])).toEqual([9007199254740993n, 9223372036854775807n, -9223372036854775808n, null]);
  });

  it('getResults shapes a page: columns, filters, sortBy, limit, offset, sampleCount', async () => {
    const exec = await client.execute({ sql: 'SELECT id, name, quantity FROM sample.events' });
    await exec.wait();
    const page = await client.getResults(exec.id, { columns: ['id', 'quantity'], filters: 'quantity < 3 AND id > 10', sortBy: 'id desc', limit: 2, offset: 1 });
    expect(page.result?.rows).toEqual([
      { id: 1001, quantity: 1 },
      { id: 1000, quantity: 0 },
    ]);
    expect(page.result?.metadata.column_names).toEqual(['id', 'quantity']);
    expect(page.next_offset).toBeUndefined();
    const sample = await client.getResults(exec.id, { sampleCount: 50, ignoreMaxDatapointsPerRequest: true });
    expect(sample.result?.rows.length).toBeGreaterThan(0);
    expect(sample.result?.rows.length).toBeLessThanOrEqual(300);
  });

  it('getResultsCsv pages through x-service-next-offset', async () => {
    const exec = await client.execute({ sql: 'SELECT id, name FROM sample.events WHERE id < 5 ORDER BY id' });
    await exec.wait();
    const first = await client.getResultsCsv(exec.id, { limit: 3 });
    expect(first.text).toBe('id,name\n0,event_0\n1,event_1\n2,event_2\n');
    expect(first.nextOffset).toBe(3);
    expect(first.nextUri).toContain(`/v1/execution/${exec.id}/results/csv`);
    const second = await client.getResultsCsv(exec.id, { limit: 3, offset: first.nextOffset });
    expect(second.text).toBe('id,name\n3,event_3\n4,event_4\n');
    expect(second.nextOffset).toBeUndefined();
  });

  it('Execution.csvPages waits, then yields every CSV page in order, each with its header', async () => {
    const exec = await client.execute({ sql: 'SELECT id, name FROM sample.events WHERE id < 5 ORDER BY id' });
    const texts: string[] = [];
    for await (const page of exec.csvPages({ limit: 2 })) texts.push(page.text);
    expect(texts).toEqual(['id,name\n0,event_0\n1,event_1\n', 'id,name\n2,event_2\n3,event_3\n', 'id,name\n4,event_4\n']);
    const fromOffset: string[] = [];
    for await (const page of exec.csvPages({ limit: 2, offset: 3, columns: ['name'] })) fromOffset.push(page.text);
    expect(fromOffset).toEqual(['name\nevent_3\nevent_4\n']);
  });

  it('cancel stops a running execution; the handle reports it', async () => {
    const exec = await client.execute({ sql: 'SELECT sum(hash(a.range * b.range)) FROM range(200000) a, range(200000) b' });
    expect(await exec.cancel()).toBe(true);
    await expect(exec.wait()).rejects.toMatchObject({ code: 'EXECUTION_CANCELED', executionId: exec.id });
    expect((await exec.status()).state).toBe('QUERY_STATE_CANCELLED');
  });

  it('Execution.fromId and client.execution give handles on existing executions', async () => {
    const { execution_id } = await client.executeSql('SELECT 1 AS one');
    const a = Execution.fromId(client, execution_id);
    const b = client.execution(execution_id);
    expect((await a.wait()).state).toBe('QUERY_STATE_COMPLETED');
    const rows: unknown[] = [];
    for await (const row of b.rows()) rows.push(row);
    expect(rows).toEqual([{ one: 1 }]);
  });
});

describe('saved queries', () => {
  it('create, get, update, archive, unarchive, execute with parameters', async () => {
    const { query_id } = await client.createQuery({
      name: 'events by quantity',
      query_sql: 'SELECT id FROM sample.events WHERE quantity = {{q}} ORDER BY id LIMIT 3',
      parameters: [{ key: 'q', type: 'number', value: 5 }],
      tags: ['t1'],
    });
    const q = await client.getQuery(query_id);
    expect(q).toMatchObject({ query_id, name: 'events by quantity', version: 1, is_archived: false, tags: ['t1'] });
    expect(await client.updateQuery(query_id, { description: 'updated' })).toEqual({ query_id });
    expect((await client.getQuery(query_id)).description).toBe('updated');

    expect(await client.run({ queryId: query_id })).toEqual([{ id: 5n }, { id: 1005n }]);
    expect(await client.run({ queryId: query_id, parameters: { q: 7 } })).toEqual([{ id: 7n }, { id: 1007n }]);

    expect(await client.archiveQuery(query_id)).toEqual({ query_id });
    expect((await client.getQuery(query_id)).is_archived).toBe(true);
    expect(await client.unarchiveQuery(query_id)).toEqual({ query_id });
    const exec = await client.executeQuery(query_id, { parameters: { q: 9 } });
    expect(exec.state).toBe('QUERY_STATE_PENDING');
  });

  it('latest result: page and CSV, with params.<name>', async () => {
    const { query_id } = await client.createQuery({
      name: 'latest',
      query_sql: "SELECT {{label}} AS label, count(*) AS n FROM sample.events WHERE quantity = 1",
      parameters: [{ key: 'label', type: 'text', value: 'dflt' }],
    });
    await expect(client.getLatestResultPage(query_id)).rejects.toThrow(NotFoundError);
    await client.run({ queryId: query_id, parameters: { label: 'a' } });
    await client.run({ queryId: query_id, parameters: { label: 'b' } });
    const latest = await client.getLatestResultPage(query_id);
    expect(latest.result?.rows).toEqual([{ label: 'b', n: 2 }]);
    const a = await client.getLatestResultPage(query_id, { parameters: { label: 'a' } });
    expect(a.result?.rows).toEqual([{ label: 'a', n: 2 }]);
    const csv = await client.getLatestResultCsv(query_id, { parameters: { label: 'a' } });
    expect(csv.text).toBe('label,n\na,2\n');
  });

  it('getLatestResult reuses a stored result, or executes when missing or too old', async () => {
    const { query_id } = await client.createQuery({ name: 'fresh', query_sql: 'SELECT {{x}} AS x', parameters: [{ key: 'x', type: 'number', value: 1 }] });
    const first = await client.getLatestResult(query_id, { maxAgeHours: 1, parameters: { x: 3 } });
    expect(first.reused).toBe(false);
    await first.wait();
    const again = await client.getLatestResult(query_id, { maxAgeHours: 1, parameters: { x: 3 } });
    expect(again.reused).toBe(true);
    expect(again.id).toBe(first.id);
    const rows: unknown[] = [];
    for await (const r of again.rows()) rows.push(r);
    expect(rows).toEqual([{ x: 3 }]);
    const stale = await client.getLatestResult(query_id, { maxAgeHours: 0, parameters: { x: 3 } });
    expect(stale.reused).toBe(false);
    expect(stale.id).not.toBe(first.id);
  });
});

describe('uploads, views and usage', () => {
  it('uploadCsv, upsertView, getView, listViews, refreshView, deleteView, getUsage', async () => {
    const usage = await client.getUsage();
    expect(usage.team).toBe('demo');

    const up = await client.uploadCsv({ table_name: 'client_test', data: 'a,b\n1,x\n2,y\n' });
    expect(up).toEqual({ success: true, table_name: 'service.demo.dataset_client_test', full_name: 'service.demo.dataset_client_test', example_query: 'SELECT * FROM service.demo.dataset_client_test LIMIT 10' });
    expect(await client.run(`SELECT * FROM ${up.table_name} ORDER BY a`)).toEqual([
      { a: 1n, b: 'x' },
      { a: 2n, b: 'y' },
    ]);

    // An upload replaces the table whole, so the client resends it like a read: the same upload twice
    // leaves the same table, not twice the rows.
    expect(await client.uploadCsv({ table_name: 'client_test', data: 'a,b\n1,x\n2,y\n' })).toEqual(up);
    expect(await client.run(`SELECT count(*) AS n FROM ${up.table_name}`)).toEqual([{ n: 2n }]);

    const { query_id } = await client.createQuery({ name: 'for view', query_sql: `SELECT count(*) AS n FROM ${up.table_name}` });
    const view = await client.upsertView({ name: 'result_client_test', query_id });
    expect(view.name).toBe('service.demo.result_client_test');
    await client.execution(view.execution_id).wait();
    expect((await client.getView(view.name)).query_id).toBe(query_id);
    expect((await client.listViews()).materialized_views.map((v) => v.name)).toContain(view.name);
    const refresh = await client.refreshView('result_client_test');
    await client.execution(refresh.execution_id).wait();
    expect(await client.run(`SELECT n FROM ${view.name}`)).toEqual([{ n: 2n }]);
    const other = await client.createQuery({ name: 'other', query_sql: 'SELECT 1' });
    await expect(client.upsertView({ name: 'result_client_test', query_id: other.query_id })).rejects.toMatchObject({ code: 'CONFLICT', status: 409 });
    expect((await client.deleteView(view.name)).message).toBeTruthy();
    await expect(client.getView(view.name)).rejects.toThrow(NotFoundError);
  });
});

describe('billing limit', () => {
  it('402 once the cycle credits are spent: PaymentRequiredError, not retried', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-client-402-'));
    const key = 'sk_poor_team';
    const own = await startService({
      dataDir,
      sampleRows: 10,
      settings: { teams: [{ name: 'poor', plan: { credits_per_cycle: 15, max_inflight: 3, storage_quota_bytes: 1_048_576 }, keys: [{ key, scopes: ['Write'] }] }] },
    });
    const c = new ServiceClient({ apiKey: key, baseUrl: own.url });
    try {
      let err: unknown;
      // 10 credits an execution against 15 in the cycle: the second or third submission must be refused.
      for (let i = 0; i < 3 && err === undefined; i++) {
        err = await c.run('SELECT 1').then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect(err).toBeInstanceOf(PaymentRequiredError);
      expect((err as Error).message).toContain('402 This API request would exceed your configured limits per billing cycle.');
      expect(c.stats.retries).toBe(0);
    } finally {
      await c.close();
      await own.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
