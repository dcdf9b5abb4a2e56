import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, waitFor } from './api.ts';

let svc: TestService;
let demoExecution: string;
beforeAll(async () => {
  svc = await startTestService();
  demoExecution = await runSql(svc, 'SELECT 1 AS one');
});
afterAll(() => svc?.close());

describe('API keys', () => {
  it('accepts the header or the api_key parameter', async () => {
    expect((await call(svc, 'GET', `/v1/execution/${demoExecution}/status`, { key: svc.keys.demo.read })).status).toBe(200);
    const viaParam = await call(svc, 'GET', `/v1/execution/${demoExecution}/status`, { query: { api_key: svc.keys.demo.read } });
    expect(viaParam.status).toBe(200);
    // api_key is not a result-shaping parameter: results accept it too.
    const results = await call(svc, 'GET', `/v1/execution/${demoExecution}/results`, { query: { api_key: svc.keys.demo.read } });
    expect(results.status).toBe(200);
    expect(results.json.next_uri).toBeUndefined();
  });

  it('answers 401 Invalid API Key before anything else', async () => {
    const cases: [string, string, string | null][] = [
      ['GET', `/v1/execution/${demoExecution}/status`, null],
      ['GET', `/v1/execution/${demoExecution}/status`, 'sk_wrong_key_123'],
      ['GET', '/v1/execution/not-an-id/status', null], // before the 400 of a bad id
      ['GET', '/v1/nowhere', 'sk_wrong_key_123'], // before the 404 of an unknown route
      ['DELETE', '/v1/sql/execute', null], // before the 405
      ['POST', '/v1/sql/execute', null],
      ['GET', '/', null],
    ];
    for (const [method, path, key] of cases) {
      const r = await call(svc, method, path, { key, ...(method === 'POST' ? { rawBody: '{not json' } : {}) });
      expect(r.status, `${method} ${path}`).toBe(401);
      expect(r.json).toEqual({ error: 'Invalid API Key' });
    }
  });

  it('enforces scopes Read < Read/Write < Admin as the real service has them: Read executes, cancels and reads; writing needs Read/Write (403)', async () => {
    const read = svc.keys.demo.read;
    const sql = await call(svc, 'POST', '/v1/sql/execute', { key: read, body: { sql: 'SELECT 1 AS one' } });
    expect(sql.status, sql.text).toBe(200);
    const done = await waitFor(svc, sql.json.execution_id);
    expect(done.state).toBe('QUERY_STATE_COMPLETED');
    expect((await call(svc, 'GET', `/v1/execution/${sql.json.execution_id}/results`, { key: read })).json.result.rows).toEqual([{ one: 1 }]);
    const q = (await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'by read', query_sql: 'SELECT 2 AS two' } })).json.query_id as number;
    const saved = await call(svc, 'POST', `/v1/query/${q}/execute`, { key: read });
    expect(saved.status, saved.text).toBe(200);
    expect((await call(svc, 'POST', `/v1/execution/${saved.json.execution_id}/cancel`, { key: read })).status).toBe(200);
    const create = await call(svc, 'POST', '/v1/query', { key: read, body: { name: 'x', query_sql: 'SELECT 1' } });
    expect(create.status).toBe(403);
    expect(create.json).toEqual({ error: 'Not allowed: this API key lacks the Read/Write scope' });
    for (const [method, path, body] of [
      ['PATCH', `/v1/query/${q}`, { name: 'y' }],
      ['POST', `/v1/query/${q}/archive`, undefined],
      ['POST', '/v1/uploads/csv', { table_name: 't', data: 'a\n1\n' }],
      ['POST', '/v1/materialized-views', { name: 'result_x', query_id: q }],
    ] as const) {
      expect((await call(svc, method, path, { key: read, ...(body === undefined ? {} : { body }) })).status, `${method} ${path}`).toBe(403);
    }
    // Admin includes Read/Write and Read.
    expect((await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.admin, body: { sql: 'SELECT 1' } })).status).toBe(200);
    expect((await call(svc, 'GET', `/v1/execution/${demoExecution}/status`, { key: svc.keys.demo.admin })).status).toBe(200);
  });
});

describe('team isolation', () => {
  it("hides another team's executions and results (404)", async () => {
    for (const path of [`/v1/execution/${demoExecution}/status`, `/v1/execution/${demoExecution}/results`, `/v1/execution/${demoExecution}/results/csv`]) {
      const r = await call(svc, 'GET', path, { key: svc.keys.other.admin });
      expect(r.status, path).toBe(404);
      expect(r.json).toEqual({ error: 'Object not found' });
    }
    const cancel = await call(svc, 'POST', `/v1/execution/${demoExecution}/cancel`, { key: svc.keys.other.admin });
    expect(cancel.status).toBe(404);
  });

  it("hides another team's private queries; public ones are readable and executable, not changeable", async () => {
    const priv = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'p', query_sql: 'SELECT 1 AS x', is_private: true } });
    const pub = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'q', query_sql: 'SELECT 2 AS x' } });
    const other = svc.keys.other.write;
    for (const [method, suffix] of [['GET', ''], ['POST', '/execute'], ['PATCH', ''], ['POST', '/archive'], ['GET', '/results']] as const) {
      const r = await call(svc, method, `/v1/query/${priv.json.query_id}${suffix}`, { key: other, body: method === 'PATCH' ? { name: 'z' } : undefined });
      expect(r.status, `${method} ${suffix}`).toBe(404);
      expect(r.json).toEqual({ error: 'Query not found' });
    }
    expect((await call(svc, 'GET', `/v1/query/${pub.json.query_id}`, { key: other })).json.owner).toBe('demo');
    const ran = await call(svc, 'POST', `/v1/query/${pub.json.query_id}/execute`, { key: other });
    expect(ran.status).toBe(200);
    // The execution belongs to the team that ran it.
    expect((await call(svc, 'GET', `/v1/execution/${ran.json.execution_id}/status`, { key: svc.keys.other.read })).status).toBe(200);
    expect((await call(svc, 'GET', `/v1/execution/${ran.json.execution_id}/status`, { key: svc.keys.demo.read })).status).toBe(404);
    const patch = await call(svc, 'PATCH', `/v1/query/${pub.json.query_id}`, { key: other, body: { name: 'mine' } });
    expect(patch.status).toBe(403);
    expect(patch.json.error).toMatch(/belongs to team demo/);
  });
});
