// The official TypeScript client of the real service, unmodified, pointed at our service. It has no
// option for the base URL or the key header, so one fetch shim in this file changes exactly those
// (the URL's origin, `x-dune-api-key` -> `X-Service-Api-Key`, and back for the CSV paging headers),
// as a user would. Every public call of the client is tried: those of our contract must pass,
// those the service does not offer must get a clean 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CSV_NEXT_OFFSET_HEADER, CSV_NEXT_URI_HEADER } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { LONG_SQL } from '../service/api.ts';

const require = createRequire(import.meta.url);
// The CommonJS build is what `require` / Node's default resolution hands a user.
const sdk = require('@duneanalytics/client-sdk') as any;
const log = require(require.resolve('loglevel', { paths: [require.resolve('@duneanalytics/client-sdk')] })) as { setLevel(l: string): void };

const REAL_BASE = 'https://api.dune.com/api';
const THEIR_CSV_HEADERS: Record<string, string> = { [CSV_NEXT_URI_HEADER]: 'x-dune-next-uri', [CSV_NEXT_OFFSET_HEADER]: 'x-dune-next-offset' };

let svc: TestService;
let dir: string;
let client: any;
const realFetch = globalThis.fetch;
/** Every request the client sent: method and path with query. */
const sent: { method: string; path: string; body: string | undefined }[] = [];

beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'sluice-official-'));
  log.setLevel('silent');
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = String(input).replace(REAL_BASE, svc.url);
    const headers = new Headers(init?.headers);
    const key = headers.get('x-dune-api-key');
    headers.delete('x-dune-api-key');
    if (key !== null) headers.set('x-service-api-key', key);
    const u = new URL(url);
    sent.push({ method: init?.method ?? 'GET', path: u.pathname + u.search, body: typeof init?.body === 'string' ? init.body : undefined });
    const res = await realFetch(url, { ...init, headers });
    const out = new Headers(res.headers);
    for (const [ours, theirs] of Object.entries(THEIR_CSV_HEADERS)) {
      const v = res.headers.get(ours);
      if (v !== null) out.set(theirs, v);
    }
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
  };
  client = new sdk.DuneClient(svc.keys.demo.admin);
});

afterAll(async () => {
  globalThis.fetch = realFetch;
  await svc?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const FAST = { pingFrequency: 0.01 };
const SQL = `SELECT i, {{who}} AS who, 'v' || i AS "x""y" FROM range(5) t(i) ORDER BY i`;
const P = () => [sdk.QueryParameter.text('who', 'Plain Text')];

async function newQuery(name = 'official client'): Promise<number> {
  return client.query.createQuery({ name, query_sql: SQL, query_parameters: P() });
}

async function finishedExecution(queryId: number): Promise<string> {
  const status = await client.refreshResults(queryId, { query_parameters: P() }, 0.01);
  expect(status.state).toBe('QUERY_STATE_COMPLETED');
  return status.execution_id;
}

/** The calls of our contract: each must pass, and checks what it got. */
const CONTRACT: Record<string, () => Promise<void>> = {
  'query.createQuery': async () => {
    const id = await newQuery();
    expect(sent.at(-1)).toMatchObject({ method: 'POST', path: '/api/v1/query/' });
    const q = await client.query.readQuery(id);
    expect(q.parameters).toEqual([{ key: 'who', type: 'text', value: 'Plain Text' }]);
  },
  'query.readQuery': async () => {
    const q = await client.query.readQuery(await newQuery('read me'));
    expect(q).toMatchObject({ name: 'read me', query_sql: SQL, is_private: false });
  },
  'query.updateQuery': async () => {
    const id = await newQuery();
    expect(await client.query.updateQuery(id, { name: 'renamed', query_parameters: [sdk.QueryParameter.text('who', 'B')] })).toBe(id);
    expect(await client.query.readQuery(id)).toMatchObject({ name: 'renamed', parameters: [{ key: 'who', type: 'text', value: 'B' }] });
  },
  'query.archiveQuery': async () => expect(await client.query.archiveQuery(await newQuery())).toBe(true),
  'query.unarchiveQuery': async () => {
    const id = await newQuery();
    await client.query.archiveQuery(id);
    expect(await client.query.unarchiveQuery(id)).toBe(false);
  },
  'query.makePrivate': async () => {
    const id = await newQuery();
    expect(await client.query.makePrivate(id)).toBe(id);
  },
  'query.makePublic': async () => {
    const id = await newQuery();
    await client.query.makePrivate(id);
    expect(await client.query.makePublic(id)).toBe(id);
  },
  'exec.executeQuery': async () => {
    const r = await client.exec.executeQuery(await newQuery(), { query_parameters: P() });
    expect(r).toMatchObject({ state: 'QUERY_STATE_PENDING' });
    expect(r.execution_id).toMatch(/^01[0-9A-Z]{24}$/);
  },
  'exec.executeSql': async () => {
    const r = await client.exec.executeSql({ sql: 'SELECT 1 AS one' });
    expect(r.execution_id).toHaveLength(26);
  },
  'exec.cancelExecution': async () => {
    const { execution_id } = await client.exec.executeSql({ sql: LONG_SQL });
    expect(await client.exec.cancelExecution(execution_id)).toBe(true);
  },
  'exec.getExecutionStatus': async () => {
    const id = await finishedExecution(await newQuery());
    expect(await client.exec.getExecutionStatus(id)).toMatchObject({ execution_id: id, is_execution_finished: true });
  },
  'exec.getExecutionResults': async () => {
    const id = await finishedExecution(await newQuery());
    const r = await client.exec.getExecutionResults(id, { limit: 2, offset: 1, filters: 'i >= 1', sort_by: 'i desc', columns: ['x"y', 'i'] });
    expect(r.result.metadata.column_names).toEqual(['x"y', 'i']);
    expect(r.result.rows).toEqual([
      { 'x"y': 'v3', i: 3 },
      { 'x"y': 'v2', i: 2 },
    ]);
    expect(sent.at(-1)?.path).toContain('columns=%22x%5C%22y%22%2Ci');
  },
  'exec.getResultCSV': async () => {
    const id = await finishedExecution(await newQuery());
    const r = await client.exec.getResultCSV(id, { limit: 2 });
    expect(r.data).toBe('i,who,"x""y"\n0,Plain Text,v0\n1,Plain Text,v1\n');
    expect(r.next_offset).toBe(2);
  },
  'exec.getLastExecutionResults': async () => {
    const q = await newQuery();
    await finishedExecution(q);
    const { results, isExpired } = await client.exec.getLastExecutionResults(q, { limit: 2, query_parameters: P() });
    expect(isExpired).toBe(false);
    expect(results.result.rows.map((r: any) => r.i)).toEqual([0, 1, 2, 3, 4]);
  },
  'exec.getLastResultCSV': async () => {
    const q = await newQuery();
    await finishedExecution(q);
    const r = await client.exec.getLastResultCSV(q, { limit: 2, query_parameters: P() });
    expect(r.data.split('\n').filter(Boolean)).toHaveLength(6);
  },
  'exec.execute (deprecated)': async () => {
    const r = await client.exec.execute(await newQuery(), P());
    expect(r.state).toBe('QUERY_STATE_PENDING');
  },
  'exec.getStatus (deprecated)': async () => {
    const id = await finishedExecution(await newQuery());
    expect((await client.exec.getStatus(id)).state).toBe('QUERY_STATE_COMPLETED');
  },
  'exec.getResult (deprecated)': async () => {
    const id = await finishedExecution(await newQuery());
    expect((await client.exec.getResult(id)).result.rows).toHaveLength(5);
  },
  runQuery: async () => {
    const r = await client.runQuery({ queryId: await newQuery(), query_parameters: P(), columns: ['x"y'], opts: FAST });
    expect(r.result.rows[0]).toEqual({ 'x"y': 'v0' });
    // The client repeats the parameters on the results of the execution.
    expect(sent.at(-1)?.path).toMatch(/^\/api\/v1\/execution\/01\w+\/results\?.*params\.who=Plain\+Text/);
  },
  runQueryCSV: async () => {
    const r = await client.runQueryCSV({ queryId: await newQuery(), query_parameters: P(), opts: { ...FAST, batchSize: 2 } });
    expect(r.data.split('\n').filter(Boolean)).toHaveLength(6);
  },
  getLatestResult: async () => {
    const q = await newQuery();
    await finishedExecution(q);
    const r = await client.getLatestResult({ queryId: q, query_parameters: P(), opts: { batchSize: 2 } });
    expect(r.result.rows).toHaveLength(5);
  },
  downloadCSV: async () => {
    const q = await newQuery();
    await finishedExecution(q);
    const file = join(dir, 'out.csv');
    await client.downloadCSV({ queryId: q, query_parameters: P() }, file);
    expect((await readFile(file, 'utf8')).split('\n')[0]).toBe('i,who,"x""y"');
  },
  runSql: async () => {
    const r = await client.runSql({ query_sql: 'SELECT 2 AS two', archiveAfter: true, opts: FAST });
    expect(r.result.rows).toEqual([{ two: 2 }]);
  },
  refreshResults: async () => {
    expect((await client.refreshResults(await newQuery(), { query_parameters: P() }, 0.01)).state).toBe('QUERY_STATE_COMPLETED');
  },
  'refresh (deprecated)': async () => {
    const r = await client.refresh(await newQuery(), P(), 0.01);
    expect(r.result.rows).toHaveLength(5);
  },
  'uploads.uploadCsv': async () => {
    expect(await client.uploads.uploadCsv({ table_name: 'official_upload', data: 'a,b\n1,2\n', description: 'd', is_private: false })).toBe(true);
  },
  'table.uploadCsv (deprecated)': async () => {
    expect(await client.table.uploadCsv({ table_name: 'official_table', data: 'a\n1\n', description: 'd', is_private: false })).toBe(true);
  },
  'usage.getUsage': async () => {
    const usage = await client.usage.getUsage();
    expect(usage).toMatchObject({ private_dashboards: 0, bytes_allowed: 1_048_576 });
    expect(typeof usage.private_queries).toBe('number');
    expect(typeof usage.bytes_used).toBe('number');
    expect(usage.billing_periods).toHaveLength(1);
    expect(usage.billing_periods[0]).toMatchObject({ credits_included: 10_000 });
    expect(typeof usage.billing_periods[0]!.credits_used).toBe('number');
  },
  'uploads.create': async () => {
    const r = await client.uploads.create({ namespace: 'demo', table_name: 'ts_made', schema: [{ name: 'a', type: 'varchar' }, { name: 'n', type: 'bigint', nullable: false }] });
    expect(r).toMatchObject({ namespace: 'demo', table_name: 'ts_made', full_name: 'service.demo.ts_made', already_existed: false });
  },
  'uploads.insert': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_ins', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.uploads.insert({ namespace: 'demo', table_name: 'ts_ins', data: Buffer.from('a\nx\ny\n'), content_type: 'text/csv' })).toMatchObject({ rows_written: 2, bytes_written: 6 });
  },
  'uploads.clear': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_clr', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.uploads.clear({ namespace: 'demo', table_name: 'ts_clr' })).toMatchObject({ message: expect.stringContaining('service.demo.ts_clr') });
  },
  'uploads.delete': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_del', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.uploads.delete({ namespace: 'demo', table_name: 'ts_del' })).toMatchObject({ message: expect.stringContaining('service.demo.ts_del') });
  },
  'uploads.list': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_lst', schema: [{ name: 'a', type: 'varchar' }] });
    expect((await client.uploads.list({})).tables.map((t: any) => t.full_name)).toContain('service.demo.ts_lst');
  },
  'table.create (deprecated)': async () => {
    expect(await client.table.create({ namespace: 'demo', table_name: 'ts_old', schema: [{ name: 'a', type: 'varchar' }] })).toMatchObject({ full_name: 'service.demo.ts_old' });
  },
  'table.insert (deprecated)': async () => {
    await client.table.create({ namespace: 'demo', table_name: 'ts_old_ins', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.table.insert({ namespace: 'demo', table_name: 'ts_old_ins', data: Buffer.from('{"a":"x"}\n'), content_type: 'application/x-ndjson' })).toMatchObject({ rows_written: 1 });
  },
  'table.delete (deprecated)': async () => {
    await client.table.create({ namespace: 'demo', table_name: 'ts_old_del', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.table.delete({ namespace: 'demo', table_name: 'ts_old_del' })).toMatchObject({ message: expect.any(String) });
  },
  'dataset.list': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_ds', schema: [{ name: 'a', type: 'varchar' }] });
    const r = await client.dataset.list({ owner_handle: 'demo' });
    expect(r.datasets.map((d: any) => d.full_name)).toContain('service.demo.ts_ds');
    expect(r.total).toBe(r.datasets.length);
  },
  'dataset.getBySlug': async () => {
    await client.uploads.create({ namespace: 'demo', table_name: 'ts_slug', schema: [{ name: 'a', type: 'varchar' }] });
    expect(await client.dataset.getBySlug('service.demo.ts_slug')).toMatchObject({ type: 'uploaded_table', full_name: 'service.demo.ts_slug', columns: [{ name: 'a', type: 'varchar', nullable: true }] });
  },
};

/** Calls of operations our service does not offer (outside the contract): a clean 404 each. */
const OUTSIDE: Record<string, () => Promise<unknown>> = {
  'exec.executeQueryPipeline': async () => client.exec.executeQueryPipeline(1),
  'pipeline.getPipelineStatus': async () => client.pipeline.getPipelineStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV'),
  'custom.getResults': async () => client.custom.getResults({ handle: 'h', slug: 's' }),
};

describe('the official TypeScript client, unmodified, against the service', () => {
  for (const [name, run] of Object.entries(CONTRACT)) it(`${name} passes`, run, 20_000);

  for (const [name, run] of Object.entries(OUTSIDE)) {
    it(`${name} (not an operation of ours) gets a 404 with a JSON error`, async () => {
      await expect(run()).rejects.toThrow(/Status: 404, Message: \{"error":/);
    });
  }

  it('every public call of the client is in one of the two lists', () => {
    const protoOf = (o: object) => Object.getOwnPropertyNames(Object.getPrototypeOf(o)).filter((m) => m !== 'constructor' && !m.startsWith('_') && m !== 'post' && m !== 'url' && m !== 'buildCSVResponse');
    const all = [
      ...protoOf(client).map((m) => m),
      ...['exec', 'query', 'table', 'custom', 'usage', 'pipeline', 'dataset', 'uploads'].flatMap((api) => protoOf(client[api]).map((m) => `${api}.${m}`)),
    ];
    const listed = [...Object.keys(CONTRACT), ...Object.keys(OUTSIDE)].map((n) => n.replace(/ \(.*\)$/, ''));
    expect(all.filter((m) => !listed.includes(m))).toEqual([]);
    expect(Object.keys(CONTRACT)).toHaveLength(38);
    expect(all).toHaveLength(41);
  });
});
