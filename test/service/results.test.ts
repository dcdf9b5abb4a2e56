import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultPageSchema } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, waitFor, executeSql } from './api.ts';

let svc: TestService;
let all: string; // 2000 rows x 8 columns of sample.events, ordered by id
let small: string; // 10 rows, 3 columns
const get = (path: string, query: Record<string, string | number> = {}) => call(svc, 'GET', path, { key: svc.keys.demo.read, query });

beforeAll(async () => {
  // 7 rows per page, and at most 20 datapoints per request (so 2 rows of 8 columns).
  svc = await startTestService({ limits: { page_rows: 7, datapoints_per_request: 20 } });
  all = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
  small = await runSql(svc, 'SELECT id, name, value FROM sample.events WHERE id < 10 ORDER BY id');
});
afterAll(() => svc?.close());

describe('JSON result pages', () => {
  it('serves a page with its metadata and the execution fields', async () => {
    const r = await get(`/v1/execution/${small}/results`, { limit: 3 });
    expect(r.status).toBe(200);
    expect(ResultPageSchema.safeParse(r.json).success).toBe(true);
    const p = r.json;
    expect(p.execution_id).toBe(small);
    expect(p.query_id).toBe(0);
    expect(p.state).toBe('QUERY_STATE_COMPLETED');
    expect(p.is_execution_finished).toBe(true);
    expect(p.result.rows).toEqual([
      { id: 0, name: 'event_0', value: expect.any(Number) },
      { id: 1, name: 'event_1', value: expect.any(Number) },
      { id: 2, name: 'event_2', value: expect.any(Number) },
    ]);
    const m = p.result.metadata;
    expect(m).toMatchObject({ column_names: ['id', 'name', 'value'], row_count: 3, total_row_count: 10, datapoint_count: 9 });
    expect(m.result_set_bytes).toBeLessThan(m.total_result_set_bytes);
    expect(p.next_offset).toBe(3);
    expect(p.next_uri).toBe(`${svc.origin}/api/v1/execution/${small}/results?limit=3&offset=3`);
    for (const f of ['cancelled_at', 'error', 'queue_position']) expect(p).not.toHaveProperty(f);
  });

  it('follows next_uri to the end; the rows equal a direct read, the last page has no next', async () => {
    const rows: unknown[] = [];
    let uri: string | undefined = `${svc.url}/v1/execution/${small}/results?limit=4`;
    let pages = 0;
    while (uri !== undefined) {
      const r = await call({ url: '' }, 'GET', uri, { key: svc.keys.demo.read });
      expect(r.status).toBe(200);
      rows.push(...r.json.result.rows);
      expect(r.json.result.rows.length).toBe(r.json.result.metadata.row_count);
      uri = r.json.next_uri;
      if (uri === undefined) expect(r.json).not.toHaveProperty('next_offset');
      pages++;
    }
    expect(pages).toBe(3);
    // The same rows as direct reads at offsets 0 and 7 (the page cap is 7).
    const first = await get(`/v1/execution/${small}/results`, { ignore_max_datapoints_per_request: 'true' });
    const second = await get(`/v1/execution/${small}/results`, { offset: 7, ignore_max_datapoints_per_request: 'true' });
    expect(first.json.result.rows).toHaveLength(7);
    expect(rows).toEqual([...first.json.result.rows, ...second.json.result.rows]);
    expect(rows).toHaveLength(10);
  });

  it('serves pages from the stored result: the query is never run again, not even when its table is gone', async () => {
    await runSql(svc, 'CREATE TABLE service.demo.volatile AS SELECT range AS i, random() AS r FROM range(9)');
    const id = await runSql(svc, 'SELECT i, r, random() AS again FROM service.demo.volatile ORDER BY i');
    const before = await get(`/v1/execution/${id}/results`, { limit: 5, offset: 4 });
    await runSql(svc, 'DROP TABLE service.demo.volatile');
    const after = await get(`/v1/execution/${id}/results`, { limit: 5, offset: 4 });
    expect(after.status).toBe(200);
    expect(after.json.result.rows.map((r: { i: number }) => r.i)).toEqual([4, 5, 6, 7, 8]);
    expect(after.json.result.rows).toEqual(before.json.result.rows);
    const first = await get(`/v1/execution/${id}/results`, { limit: 4 });
    expect([...first.json.result.rows, ...after.json.result.rows].map((r: { i: number }) => r.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // Reading is free: the execution's cost is what it was.
    expect((await call(svc, 'GET', `/v1/execution/${id}/status`, { key: svc.keys.demo.read })).json.execution_cost_credits).toBe(10);
  });

  it('lowers limit to the page cap and to the datapoint cap', async () => {
    // 8 columns, 20 datapoints: 2 rows.
    const capped = await get(`/v1/execution/${all}/results`, { limit: 100 });
    expect(capped.json.result.metadata.row_count).toBe(2);
    expect(capped.json.next_offset).toBe(2);
    // Lifting the datapoint cap leaves the page cap (7 rows).
    const paged = await get(`/v1/execution/${all}/results`, { limit: 100, ignore_max_datapoints_per_request: 'true' });
    expect(paged.json.result.metadata.row_count).toBe(7);
    expect(paged.json.next_uri).toContain('ignore_max_datapoints_per_request=true');
    // No limit: the cap.
    const dflt = await get(`/v1/execution/${all}/results`, { columns: 'id' });
    expect(dflt.json.result.metadata.row_count).toBe(7);
    expect(dflt.json.result.metadata.datapoint_count).toBe(7);
  });

  it('returns an empty page past the end', async () => {
    const r = await get(`/v1/execution/${small}/results`, { offset: 50 });
    expect(r.status).toBe(200);
    expect(r.json.result.rows).toEqual([]);
    expect(r.json.result.metadata.row_count).toBe(0);
    expect(r.json).not.toHaveProperty('next_offset');
    expect(r.json).not.toHaveProperty('next_uri');
  });

  it('selects columns, quoted names with commas included', async () => {
    const id = await runSql(svc, 'SELECT 1 AS "a,b", 2 AS "say ""hi""", 3 AS c');
    const r = await get(`/v1/execution/${id}/results`, { columns: '"a,b", c ,"say ""hi"""' });
    expect(r.status).toBe(200);
    expect(r.json.result.metadata.column_names).toEqual(['a,b', 'c', 'say "hi"']);
    expect(r.json.result.rows).toEqual([{ 'a,b': 1, c: 3, 'say "hi"': 2 }]);
    const bad = await get(`/v1/execution/${id}/results`, { columns: '"a,b' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/unterminated double quote/);
    const unknown = await get(`/v1/execution/${id}/results`, { columns: 'zzz' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatch(/zzz/);
  });

  it('filters, sorts, and repeats them in next_uri', async () => {
    const r = await get(`/v1/execution/${small}/results`, { filters: "id >= 2 AND name != 'event_5'", sort_by: 'id desc', limit: 3 });
    expect(r.status).toBe(200);
    expect(r.json.result.rows.map((x: { id: number }) => x.id)).toEqual([9, 8, 7]);
    const next = new URL(r.json.next_uri);
    expect(next.searchParams.get('filters')).toBe("id >= 2 AND name != 'event_5'");
    expect(next.searchParams.get('sort_by')).toBe('id desc');
    expect(next.searchParams.get('offset')).toBe('3');
    const rest = await call({ url: '' }, 'GET', r.json.next_uri, { key: svc.keys.demo.read });
    expect(rest.json.result.rows.map((x: { id: number }) => x.id)).toEqual([6, 4, 3]);
    const last = await call({ url: '' }, 'GET', rest.json.next_uri, { key: svc.keys.demo.read });
    expect(last.json.result.rows.map((x: { id: number }) => x.id)).toEqual([2]);
    expect(last.json).not.toHaveProperty('next_uri');
  });

  it('rejects a bad filter with the reason', async () => {
    for (const filters of ['id >', 'lower(name) = 1', 'NOT id = 1', 'nosuch = 1']) {
      const r = await get(`/v1/execution/${small}/results`, { filters });
      expect(r.status, filters).toBe(400);
      expect(r.json.error, filters).toMatch(/^Bad Request: /);
    }
    const sort = await get(`/v1/execution/${small}/results`, { sort_by: 'id sideways' });
    expect(sort.status).toBe(400);
  });

  it('samples, and refuses sample_count with limit, offset or filters', async () => {
    const r = await get(`/v1/execution/${all}/results`, { sample_count: 5, columns: 'id' });
    expect(r.status).toBe(200);
    expect(r.json.result.rows.length).toBeGreaterThan(0);
    expect(r.json.result.rows.length).toBeLessThanOrEqual(7);
    expect(r.json).not.toHaveProperty('next_offset');
    for (const extra of [{ limit: 3 }, { offset: 3 }, { filters: 'id = 1' }] as Record<string, string | number>[]) {
      const bad = await get(`/v1/execution/${all}/results`, { sample_count: 5, ...extra });
      expect(bad.status).toBe(400);
      expect(bad.json.error).toBe('Bad Request: sample_count cannot be combined with limit, offset or filters');
    }
  });

  it('refuses bad and unknown parameters', async () => {
    for (const [q, msg] of [
      [{ limit: 'ten' }, /limit/],
      [{ limit: 0 }, /limit/],
      [{ offset: -1 }, /offset/],
      [{ limit: '' }, /^Bad Request: limit must be a whole number of at least 1 \(digits only\), got ""$/],
      [{ limit: '0x10' }, /^Bad Request: limit must be a whole number of at least 1 \(digits only\), got "0x10"$/],
      [{ offset: '1e3' }, /^Bad Request: offset must be a whole number of at least 0 \(digits only\), got "1e3"$/],
      [{ sample_count: '0' }, /^Bad Request: sample_count must be a whole number of at least 1/],
      [{ allow_partial_results: 'yes' }, /allow_partial_results/],
      [{ lmit: 3 }, /unknown result parameter "lmit"/],
      [{ 'params.x': 1 }, /params.x: execution .* has no parameter "x" \(it has no parameters\); drop params.x/],
    ] as const) {
      const r = await get(`/v1/execution/${small}/results`, q);
      expect(r.status, JSON.stringify(q)).toBe(400);
      expect(r.json.error).toMatch(msg);
    }
  });

  it('keeps bigints beyond 2^53 exact on the wire', async () => {
    const id = await runSql(svc, 'SELECT 9007199254740993::BIGINT AS big');
    const r = await get(`/v1/execution/${id}/results`);
    expect(r.text).toContain('"big":9007199254740993');
  });
});

describe('CSV result pages', () => {
  it('pages through headers x-service-next-offset / x-service-next-uri', async () => {
    const r = await get(`/v1/execution/${small}/results/csv`, { limit: 4 });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^text\/csv/);
    const lines = r.text.trimEnd().split('\n');
    expect(lines[0]).toBe('id,name,value');
    expect(lines).toHaveLength(5);
    expect(r.headers['x-service-next-offset']).toBe('4');
    expect(r.headers['x-service-next-uri']).toBe(`${svc.origin}/api/v1/execution/${small}/results/csv?limit=4&offset=4`);
    const last = await get(`/v1/execution/${small}/results/csv`, { limit: 4, offset: 8 });
    expect(last.text.trimEnd().split('\n')).toHaveLength(3);
    expect(last.headers).not.toHaveProperty('x-service-next-offset');
    expect(last.headers).not.toHaveProperty('x-service-next-uri');
  });

  it('answers errors as JSON on CSV endpoints too', async () => {
    const r = await get(`/v1/execution/${small}/results/csv`, { filters: 'id >' });
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.json.error).toMatch(/^Bad Request/);
  });

  it("builds next_uri on the service's own origin, whatever the Host header says", async () => {
    const r = await call(svc, 'GET', `/v1/execution/${small}/results/csv`, { key: svc.keys.demo.read, query: { limit: 2 }, headers: { host: 'example.test:9999' } });
    expect(r.headers['x-service-next-uri']).toBe(`${svc.origin}/api/v1/execution/${small}/results/csv?limit=2&offset=2`);
  });
});

describe('partial results', () => {
  it('ends COMPLETED_PARTIAL over max_result_bytes; reading needs allow_partial_results=true', async () => {
    const local = await startTestService({ limits: { max_result_bytes: 2_000 } });
    try {
      const id = await executeSql(local, 'SELECT * FROM sample.events ORDER BY id', local.keys.demo.write);
      const s = await waitFor(local, id, undefined, local.keys.demo.read);
      expect(s.state).toBe('QUERY_STATE_COMPLETED_PARTIAL');
      expect(s.is_execution_finished).toBe(true);
      expect(s.result_metadata.total_result_set_bytes).toBeLessThanOrEqual(2_000);
      expect(s.result_metadata.total_row_count).toBeLessThan(2_000);
      const refused = await call(local, 'GET', `/v1/execution/${id}/results`, { key: local.keys.demo.read });
      expect(refused.status).toBe(400);
      expect(refused.json).toEqual({ error: "Partial Result, please request with 'allow_partial_results=true'" });
      const csvRefused = await call(local, 'GET', `/v1/execution/${id}/results/csv`, { key: local.keys.demo.read });
      expect(csvRefused.status).toBe(400);
      const ok = await call(local, 'GET', `/v1/execution/${id}/results`, { key: local.keys.demo.read, query: { allow_partial_results: 'true', limit: 5 } });
      expect(ok.status).toBe(200);
      expect(ok.json.state).toBe('QUERY_STATE_COMPLETED_PARTIAL');
      expect(ok.json.result.rows).toHaveLength(5);
      expect(ok.json.next_uri).toContain('allow_partial_results=true');
    } finally {
      await local.close();
    }
  });
});
