// Uploads v2 over HTTP: a table created with a schema, filled from CSV and NDJSON, queried by its
// full name, emptied, deleted; credits as the real service prices them; every bad input a clear
// 400 / 403 / 404 / 409 that leaves the table as it was. Datasets list, get and search; queries list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import type { TestService } from '../../helpers/service.ts';
import { call, runSql, waitFor } from '../api.ts';
import { startLimitsService } from '../limits/limitsService.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startLimitsService({ clock: new ManualClock(Date.UTC(2026, 0, 10, 12)), plans: { demo: { credits_per_cycle: 10_000 } } });
});
afterAll(() => svc?.close());

const w = () => svc.keys.demo.write;
const SCHEMA = [
  { name: 'id', type: 'integer', nullable: false },
  { name: 'name', type: 'varchar' },
  { name: 'amount', type: 'double' },
  { name: 'day', type: 'date' },
];

async function create(table: string, body: Record<string, unknown> = {}) {
  return call(svc, 'POST', '/v1/uploads', { key: w(), body: { namespace: 'demo', table_name: table, schema: SCHEMA, ...body } });
}
const insert = (table: string, data: string, type = 'text/csv', ns = 'demo') =>
  call(svc, 'POST', `/v1/uploads/${ns}/${table}/insert`, { key: w(), rawBody: data, headers: { 'content-type': type } });
const used = async (): Promise<number> => (await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json.credits_used as number;

async function rows(sql: string): Promise<unknown[]> {
  const id = await runSql(svc, sql);
  return (await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read })).json.result.rows as unknown[];
}

describe('uploads v2', () => {
  it('creates a typed table (10 credits), fills it from CSV and NDJSON (1 credit each), queries it by full_name, clears and deletes it', async () => {
    const before = await used();
    const made = await create('trades', { description: 'test trades' });
    expect(made.status, made.text).toBe(200);
    expect(made.json).toEqual({
      namespace: 'demo', table_name: 'trades', full_name: 'service.demo.trades',
      example_query: 'SELECT * FROM service.demo.trades LIMIT 10', already_existed: false, message: 'Created table service.demo.trades',
    });
    expect(await used()).toBe(before + 10);
    // CSV columns in another order than the schema's; a quoted empty string stays '', an empty field is NULL.
    const csv = 'name,id,day,amount\nalice,1,2026-01-02,1.5\n"",2,,\n';
    const a = await insert('trades', csv);
    expect(a.json).toEqual({ name: 'service.demo.trades', rows_written: 2, bytes_written: Buffer.byteLength(csv) });
    const nd = '{"id":3,"name":"carol","amount":2.25,"day":"2026-01-03"}\n\n{"id":4}\n';
    expect((await insert('trades', nd, 'application/x-ndjson')).json).toMatchObject({ rows_written: 2 });
    expect(await used()).toBe(before + 12);
    expect(await rows(made.json.example_query.replace('LIMIT 10', 'ORDER BY id'))).toEqual([
      { id: 1, name: 'alice', amount: 1.5, day: '2026-01-02' },
      { id: 2, name: '', amount: null, day: null },
      { id: 3, name: 'carol', amount: 2.25, day: '2026-01-03' },
      { id: 4, name: null, amount: null, day: null },
    ]);
    const status = await waitFor(svc, await runSql(svc, 'SELECT * FROM service.demo.trades'));
    expect(status.result_metadata.column_types).toEqual(['integer', 'varchar', 'double', 'date']);
    expect((await call(svc, 'POST', '/v1/uploads/demo/trades/clear', { key: w() })).json).toEqual({ message: 'Cleared table service.demo.trades' });
    expect(await rows('SELECT count(*) AS n FROM service.demo.trades')).toEqual([{ n: 0 }]);
    expect((await call(svc, 'DELETE', '/v1/uploads/demo/trades', { key: w() })).json).toEqual({ message: 'Deleted table service.demo.trades' });
    expect((await call(svc, 'GET', '/v1/uploads', { key: w() })).json.tables.map((t: any) => t.full_name)).not.toContain('service.demo.trades');
  });

  it('lists tables with their columns and size as a decimal string, paged', async () => {
    await create('listed_a');
    await create('listed_b');
    expect((await insert('listed_a', 'id,name,amount,day\n1,,,\n')).status).toBe(200);
    const page = await call(svc, 'GET', '/v1/uploads', { key: svc.keys.demo.read, query: { limit: 1 } });
    expect(page.json.tables).toHaveLength(1);
    expect(page.json.next_offset).toBe(1);
    const all = (await call(svc, 'GET', '/v1/uploads', { key: svc.keys.demo.read })).json.tables as any[];
    const a = all.find((t) => t.full_name === 'service.demo.listed_a');
    expect(a).toMatchObject({ is_private: false, table_size_bytes: '24', owner: { handle: 'demo', type: 'team' } });
    expect(a.columns[0]).toEqual({ name: 'id', type: 'integer', nullable: false });
  });

  it('refuses bad input with 400 naming the field, 404 for a missing table, 409 for an existing one, 403 for another namespace: nothing changes', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ table_name: 'Bad-Name' }, /^Bad Request: table_name: a table name starts with a letter/],
      [{ table_name: 'result_x' }, /^Bad Request: table_name: result_ names are materialized views/],
      [{ schema: [] }, /^Bad Request: schema: at least one column/],
      [{ schema: [{ name: 'a', type: 'text' }] }, /^Bad Request: schema\[0\]\.type: .*varchar/],
      [{ schema: [{ name: 'a', type: 'bigint' }, { name: 'A', type: 'varchar' }] }, /^Bad Request: schema\[1\]\.name: column "A" is declared twice/],
      [{ extra: 1 }, /^Bad Request: unknown field "extra"/],
    ];
    for (const [body, msg] of cases) {
      const r = await create('refused', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatch(msg);
    }
    const other = await create('refused', { namespace: 'other' });
    expect(other.status).toBe(403);
    expect(other.json.error).toMatch(/team demo; it cannot write tables in namespace "other"/);
    expect((await call(svc, 'POST', '/v1/uploads', { key: svc.keys.demo.read, body: { namespace: 'demo', table_name: 'ro', schema: SCHEMA } })).status).toBe(403);

    expect((await create('kept')).status).toBe(200);
    expect(await insert('kept', 'id,name,amount,day\n1,a,1,2026-01-01\n')).toMatchObject({ status: 200 });
    const again = await create('kept');
    expect(again.status).toBe(409);
    expect(again.json.error).toMatch(/service\.demo\.kept already exists/);
    const bad: [string, string, number, RegExp][] = [
      ['id,name\n1,a\n', 'text/csv', 400, /must name the columns of service\.demo\.kept .*missing "amount", "day"/],
      ['id,name,amount,day,zzz\n1,a,1,2026-01-01,1\n', 'text/csv', 400, /unknown column "zzz"/],
      ['id,name,amount,day\n2,b,1,2026-01-01\nx,c,1,2026-01-01\n', 'text/csv', 400, /no row was inserted: .*x/],
      ['id,name,amount,day\n,b,1,2026-01-01\n', 'text/csv', 400, /no row was inserted: .*NOT NULL/i],
      ['{"id":5}\nnot json\n', 'application/x-ndjson', 400, /NDJSON line 2: not JSON/],
      ['{"id":5,"nope":1}\n', 'application/x-ndjson', 400, /NDJSON line 1: unknown column "nope"/],
      ['{"id":5}', 'application/json', 400, /Content-Type must be text\/csv or application\/x-ndjson, got "application\/json"/],
      ['', 'text/csv', 400, /the body is empty/],
    ];
    for (const [data, type, status, msg] of bad) {
      const r = await insert('kept', data, type);
      expect(r.status, data).toBe(status);
      expect(r.json.error, data).toMatch(msg);
    }
    // All or none: only the first good insert's row is there.
    expect(await rows('SELECT id FROM service.demo.kept')).toEqual([{ id: 1 }]);
    for (const [method, path] of [['POST', '/v1/uploads/demo/missing/insert'], ['POST', '/v1/uploads/demo/missing/clear'], ['DELETE', '/v1/uploads/demo/missing']] as const) {
      const r = await call(svc, method, path, { key: w(), rawBody: 'id\n1\n', headers: { 'content-type': 'text/csv' } });
      expect(r.status, path).toBe(404);
      expect(r.json.error).toBe('Table not found: service.demo.missing (list the team\'s tables with GET /v1/uploads)');
    }
    expect((await call(svc, 'GET', '/v1/uploads', { key: w(), query: { limit: 'x' } })).json.error).toBe('Bad Request: limit must be an integer of at least 1, got "x"');
  });

  it('a CSV upload (dataset_<name>) is listed and deleted by the same routes, and cannot be inserted into', async () => {
    await call(svc, 'POST', '/v1/uploads/csv', { key: w(), body: { table_name: 'legacy', data: 'a\n1\n' } });
    expect((await insert('dataset_legacy', 'a\n2\n')).json.error).toMatch(/was uploaded as a CSV and is replaced whole/);
    expect((await call(svc, 'DELETE', '/v1/uploads/demo/dataset_legacy', { key: w() })).status).toBe(200);
    expect((await call(svc, 'GET', '/v1/datasets/service.demo.dataset_legacy', { key: w() })).status).toBe(404);
  });
});

describe('datasets', () => {
  it('lists, gets and searches the tables a key can see: its team\'s and other teams\' public ones', async () => {
    await create('ds_public', { description: 'weekly volumes' });
    await create('ds_private', { is_private: true });
    await call(svc, 'POST', '/v1/uploads', { key: svc.keys.other.write, body: { namespace: 'other', table_name: 'theirs', schema: SCHEMA, is_private: true } });
    await call(svc, 'POST', '/v1/uploads', { key: svc.keys.other.write, body: { namespace: 'other', table_name: 'shared', schema: SCHEMA } });
    const list = (await call(svc, 'GET', '/v1/datasets', { key: svc.keys.demo.read, query: { limit: 250 } })).json;
    const names = list.datasets.map((d: any) => d.full_name);
    expect(names).toEqual(expect.arrayContaining(['service.demo.ds_public', 'service.demo.ds_private', 'service.other.shared']));
    expect(names).not.toContain('service.other.theirs');
    expect(list.total).toBe(names.length);
    const mine = (await call(svc, 'GET', '/v1/datasets', { key: svc.keys.demo.read, query: { owner_handle: 'other' } })).json;
    expect(mine.datasets.map((d: any) => d.full_name)).toEqual(['service.other.shared']);
    expect((await call(svc, 'GET', '/v1/datasets', { key: svc.keys.demo.read, query: { type: 'spell' } })).json).toEqual({ datasets: [], total: 0 });
    expect((await call(svc, 'GET', '/v1/datasets', { key: svc.keys.demo.read, query: { type: 'nope' } })).json.error).toMatch(/^Bad Request: type must be one of transformation_view, .*got "nope"/);
    const one = (await call(svc, 'GET', '/v1/datasets/service.demo.ds_public', { key: svc.keys.demo.read })).json;
    expect(one).toMatchObject({ type: 'uploaded_table', full_name: 'service.demo.ds_public', is_private: false, owner: { handle: 'demo', type: 'team' }, metadata: { description: 'weekly volumes' } });
    expect((await call(svc, 'GET', '/v1/datasets/service.other.theirs', { key: svc.keys.demo.read })).status).toBe(404);
    const found = (await call(svc, 'POST', '/v1/datasets/search', { key: svc.keys.demo.read, body: { query: 'weekly', include_schema: true } })).json;
    expect(found).toMatchObject({ total: 1, pagination: { limit: 20, offset: 0, has_more: false } });
    expect(found.results[0]).toMatchObject({ full_name: 'service.demo.ds_public', dataset_type: 'uploaded_table', visibility: 'public', schema: { columns: expect.any(Array) } });
    const paged = (await call(svc, 'POST', '/v1/datasets/search', { key: svc.keys.demo.read, body: { limit: 1 } })).json;
    expect(paged.pagination).toEqual({ limit: 1, offset: 0, has_more: true, next_offset: 1 });
    expect((await call(svc, 'POST', '/v1/datasets/search', { key: svc.keys.demo.read, body: { limit: 0 } })).json.error).toMatch(/^Bad Request: limit: /);
  });
});

describe('queries', () => {
  it('GET /v1/queries lists the team\'s saved queries newest first, without temporary ones; is_temp is reported', async () => {
    const mk = async (name: string, isTemp?: boolean) => (await call(svc, 'POST', '/v1/query', { key: w(), body: { name, query_sql: 'SELECT 1', ...(isTemp === undefined ? {} : { is_temp: isTemp }) } })).json.query_id as number;
    const a = await mk('first');
    const t = await mk('temporary', true);
    const b = await mk('second');
    expect((await call(svc, 'GET', `/v1/query/${t}`, { key: w() })).json.is_temp).toBe(true);
    expect((await call(svc, 'GET', `/v1/query/${a}`, { key: w() })).json.is_temp).toBe(false);
    const list = (await call(svc, 'GET', '/v1/queries', { key: svc.keys.demo.read, query: { limit: 2 } })).json;
    expect(list.queries.map((q: any) => q.id)).toEqual([b, a]);
    expect(list.queries[0]).toMatchObject({ name: 'second', owner: 'demo', tags: [], is_private: false, is_archived: false });
    expect(list.total).toBeGreaterThanOrEqual(2);
    expect((await call(svc, 'GET', '/v1/queries', { key: svc.keys.other.read })).json.queries.map((q: any) => q.id)).not.toContain(a);
    expect((await call(svc, 'GET', '/v1/queries', { key: w(), query: { offset: -1 } })).status).toBe(400);
    expect((await call(svc, 'GET', '/v1/queries', { key: w(), query: { sort: 'x' } })).json.error).toBe('Bad Request: unknown parameter "sort" (known: limit, offset)');
  });
});
