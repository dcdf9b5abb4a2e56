// What the official TypeScript, Python and Go clients send, operation by operation, as raw HTTP
// (the TypeScript client itself runs in test/conformance/officialClient.test.ts). One test per
// request shape; each asserts the service does with it what the client meant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseColumns } from '../../src/service/resultShape.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, waitFor } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.close());

const w = () => svc.keys.demo.write;

async function createQuery(body: unknown, path = '/v1/query/'): Promise<number> {
  const res = await call(svc, 'POST', path, { key: w(), body });
  expect(res.status, res.text).toBe(200);
  return res.json.query_id as number;
}

async function getQuery(id: number): Promise<any> {
  return (await call(svc, 'GET', `/v1/query/${id}`, { key: w() })).json;
}

async function execute(queryId: number, body: unknown): Promise<string> {
  const res = await call(svc, 'POST', `/v1/query/${queryId}/execute`, { key: w(), body });
  expect(res.status, res.text).toBe(200);
  const done = await waitFor(svc, res.json.execution_id);
  expect(done.state).toBe('QUERY_STATE_COMPLETED');
  return res.json.execution_id as string;
}

describe('a trailing slash is accepted on every route', () => {
  it('POST /v1/query/ (TypeScript and Python) creates like /v1/query (Go)', async () => {
    const a = await createQuery({ name: 'slash', query_sql: 'SELECT 1' }, '/v1/query/');
    const b = await createQuery({ name: 'no slash', query_sql: 'SELECT 1' }, '/v1/query');
    expect(b).toBe(a + 1);
  });

  it('GET, POST and PATCH routes with a path parameter take one too', async () => {
    const id = await runSql(svc, 'SELECT 1 AS one');
    expect((await call(svc, 'GET', `/v1/execution/${id}/status/`, { key: w() })).json.state).toBe('QUERY_STATE_COMPLETED');
    expect((await call(svc, 'GET', `/v1/execution/${id}/results/`, { key: w() })).json.result.rows).toEqual([{ one: 1 }]);
    expect((await call(svc, 'GET', `/v1/execution/${id}/results/csv/`, { key: w() })).text).toBe('one\n1\n');
    const q = await createQuery({ name: 'x', query_sql: 'SELECT 1' });
    expect((await call(svc, 'PATCH', `/v1/query/${q}/`, { key: w(), body: { name: 'y' } })).status).toBe(200);
    expect((await call(svc, 'POST', `/v1/query/${q}/archive/`, { key: w() })).status).toBe(200);
  });

  it('two slashes are still no route', async () => {
    expect((await call(svc, 'POST', '/v1/query//', { key: w(), body: { name: 'x', query_sql: 'SELECT 1' } })).status).toBe(404);
  });
});

describe('query create and update', () => {
  it('TypeScript: the query_parameters name -> value map becomes text parameters', async () => {
    const id = await createQuery({ name: 'ts', query_sql: 'SELECT {{a}} AS a, {{b}} AS b', is_private: false, query_parameters: { a: 'x', b: 3 } });
    expect((await getQuery(id)).parameters).toEqual([
      { key: 'a', type: 'text', value: 'x' },
      { key: 'b', type: 'text', value: '3' },
    ]);
    // An empty map with no list declares nothing.
    const none = await createQuery({ name: 'ts', query_sql: 'SELECT 1', query_parameters: {} });
    expect((await getQuery(none)).parameters).toEqual([]);
  });

  it('TypeScript: update with the map replaces the parameters (a version bump)', async () => {
    const id = await createQuery({ name: 'ts', query_sql: 'SELECT {{a}} AS a', query_parameters: { a: 'x' } });
    const res = await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), body: { query_parameters: { a: 'y' } } });
    expect(res.status, res.text).toBe(200);
    expect(await getQuery(id)).toMatchObject({ version: 2, parameters: [{ key: 'a', type: 'text', value: 'y' }] });
  });

  it('the map and a list at once are refused, naming both', async () => {
    const res = await call(svc, 'POST', '/v1/query', {
      key: w(),
      body: { name: 'x', query_sql: 'SELECT {{a}}', parameters: [{ key: 'a', type: 'text', value: 'x' }], query_parameters: { a: 'y' } },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toContain('query_parameters: give parameters or query_parameters, not both');
  });

  it('a map key that is no parameter name is refused with the key', async () => {
    const res = await call(svc, 'POST', '/v1/query', { key: w(), body: { name: 'x', query_sql: 'SELECT 1', query_parameters: { 'bad key': 'y' } } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('Bad Request: query_parameters.bad key: a parameter key is letters, digits and _');
  });

  it('Python: the parameters list with a datetime "YYYY-MM-DD HH:MM:SS" value', async () => {
    const id = await createQuery({
      name: 'py',
      query_sql: 'SELECT {{d}} AS d',
      is_private: false,
      parameters: [{ key: 'd', type: 'datetime', value: '2022-05-04 00:00:00' }],
    });
    const ex = await execute(id, { query_parameters: { d: '2023-01-02 03:04:05' }, performance: 'medium' });
    const rows = (await call(svc, 'GET', `/v1/execution/${ex}/results`, { key: w(), query: { limit: 32000, allow_partial_results: 'true' } })).json.result.rows;
    expect(rows).toEqual([{ d: '2023-01-02 03:04:05.000000' }]);
  });

  it('Go: no Content-Type, is_temp and enumOptions', async () => {
    const res = await call(svc, 'POST', '/v1/query', {
      key: w(),
      rawBody: JSON.stringify({
        name: 'go',
        query_sql: 'SELECT {{e}} AS e',
        is_temp: true,
        parameters: [{ key: 'e', type: 'enum', value: 'a', enumOptions: ['a', 'b'] }],
      }),
    });
    expect(res.status, res.text).toBe(200);
    expect((await getQuery(res.json.query_id)).parameters).toEqual([{ key: 'e', type: 'enum', value: 'a', enumOptions: ['a', 'b'] }]);
  });

  it('Go: update with is_private; the clients\' private / unprivate operations', async () => {
    const id = await createQuery({ name: 'go', query_sql: 'SELECT 1' });
    expect((await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), rawBody: '{"is_private":true}' })).status).toBe(200);
    expect((await getQuery(id)).is_private).toBe(true);
    expect((await call(svc, 'POST', `/v1/query/${id}/unprivate`, { key: w() })).json).toEqual({ query_id: id });
    expect((await getQuery(id)).is_private).toBe(false);
    expect((await call(svc, 'POST', `/v1/query/${id}/private`, { key: w(), body: {} })).json).toEqual({ query_id: id });
    expect((await getQuery(id)).is_private).toBe(true);
    // Another team cannot.
    expect((await call(svc, 'POST', `/v1/query/${id}/unprivate`, { key: svc.keys.other.write })).status).toBe(404);
  });
});

describe('execute', () => {
  it('Go: query_parameters values as JSON numbers; Python: both fields always present', async () => {
    const id = await createQuery({ name: 'n', query_sql: 'SELECT {{n}} + 1 AS m', parameters: [{ key: 'n', type: 'number', value: '1' }] });
    const ex = await execute(id, { query_parameters: { n: 41 } });
    expect((await call(svc, 'GET', `/v1/execution/${ex}/results`, { key: w(), query: { limit: 32000 } })).json.result.rows).toEqual([{ m: 42 }]);
    await execute(id, { query_parameters: {}, performance: 'medium' });
  });

  it('raw SQL with an empty query_parameters map runs; with values it is refused', async () => {
    const ok = await call(svc, 'POST', '/v1/sql/execute', { key: w(), rawBody: '{"sql":"SELECT 1","query_parameters":{}}' });
    expect(ok.status, ok.text).toBe(200);
    const bad = await call(svc, 'POST', '/v1/sql/execute', { key: w(), body: { sql: 'SELECT 1', query_parameters: { a: 1 } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toContain('query_parameters: raw SQL takes no parameters');
  });

  it('cancel with no body (Python, Go) and with {} (TypeScript)', async () => {
    const id = await runSql(svc, 'SELECT 1');
    expect((await call(svc, 'POST', `/v1/execution/${id}/cancel`, { key: w() })).json).toEqual({ success: false });
    expect((await call(svc, 'POST', `/v1/execution/${id}/cancel`, { key: w(), body: {} })).json).toEqual({ success: false });
  });
});

describe('results', () => {
  let queryId: number;
  let ex: string;
  beforeAll(async () => {
    queryId = await createQuery({
      name: 'p',
      query_sql: `SELECT i, {{n}} AS n, {{t}} AS t, 'q' || i AS "x""y", 'b' || i AS "a\\b" FROM range(3) t(i) ORDER BY i`,
      parameters: [
        { key: 'n', type: 'number', value: '1' },
        { key: 't', type: 'text', value: 'hello' },
      ],
    });
    ex = await execute(queryId, { query_parameters: { n: '3' } });
  });

  const results = (query: Record<string, string | number>) => call(svc, 'GET', `/v1/execution/${ex}/results`, { key: w(), query });

  it('TypeScript: params.<name> agreeing with the execution are accepted (after normalisation)', async () => {
    const agreeing: Record<string, string>[] = [{ 'params.n': '3' }, { 'params.n': '3.0', 'params.t': 'hello' }, { 'params.t': 'hello' }];
    for (const q of agreeing) {
      const res = await results({ limit: 32000, offset: 0, ...q });
      expect(res.status, res.text).toBe(200);
      expect(res.json.result.rows).toHaveLength(3);
    }
    expect((await call(svc, 'GET', `/v1/execution/${ex}/results/csv`, { key: w(), query: { 'params.n': '3' } })).status).toBe(200);
  });

  it('params.<name> contradicting the execution, or a name it does not have, is 400 naming both values', async () => {
    const res = await results({ 'params.n': '4' });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe(
      `Bad Request: params.n="4" contradicts execution ${ex}, which ran with n="3"; execute the query with that value for its result, or drop params.n`,
    );
    const unknown = await results({ 'params.zz': '1' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toContain('params.zz: execution');
    expect(unknown.json.error).toContain('has only "n", "t"');
    const sqlId = await runSql(svc, 'SELECT 1');
    const none = await call(svc, 'GET', `/v1/execution/${sqlId}/results`, { key: w(), query: { 'params.n': '1' } });
    expect(none.json.error).toContain('(it has no parameters)');
  });

  it('TypeScript: columns quoted with a backslash-escaped quote; \\\\ is a backslash', async () => {
    const res = await results({ columns: '"x\\"y","a\\\\b",i' });
    expect(res.status, res.text).toBe(200);
    expect(res.json.result.metadata.column_names).toEqual(['x"y', 'a\\b', 'i']);
    expect(res.json.result.rows[0]).toEqual({ 'x"y': 'q0', 'a\\b': 'b0', i: 0 });
  });

  it('Python: allow_partial_results=true always, lists joined with ","; Go: limit=32000 and no offset', async () => {
    const py = await results({ limit: 32000, allow_partial_results: 'true', columns: 'i,n', sort_by: 'i desc', filters: 'i > 0' });
    expect(py.json.result.rows).toEqual([
      { i: 2, n: 3 },
      { i: 1, n: 3 },
    ]);
    const go = await results({ limit: 32000 });
    expect(go.json.result.rows).toHaveLength(3);
  });

  it('parseColumns: the two quote escapes and a lone backslash', () => {
    expect(parseColumns('"x\\"y"')).toEqual(['x"y']);
    expect(parseColumns('"x""y"')).toEqual(['x"y']);
    expect(parseColumns('"a\\\\b"')).toEqual(['a\\b']);
    expect(parseColumns('"a\\b"')).toEqual(['a\\b']);
    expect(() => parseColumns('"x\\"')).toThrow(/unterminated double quote/);
  });
});

describe('uploads and usage', () => {
  it('the older upload path /v1/table/upload/csv uploads too', async () => {
    const res = await call(svc, 'POST', '/v1/table/upload/csv', { key: w(), body: { table_name: 'old_path', data: 'a\n1\n', description: '', is_private: false } });
    expect(res.status, res.text).toBe(200);
    expect(res.json).toMatchObject({ success: true });
  });

  // The official Python client's UsageResponse.from_dict (dune_client/models.py) and the TypeScript
  // client's UsageResponse type: every field a number but the periods, each period's four fields.
  const OfficialUsage = z.object({
    private_queries: z.number().int(),
    private_dashboards: z.number().int(),
    bytes_used: z.number().int(),
    bytes_allowed: z.number().int(),
    billing_periods: z.array(z.object({ start_date: z.iso.date(), end_date: z.iso.date(), credits_used: z.number(), credits_included: z.number() })),
  });

  it('POST /v1/usage (the clients\' form) answers in the shape the official clients decode', async () => {
    const key = svc.keys.demo.admin;
    await createQuery({ name: 'private one', query_sql: 'SELECT 1', is_private: true });
    await runSql(svc, 'SELECT 1');
    const own = (await call(svc, 'GET', '/v1/usage', { key })).json;
    for (const body of [undefined, {}]) {
      const post = await call(svc, 'POST', '/v1/usage', { key, body });
      expect(post.status, post.text).toBe(200);
      const usage = OfficialUsage.parse(post.json);
      expect(usage.private_queries).toBeGreaterThanOrEqual(1);
      expect(usage).toMatchObject({ private_dashboards: 0, bytes_used: own.storage_bytes, bytes_allowed: own.storage_quota_bytes });
      // No period asked: the current one, with what was spent in it; its end is its last day.
      const lastDay = new Date(Date.parse(own.cycle_end) - 86_400_000).toISOString().slice(0, 10);
      expect(usage.billing_periods).toEqual([
        { start_date: own.cycle_start.slice(0, 10), end_date: lastDay, credits_used: own.credits_used, credits_included: own.credits_limit },
      ]);
    }
  });

  it('POST /v1/usage with a period: the cycles it overlaps; a malformed date names the field', async () => {
    const key = svc.keys.demo.admin;
    const own = (await call(svc, 'GET', '/v1/usage', { key })).json;
    const today = own.cycle_start.slice(0, 10);
    const within = await call(svc, 'POST', '/v1/usage', { key, body: { start_date: today, end_date: today } });
    expect(within.status, within.text).toBe(200);
    expect(OfficialUsage.parse(within.json).billing_periods).toHaveLength(1);
    // A period long before any cycle the service kept: no periods (not the current one).
    const old = await call(svc, 'POST', '/v1/usage', { key, body: { start_date: '2001-01-01', end_date: '2001-01-31' } });
    expect(OfficialUsage.parse(old.json).billing_periods).toEqual([]);
    const bad = await call(svc, 'POST', '/v1/usage', { key, body: { start_date: '2026/01/01' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toContain('start_date');
    const backwards = await call(svc, 'POST', '/v1/usage', { key, body: { start_date: '2026-02-01', end_date: '2026-01-01' } });
    expect(backwards.status).toBe(400);
    expect(backwards.json.error).toContain('end_date');
  });
});

describe('a saved query as the official Python client decodes it', () => {
  it('GET /v1/query/{id} carries query_engine and is_unsaved (DuneQuery.from_dict requires both)', async () => {
    const id = await createQuery({ name: 'py', query_sql: 'SELECT 1' });
    const q = await getQuery(id);
    for (const field of ['query_id', 'name', 'parameters', 'description', 'tags', 'version', 'query_engine', 'is_private', 'is_archived', 'is_unsaved', 'owner', 'query_sql']) {
      expect(q, field).toHaveProperty(field);
    }
    expect(typeof q.query_engine).toBe('string');
    expect(q.is_unsaved).toBe(false);
  });
});
