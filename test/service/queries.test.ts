import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuerySchema } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, waitFor } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.close());

const w = () => svc.keys.demo.write;

async function createQuery(body: Record<string, unknown>, key = w()): Promise<number> {
  const r = await call(svc, 'POST', '/v1/query', { key, body });
  if (r.status !== 200) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r.json.query_id as number;
}

async function executeQuery(id: number, body: unknown, key = w()) {
  return call(svc, 'POST', `/v1/query/${id}/execute`, { key, body });
}

/** Executes a saved query and returns its single row. */
async function rowOf(id: number, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await executeQuery(id, { query_parameters: params });
  expect(r.status, r.text).toBe(200);
  const s = await waitFor(svc, r.json.execution_id);
  expect(s.state, JSON.stringify(s.error)).toBe('QUERY_STATE_COMPLETED');
  expect(s.query_id).toBe(id);
  const page = await call(svc, 'GET', `/v1/execution/${r.json.execution_id}/results`, { key: svc.keys.demo.read });
  return page.json.result.rows[0];
}

const PARAMS = [
  { key: 'who', type: 'text', value: 'nobody' },
  { key: 'n', type: 'number', value: 1 },
  { key: 'since', type: 'datetime', value: '2026-01-01 00:00:00' },
  { key: 'color', type: 'enum', value: 'red', enumOptions: ['red', 'green'] },
];
const SQL = 'SELECT {{who}} AS who, 10-{{n}} AS n, {{since}} AS since, {{ color }} AS color';

describe('saved queries', () => {
  it('creates, gets, updates (version bump), archives and unarchives', async () => {
    const id = await createQuery({ name: 'q1', query_sql: SQL, parameters: PARAMS, description: 'd', tags: ['t'] });
    const got = await call(svc, 'GET', `/v1/query/${id}`, { key: svc.keys.demo.read });
    expect(got.status).toBe(200);
    expect(QuerySchema.safeParse(got.json).success).toBe(true);
    expect(got.json).toEqual({
      query_id: id, name: 'q1', description: 'd', tags: ['t'], version: 1, parameters: PARAMS, is_temp: false,
      query_engine: 'DuckDB SQL', query_sql: SQL, is_private: false, is_archived: false, is_unsaved: false, owner: 'demo',
    });
    const renamed = await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), body: { name: 'q1b' } });
    expect(renamed.json).toEqual({ query_id: id });
    expect((await call(svc, 'GET', `/v1/query/${id}`, { key: w() })).json).toMatchObject({ name: 'q1b', version: 1 });
    await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), body: { query_sql: `${SQL}, 1 AS one` } });
    expect((await call(svc, 'GET', `/v1/query/${id}`, { key: w() })).json.version).toBe(2);

    expect((await call(svc, 'POST', `/v1/query/${id}/archive`, { key: w() })).json).toEqual({ query_id: id });
    expect((await call(svc, 'GET', `/v1/query/${id}`, { key: w() })).json.is_archived).toBe(true);
    const refused = await executeQuery(id, undefined);
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatch(/archived/);
    await call(svc, 'POST', `/v1/query/${id}/unarchive`, { key: w(), rawBody: '' });
    expect((await executeQuery(id, undefined)).status).toBe(200);
    // PATCH is_archived works too.
    await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), body: { is_archived: true } });
    expect((await executeQuery(id, {})).status).toBe(403);
  });

  it('refuses bad definitions with the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ query_sql: 'SELECT 1' }, /name/],
      [{ name: 'x', query_sql: 'SELECT 1', bogus: 1 }, /unknown field "bogus"/],
      [{ name: 'x', query_sql: 'SELECT {{y}}' }, /undeclared parameters \(y\)/],
      [{ name: 'x', query_sql: 'SELECT {{y}}', parameters: [{ key: 'y', type: 'number', value: 'abc' }] }, /"y": expected a number/],
      [{ name: 'x', query_sql: 'SELECT {{y}}', parameters: [{ key: 'y', type: 'enum', value: 'a' }] }, /needs enumOptions/],
      [{ name: 'x', query_sql: 'SELECT {{y}}', parameters: [{ key: 'y', type: 'blob', value: 'a' }] }, /parameters\[0\]\.type/],
    ];
    for (const [body, msg] of cases) {
      const r = await call(svc, 'POST', '/v1/query', { key: w(), body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatch(msg);
    }
  });

  it('answers 404 Query not found for unknown queries and 400 for bad ids', async () => {
    for (const path of ['/v1/query/999999', '/v1/query/999999/results']) {
      const r = await call(svc, 'GET', path, { key: svc.keys.demo.read });
      expect(r.status).toBe(404);
      expect(r.json).toEqual({ error: 'Query not found' });
    }
    const r = await executeQuery(999999, {});
    expect(r.status).toBe(404);
    const bad = await call(svc, 'GET', '/v1/query/abc', { key: svc.keys.demo.read });
    expect(bad.status).toBe(400);
  });
});

describe('typed parameters', () => {
  let id: number;
  beforeAll(async () => {
    id = await createQuery({ name: 'typed', query_sql: SQL, parameters: PARAMS });
  });

  it('uses defaults for parameters left out', async () => {
    expect(await rowOf(id, {})).toEqual({ who: 'nobody', n: 9, since: '2026-01-01 00:00:00.000000', color: 'red' });
  });

  it('substitutes typed literals: text stays text, negative numbers stay numbers, datetimes are timestamps', async () => {
    const row = await rowOf(id, { who: "it's", n: -5, since: '2026-03-04T05:06:07.5+01:00', color: 'green' });
    expect(row).toEqual({ who: "it's", n: 15, since: '2026-03-04 04:06:07.500000', color: 'green' });
  });

  it('keeps an injection attempt a string', async () => {
    const attack = "x'; DROP TABLE sample.events; SELECT '";
    expect((await rowOf(id, { who: attack })).who).toBe(attack);
    expect(await rowOf(id, { who: '{{n}}' })).toMatchObject({ who: '{{n}}' });
    const check = await call(svc, 'POST', '/v1/sql/execute', { key: w(), body: { sql: 'SELECT count(*) AS n FROM sample.events' } });
    const s = await waitFor(svc, check.json.execution_id);
    expect(s.state).toBe('QUERY_STATE_COMPLETED');
    expect(s.result_metadata.row_count).toBe(1);
  });

  it('refuses bad values and unknown names', async () => {
    const cases: [Record<string, unknown>, number, string | RegExp][] = [
      [{ nope: 1 }, 400, 'unknown parameters (nope)'],
      [{ nope: 1, zap: 2 }, 400, 'unknown parameters (nope, zap)'],
      [{ n: '1; DROP TABLE x' }, 400, /"n": expected a number/],
      [{ n: 'NaN' }, 400, /"n": expected a number/],
      [{ since: 'yesterday' }, 400, /"since": expected a datetime/],
      [{ since: '2026-02-30' }, 400, /"since": expected a datetime/],
      [{ color: 'blue' }, 400, /"color": expected one of "red", "green"/],
      [{ who: true }, 400, /"who": expected text/],
    ];
    for (const [params, code, msg] of cases) {
      const r = await executeQuery(id, { query_parameters: params });
      expect(r.status, JSON.stringify(params)).toBe(code);
      if (typeof msg === 'string') expect(r.json.error).toBe(msg);
      else expect(r.json.error).toMatch(msg);
    }
    const badBody = await executeQuery(id, { query_parameters: { n: 1 }, performance: 'huge' });
    expect(badBody.status).toBe(400);
    expect(badBody.json.error).toMatch(/performance/);
  });
});

describe('latest result of a query', () => {
  it('serves the newest finished execution of the current version whose parameters match', async () => {
    const id = await createQuery({ name: 'latest', query_sql: 'SELECT {{n}} AS n, {{who}} AS who', parameters: [
      { key: 'n', type: 'number', value: 1 },
      { key: 'who', type: 'text', value: 'a' },
    ] });
    const none = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read });
    expect(none.status).toBe(404);
    expect(none.json).toEqual({ error: 'not found: No execution found for the latest version of the given query' });

    const run = async (params: Record<string, unknown>) => {
      const r = await executeQuery(id, { query_parameters: params });
      return (await waitFor(svc, r.json.execution_id)).execution_id as string;
    };
    const e1 = await run({ n: 1 });
    const e2 = await run({ n: 2 });
    const e3 = await run({ n: 2, who: 'b' });

    const latest = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read });
    expect(latest.json.execution_id).toBe(e3);
    expect(latest.json.result.rows).toEqual([{ n: 2, who: 'b' }]);
    const withN1 = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read, query: { 'params.n': '1.0' } });
    expect(withN1.json.execution_id).toBe(e1);
    const withA = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read, query: { 'params.n': 2, 'params.who': 'a' } });
    expect(withA.json.execution_id).toBe(e2);
    const csv = await call(svc, 'GET', `/v1/query/${id}/results/csv`, { key: svc.keys.demo.read, query: { 'params.n': 1 } });
    expect(csv.text).toBe('n,who\n1,a\n');
    const noMatch = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read, query: { 'params.n': 3 } });
    expect(noMatch.status).toBe(404);
    const unknown = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read, query: { 'params.zz': 3 } });
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual({ error: 'unknown parameters (zz)' });

    // A new version hides the old executions.
    await call(svc, 'PATCH', `/v1/query/${id}`, { key: w(), body: { query_sql: 'SELECT {{n}} AS n, {{who}} AS who, 0 AS z' } });
    const after = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read });
    expect(after.status).toBe(404);
  });

  it('pages a latest result through the execution (next_uri names the execution)', async () => {
    const id = await createQuery({ name: 'paged', query_sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 5' });
    const r = await executeQuery(id, {});
    await waitFor(svc, r.json.execution_id);
    const page = await call(svc, 'GET', `/v1/query/${id}/results`, { key: svc.keys.demo.read, query: { limit: 2 } });
    expect(page.json.next_uri).toBe(`${svc.origin}/api/v1/execution/${r.json.execution_id}/results?limit=2&offset=2`);
  });
});
