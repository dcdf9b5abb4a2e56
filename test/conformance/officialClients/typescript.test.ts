// The official TypeScript client (@duneanalytics/client-sdk, a devDependency), unmodified, over the
// shared case file against a service of its own. It has no option for the base URL or the key
// header: a fetch shim changes exactly those (and maps the CSV paging headers back), as a user would.
// (test/conformance/officialClient.test.ts tries every public call of the client one by one.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { CSV_NEXT_OFFSET_HEADER, CSV_NEXT_URI_HEADER } from '../../../src/protocol/index.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { CASES_FILE, loadCases, TS_NA, type CaseResult } from './runCases.ts';

const require = createRequire(import.meta.url);
const sdk = require('@duneanalytics/client-sdk') as any;
const log = require(require.resolve('loglevel', { paths: [require.resolve('@duneanalytics/client-sdk')] })) as { setLevel(l: string): void };
const REAL_BASE = 'https://api.dune.com/api';
const C = (JSON.parse(readFileSync(CASES_FILE, 'utf8')) as { constants: Record<string, any> }).constants;
const cases = loadCases();

let svc: TestService;
let client: any;
const realFetch = globalThis.fetch;
const state: Record<string, any> = {};
const TABLE = 't_typescript';
const check = (ok: boolean, what: unknown): void => {
  if (!ok) throw new Error(typeof what === 'string' ? what : JSON.stringify(what));
};
const P = (who: string) => [sdk.QueryParameter.text('who', who), sdk.QueryParameter.text('color', 'red')];
const FAST = { pingFrequency: 0.02 };
const full = `service.${C.namespace}.${TABLE}`;

async function sqlRows(sql: string): Promise<any[]> {
  return (await client.runSql({ query_sql: sql, archiveAfter: true, opts: FAST })).result.rows;
}

async function done(id: string): Promise<any> {
  for (let i = 0; i < 400; i++) {
    const s = await client.exec.getExecutionStatus(id);
    if (s.is_execution_finished) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the execution did not finish');
}

const CASES: Record<string, () => Promise<void>> = {
  create_query: async () => {
    state.q = await client.query.createQuery({ name: 'official typescript', query_sql: C.query_sql, query_parameters: P(C.who_default) });
    check(state.q > 0, `query_id ${state.q}`);
  },
  get_query: async () => {
    const q = await client.query.readQuery(state.q);
    check(q.name === 'official typescript' && q.query_sql === C.query_sql && q.parameters.length === 2, q);
  },
  update_query: async () => {
    await client.query.updateQuery(state.q, { name: 'renamed' });
    check((await client.query.readQuery(state.q)).name === 'renamed', 'renamed');
  },
  archive_query: async () => {
    check((await client.query.archiveQuery(state.q)) === true, 'archived');
    check((await client.query.unarchiveQuery(state.q)) === false, 'unarchived');
  },
  private_query: async () => {
    await client.query.makePrivate(state.q);
    check((await client.query.readQuery(state.q)).is_private === true, 'private');
    await client.query.makePublic(state.q);
    check((await client.query.readQuery(state.q)).is_private === false, 'public');
  },
  execute_query: async () => {
    const r = await client.exec.executeQuery(state.q, { query_parameters: P(C.who_value) });
    check(r.state === 'QUERY_STATE_PENDING' && r.execution_id.length === 26, r);
    state.e = r.execution_id;
    await done(state.e);
  },
  execute_sql: async () => check((await client.exec.executeSql({ sql: 'SELECT 1 AS one' })).execution_id.length === 26, 'id'),
  execution_status: async () => {
    const s = await client.exec.getExecutionStatus(state.e);
    check(s.state === 'QUERY_STATE_COMPLETED' && s.result_metadata.total_row_count === 5, s);
  },
  execution_results: async () => {
    const rows = (await client.exec.getExecutionResults(state.e, { limit: 2, offset: 1 })).result.rows;
    check(rows.map((r: any) => r.i).join() === '1,2' && rows[0].who === C.who_value, rows);
  },
  execution_results_csv: async () => {
    const lines = (await client.exec.getResultCSV(state.e)).data.trim().split('\n');
    check(lines[0] === 'i,who,color' && lines.length === 6, lines);
  },
  latest_results: async () => {
    const { results } = await client.exec.getLastExecutionResults(state.q, { query_parameters: P(C.who_value) });
    check(results.result.rows.length === 5, results);
  },
  latest_results_csv: async () => {
    const r = await client.exec.getLastResultCSV(state.q, { query_parameters: P(C.who_value) });
    check(r.data.trim().split('\n').length === 6, r.data);
  },
  cancel_execution: async () => {
    const { execution_id } = await client.exec.executeSql({ sql: C.long_sql });
    check((await client.exec.cancelExecution(execution_id)) === true, 'cancel');
    const s = await client.exec.getExecutionStatus(execution_id);
    check(s.state === 'QUERY_STATE_CANCELLED' && s.is_execution_finished === true && typeof s.cancelled_at === 'string', s);
  },
  run_query: async () => {
    const r = await client.runQuery({ queryId: state.q, query_parameters: P(C.who_value), opts: FAST });
    check(r.result.rows.length === 5, r);
  },
  run_sql: async () => {
    const rows = await sqlRows('SELECT 2 AS two');
    check(rows.length === 1 && rows[0].two === 2, rows);
  },
  compressed_results: async () => {
    const { execution_id } = await client.exec.executeSql({ sql: C.compressed_sql });
    await done(execution_id);
    const rows = (await client.exec.getExecutionResults(execution_id)).result.rows;
    check(rows.length === C.compressed_rows && rows.reduce((a: number, r: any) => a + r.id, 0) === C.compressed_id_sum, `${rows.length} rows`);
  },
  upload_csv: async () => check((await client.uploads.uploadCsv({ table_name: 'official_typescript', data: 'a,b\n1,2\n', description: '', is_private: false })) === true, 'upload'),
  usage: async () => {
    const u = await client.usage.getUsage();
    check(u.billing_periods.length === 1 && u.billing_periods[0].credits_included === 10_000, u);
  },
  create_table: async () => {
    const schema = [{ name: 'id', type: 'integer', nullable: false }, { name: 'name', type: 'varchar' }, { name: 'value', type: 'double', nullable: true }];
    const r = await client.uploads.create({ namespace: C.namespace, table_name: TABLE, schema });
    check(r.full_name === full && typeof r.example_query === 'string', r);
    state.example = r.example_query;
  },
  insert_csv: async () => {
    const r = await client.uploads.insert({ namespace: C.namespace, table_name: TABLE, data: Buffer.from(C.csv_rows), content_type: 'text/csv' });
    check(r.rows_written === 2 && r.bytes_written === Buffer.byteLength(C.csv_rows), r);
  },
  insert_ndjson: async () => {
    const r = await client.uploads.insert({ namespace: C.namespace, table_name: TABLE, data: Buffer.from(C.ndjson_rows), content_type: 'application/x-ndjson' });
    check(r.rows_written === 1, r);
  },
  query_uploaded: async () => {
    const rows = await sqlRows(state.example);
    check(rows.map((r) => r.id).sort().join() === '1,2,3' && rows.some((r) => r.value === null), rows);
  },
  list_uploads: async () => {
    const t = (await client.uploads.list({})).tables.filter((x: any) => x.full_name === full);
    check(t.length === 1 && Number(t[0].table_size_bytes) > 0, t);
  },
  list_datasets: async () => {
    const r = await client.dataset.list({ type: 'uploaded_table' });
    check(r.datasets.some((d: any) => d.full_name === full), r);
  },
  get_dataset: async () => {
    const d = await client.dataset.getBySlug(full);
    check(d.columns.map((c: any) => c.name).join() === 'id,name,value', d);
  },
  clear_table: async () => {
    await client.uploads.clear({ namespace: C.namespace, table_name: TABLE });
    check((await sqlRows(state.example)).length === 0, 'rows after clear');
  },
  delete_table: async () => {
    await client.uploads.delete({ namespace: C.namespace, table_name: TABLE });
    check(!(await client.uploads.list({})).tables.some((x: any) => x.full_name === full), 'still listed');
  },
};

describe('the official TypeScript client, unmodified, over the shared cases', () => {
  const results = new Map<string, CaseResult>();
  beforeAll(async () => {
    svc = await startTestService({ encodeMinBytes: 0 });
    log.setLevel('silent');
    globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      const key = headers.get('x-dune-api-key');
      headers.delete('x-dune-api-key');
      if (key !== null) headers.set('x-service-api-key', key);
      const res = await realFetch(String(input).replace(REAL_BASE, svc.url), { ...init, headers });
      const out = new Headers(res.headers);
      for (const [ours, theirs] of [[CSV_NEXT_URI_HEADER, 'x-dune-next-uri'], [CSV_NEXT_OFFSET_HEADER, 'x-dune-next-offset']] as const) {
        const v = res.headers.get(ours);
        if (v !== null) out.set(theirs, v);
      }
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
    };
    client = new sdk.DuneClient(svc.keys.demo.admin);
    for (const c of cases) {
      const fn = CASES[c.id];
      if (fn === undefined) {
        results.set(c.id, { case: c.id, status: 'n/a', detail: 'the client has no call for it' });
        continue;
      }
      try {
        await fn();
        results.set(c.id, { case: c.id, status: 'pass', detail: '' });
      } catch (err) {
        results.set(c.id, { case: c.id, status: 'fail', detail: String((err as Error).message) });
      }
    }
  }, 240_000);
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await svc?.close();
  });

  for (const c of cases) {
    const runs = !TS_NA.includes(c.id);
    it(`${c.id} (${c.endpoint}) ${runs ? 'passes' : 'is n/a: the client has no call for it'}`, () => {
      const r = results.get(c.id)!;
      expect({ status: r.status, detail: r.status === 'pass' ? '' : r.detail }).toEqual({ status: runs ? 'pass' : 'n/a', detail: runs ? '' : r.detail });
    });
  }
});
