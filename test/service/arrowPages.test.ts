// Arrow pages over HTTP: the same rows as the JSON pages, value by value, with the page metadata
// in headers; Accept negotiation; JSON wherever there is no result.
// Results are served the same whoever ran the SQL: these services do not wall teams apart
// (walledTeams: false saves each start the team instances; tenancy is tested in walls.http.test.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { RecordBatchReader, type RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE, parseArrowPageHeaders } from '../../src/protocol/index.ts';
import { arrowSchema } from '../../src/types/arrow.ts';
import { createBatchBuilder } from '../../src/types/batch.ts';
import { compileRowDecoder } from '../../src/types/decode.ts';
import { parseJsonLossless } from '../../src/types/json.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, LONG_SQL, runSql, waitRunning } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ walledTeams: false, limits: { page_rows: 1000 } });
});
afterAll(() => svc?.close());

interface ArrowAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  batches: RecordBatch[];
  text?: string;
}

async function getArrow(path: string, query: Record<string, string | number> = {}, accept = ARROW_STREAM_MEDIA_TYPE): Promise<ArrowAnswer> {
  const url = new URL(`${svc.url}${path}`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  const res = await request(url, { headers: { 'x-service-api-key': svc.keys.demo.read, accept } });
  const body = new Uint8Array(await res.body.arrayBuffer());
  if (!String(res.headers['content-type']).startsWith(ARROW_STREAM_MEDIA_TYPE)) {
    return { status: res.statusCode, headers: res.headers, batches: [], text: Buffer.from(body).toString('utf8') };
  }
  return { status: res.statusCode, headers: res.headers, batches: [...RecordBatchReader.from(body)] };
}

/** A comparable form of an Arrow value (bigints, decimals' words, nested rows and maps, NaN). */
function norm(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : v;
  if (v instanceof Date) return v.toISOString();
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number | bigint>, (x) => norm(x));
  if (typeof v === 'object' && v !== null && 'toArray' in v && typeof (v as { toArray: unknown }).toArray === 'function' && Symbol.iterator in v) {
    return Array.from(v as Iterable<unknown>, norm);
  }
  if (typeof v === 'object' && v !== null && 'toJSON' in v) return norm((v as { toJSON(): unknown }).toJSON());
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, norm(x)]));
  return v;
}

function rowsOf(batches: RecordBatch[]): unknown[][] {
  const out: unknown[][] = [];
  for (const b of batches) {
    for (let r = 0; r < b.numRows; r++) out.push(b.schema.fields.map((_, c) => norm(b.getChildAt(c)!.get(r))));
  }
  return out;
}

/** The JSON page as the connector turns it into Arrow (decode, then the batch builder). */
function jsonPageAsRows(page: any): unknown[][] {
  const columns = page.result.metadata.column_names.map((name: string, i: number) => ({ name, type: page.result.metadata.column_types[i] }));
  const decode = compileRowDecoder(columns, { timestamps: 'string' });
  const builder = createBatchBuilder(columns);
  page.result.rows.forEach((row: unknown, i: number) => builder.append(decode(row, i)));
  return rowsOf([builder.flush()]);
}

async function jsonPage(id: string, query: Record<string, string | number>): Promise<any> {
  const res = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read, query });
  expect(res.status).toBe(200);
  return parseJsonLossless(res.text);
}

describe('Arrow pages', () => {
  it('hold every page of sample.all_types, value by value as the JSON pages, with the connector schema and the page metadata in headers', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.all_types ORDER BY 1');
    for (const limit of [1, 2, 1000]) {
      for (let offset = 0; ; offset += limit) {
        const page = await jsonPage(id, { offset, limit });
        const arrow = await getArrow(`/v1/execution/${id}/results`, { offset, limit });
        expect(arrow.status).toBe(200);
        expect(arrow.batches.length).toBe(1);
        const m = page.result.metadata;
        const expected = arrowSchema(m.column_names.map((name: string, i: number) => ({ name, type: m.column_types[i] })));
        expect(arrow.batches[0]!.schema.fields.map(String)).toEqual(expected.fields.map(String));
        expect(arrow.batches[0]!.schema.fields.map((f) => [...f.metadata])).toEqual(expected.fields.map((f) => [...f.metadata]));
        expect(rowsOf(arrow.batches)).toEqual(jsonPageAsRows(page));
        const meta = parseArrowPageHeaders(arrow.headers);
        expect(meta.metadata).toEqual({ ...m, pending_time_millis: undefined, execution_time_millis: undefined, ...pick(meta.metadata) });
        expect(meta.next_offset).toBe(page.next_offset);
        expect(meta.next_uri).toBe(page.next_uri);
        expect(meta.state).toBe(page.state);
        expect(meta.expires_at).toBe(page.expires_at);
        if (page.next_offset === undefined) break;
      }
    }
  });

  it('whose rows are whole pre-encoded chunks are served from the encoding: the bytes of the page built per request, or one batch per chunk', async () => {
    // Chunks of 500 rows: 2,000 values a page at 4 columns; a page may hold 1,000 rows when the
    // datapoint cap is lifted, so a page can span two chunks.
    const own = await startTestService({ walledTeams: false, limits: { page_rows: 1000, datapoints_per_request: 2000 }, encodeMinBytes: 0 });
    try {
      const id = await runSql(own, `SELECT i, 'v' || i AS s, (i / 7)::DECIMAL(12, 3) AS d, TIMESTAMP '2026-01-01' + i * INTERVAL 1 SECOND AS t FROM range(1250) r(i) ORDER BY i`);
      await own.whenEncoded(id);
      const everyColumn = { columns: 'i,s,d,t' };
      const fetch = async (query: Record<string, string | number>): Promise<{ bytes: Uint8Array; batches: RecordBatch[]; headers: Record<string, unknown> }> => {
        const url = new URL(`${own.url}/v1/execution/${id}/results`);
        for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
        const res = await request(url, { headers: { 'x-service-api-key': own.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
        expect(res.statusCode).toBe(200);
        const bytes = new Uint8Array(await res.body.arrayBuffer());
        return { bytes, batches: [...RecordBatchReader.from(bytes)], headers: res.headers };
      };
      // Pages of one chunk (the last one short): byte for byte the page built per request
      // (naming every column takes that path), headers included.
      for (const offset of [0, 500, 1000]) {
        const encoded = await fetch({ offset });
        const built = await fetch({ offset, ...everyColumn });
        expect(Buffer.from(encoded.bytes).equals(Buffer.from(built.bytes))).toBe(true);
        const { next_uri: a, ...restEncoded } = parseArrowPageHeaders(encoded.headers as never);
        const { next_uri: b, ...restBuilt } = parseArrowPageHeaders(built.headers as never);
        expect(restEncoded).toEqual(restBuilt);
        expect(a === undefined).toBe(b === undefined);
      }
      // A page of two chunks is two batches (a page built per request is one), with the same values.
      const twoChunks = await fetch({ offset: 0, limit: 1000, ignore_max_datapoints_per_request: 'true' });
      expect(twoChunks.batches.map((b) => b.numRows)).toEqual([500, 500]);
      const built = await fetch({ offset: 0, limit: 1000, ignore_max_datapoints_per_request: 'true', ...everyColumn });
      expect(built.batches).toHaveLength(1);
      expect(rowsOf(twoChunks.batches)).toEqual(rowsOf(built.batches));
      expect(parseArrowPageHeaders(twoChunks.headers as never).metadata).toEqual(parseArrowPageHeaders(built.headers as never).metadata);
      // Not on a chunk: built per request, the same values as the JSON page.
      const odd = await fetch({ offset: 10, limit: 300 });
      expect(odd.batches).toHaveLength(1);
      expect(rowsOf(odd.batches)).toEqual(jsonPageAsRows(parseJsonLossless((await call(own, 'GET', `/v1/execution/${id}/results`, { key: own.keys.demo.read, query: { offset: 10, limit: 300 } })).text)));
    } finally {
      await own.close();
    }
  });

  it('holding a value its Arrow type cannot hold are 406 naming the column and value; the JSON pages serve it, from their encoding', async () => {
    const own = await startTestService({ walledTeams: false, encodeMinBytes: 0 });
    try {
      const id = await runSql(own, `SELECT i, CASE WHEN i = 3 THEN INTERVAL '0.000001 second' ELSE i * INTERVAL 1 SECOND END AS d FROM range(5) r(i) ORDER BY i`);
      await own.whenEncoded(id);
      const res = await request(`${own.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': own.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
      expect(res.statusCode).toBe(406);
      const body = (await res.body.json()) as { error: string; supported: string[] };
      // The connector's Arrow type for it is a duration in milliseconds.
      expect(body.error).toContain('column "d" (interval day to second), row 3 of the page: the value "0 00:00:00.000001"');
      expect(body.supported).toEqual(['application/json']);
      // Pages without that row are Arrow; the JSON page has the value, served from the encoding.
      expect((await request(`${own.url}/v1/execution/${id}/results?limit=3`, { headers: { 'x-service-api-key': own.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } })).statusCode).toBe(200);
      const json = await call(own, 'GET', `/v1/execution/${id}/results`, { key: own.keys.demo.read });
      expect(json.json.result.rows[3]).toEqual({ i: 3, d: '0 00:00:00.000001' });
      const enc = join(own.dataDir, 'engine', 'results', `${id}.enc`);
      await own.whenEncoded(id);
      expect(existsSync(join(enc, 'json', 'info.json'))).toBe(true);
      // The Arrow encoding stopped at that value and left nothing.
      expect(existsSync(join(enc, 'arrow'))).toBe(false);
    } finally {
      await own.close();
    }
  });

  it('follow filters, sort, columns and samples like the JSON pages', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id LIMIT 100');
    const queries: Array<Record<string, string | number>> = [{ filters: 'quantity > 50', sort_by: 'value desc', limit: 7 }, { columns: 'id,name', offset: 95 }, { sample_count: 5 }];
    for (const query of queries) {
      const page = await jsonPage(id, query);
      const arrow = await getArrow(`/v1/execution/${id}/results`, query);
      expect(rowsOf(arrow.batches)).toEqual(jsonPageAsRows(page));
      expect(parseArrowPageHeaders(arrow.headers).metadata.row_count).toBe(page.result.metadata.row_count);
    }
  });

  it('negotiate Accept with parameters and q values; 406 with what is supported otherwise', async () => {
    const id = await runSql(svc, 'SELECT 1 AS x');
    const path = `/v1/execution/${id}/results`;
    const arrow = async (accept: string) => (await getArrow(path, {}, accept));
    for (const accept of [`${ARROW_STREAM_MEDIA_TYPE}`, `${ARROW_STREAM_MEDIA_TYPE}; q=0.8, application/json; q=0.5`, `application/json;q=0, ${ARROW_STREAM_MEDIA_TYPE};version=1`, `application/json, ${ARROW_STREAM_MEDIA_TYPE}`]) {
      const r = await arrow(accept);
      expect(r.status, accept).toBe(200);
      expect(r.batches.length, accept).toBe(1);
    }
    for (const accept of ['application/json', '*/*', 'application/*', `${ARROW_STREAM_MEDIA_TYPE};q=0.4, application/json`, 'text/html, */*;q=0.1', `${ARROW_STREAM_MEDIA_TYPE};q=0, */*`]) {
      const r = await arrow(accept);
      expect(r.status, accept).toBe(200);
      expect(JSON.parse(r.text!).result.rows, accept).toEqual([{ x: 1 }]);
    }
    for (const accept of ['text/html', 'application/xml, text/plain;q=0.5', `${ARROW_STREAM_MEDIA_TYPE};q=0`, 'application/json;q=abc', 'nonsense']) {
      const r = await arrow(accept);
      expect(r.status, accept).toBe(406);
      const body = JSON.parse(r.text!);
      expect(body.error).toMatch(/Not Acceptable/);
      expect(body.supported).toEqual(['application/json', ARROW_STREAM_MEDIA_TYPE]);
    }
    // CSV pages stay CSV whatever the Accept says.
    const csv = await call(svc, 'GET', `${path}/csv`, { key: svc.keys.demo.read, headers: { accept: ARROW_STREAM_MEDIA_TYPE } });
    expect(csv.text).toBe('x\n1\n');
  });

  it('answer the JSON answer wherever there is no result: running, failed, unknown, bad parameters', async () => {
    const running = await executeSql(svc, LONG_SQL);
    await waitRunning(svc, running);
    const r1 = await getArrow(`/v1/execution/${running}/results`);
    expect(r1.status).toBe(200);
    expect(JSON.parse(r1.text!).state).toMatch(/PENDING|EXECUTING/);
    await call(svc, 'POST', `/v1/execution/${running}/cancel`, { key: svc.keys.demo.write });
    const failed = await executeSql(svc, 'SELECT * FROM no_such_table');
    await new Promise((r) => setTimeout(r, 50));
    const r2 = await getArrow(`/v1/execution/${failed}/results`);
    expect(r2.headers['content-type']).toMatch(/^application\/json/);
    const ok = await runSql(svc, 'SELECT 1 AS x');
    const bad: Array<Record<string, string | number>> = [{ offset: -1 }, { limit: 'abc' }, { limit: 0 }, { offset: '1e3' }];
    for (const query of bad) {
      const r = await getArrow(`/v1/execution/${ok}/results`, query);
      expect(r.status, JSON.stringify(query)).toBe(400);
      expect(JSON.parse(r.text!).error, JSON.stringify(query)).toMatch(/offset|limit/);
    }
    const past = await getArrow(`/v1/execution/${ok}/results`, { offset: 5 });
    expect(past.status).toBe(200);
    expect(past.batches[0]!.numRows).toBe(0);
    expect(parseArrowPageHeaders(past.headers).next_offset).toBeUndefined();
    const unknown = await getArrow('/v1/execution/01ARZ3NDEKTSV4RRFFQ69G5FAV/results');
    expect(unknown.status).toBe(404);
  });
});

/**
 * Columns of the types Arrow pages copy from DuckDB's vectors in bulk (arrowColumns.ts), with
 * extremes, NULLs at odd rows, texts inline (<= 12 bytes) and not, and a leading U+FEFF.
 */
const VECTOR_TYPES_SQL = `SELECT i,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS b,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 256 - 128)::TINYINT END AS ti,
  CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 37 % 65536 - 32768)::SMALLINT END AS si,
  CASE WHEN i = 1 THEN 2147483647 WHEN i = 2 THEN -2147483648 WHEN i % 5 = 0 THEN NULL ELSE (i * 7919)::INTEGER END AS ii,
  CASE WHEN i = 1 THEN 9223372036854775807 WHEN i = 2 THEN -9223372036854775808 WHEN i % 13 = 0 THEN NULL ELSE i * 1000000007 END AS bi,
  (i % 256)::UTINYINT AS ut, (i * 13 % 65536)::USMALLINT AS us, (CASE WHEN i = 3 THEN 4294967295 ELSE i * 104729 END)::UINTEGER AS ui,
  CASE WHEN i = 3 THEN 18446744073709551615::UBIGINT WHEN i % 9 = 0 THEN NULL ELSE (i * 1000003)::UBIGINT END AS ub,
  CASE i % 6 WHEN 0 THEN 'NaN'::REAL WHEN 1 THEN '-0.0'::REAL WHEN 2 THEN 'Infinity'::REAL WHEN 3 THEN NULL ELSE (i / 7.0)::REAL END AS r,
  CASE i % 5 WHEN 0 THEN '-Infinity'::DOUBLE WHEN 1 THEN '-0.0'::DOUBLE WHEN 2 THEN NULL ELSE i / 3.0 END AS d,
  CASE WHEN i % 10 = 0 THEN NULL ELSE ((i - 2500) / 100.0)::DECIMAL(4, 2) END AS d4,
  ((i - 2500) * 123.456)::DECIMAL(9, 3) AS d9,
  ((i - 2500) * 1234567.8901)::DECIMAL(18, 4) AS d18,
  CASE WHEN i = 4 THEN '9999999999999999999999999999.9999999999'::DECIMAL(38, 10) WHEN i = 5 THEN '-9999999999999999999999999999.9999999999'::DECIMAL(38, 10)
       WHEN i % 4 = 0 THEN NULL ELSE (i - 2500)::DECIMAL(38, 10) * 1000000000000 END AS d38,
  CASE WHEN i = 6 THEN DATE '9999-12-31' WHEN i = 8 THEN DATE '0001-01-01' WHEN i % 17 = 0 THEN NULL ELSE DATE '1970-01-01' + (i * 97 - 200000)::INTEGER END AS dt,
  CASE WHEN i = 6 THEN TIMESTAMP '9999-12-31 23:59:59.999999' WHEN i = 8 THEN TIMESTAMP '0001-01-01 00:00:00' WHEN i % 19 = 0 THEN NULL
       ELSE TIMESTAMP '1970-01-01' + to_microseconds(i * 123456789012 - 300000000000000) END AS ts,
  CASE WHEN i = 6 THEN TIMESTAMPTZ '9999-12-31 23:59:59.999999+00' WHEN i = 8 THEN TIMESTAMPTZ '0001-01-01 00:00:00+00' ELSE TIMESTAMPTZ '2026-01-01 00:00:00+00' - to_microseconds(i * 987654321) END AS tz,
  (CASE WHEN i = 6 THEN TIMESTAMP '9999-12-31 23:59:59.999' ELSE TIMESTAMP '2026-01-01' - to_milliseconds(i * 98765) END)::TIMESTAMP_MS AS tms,
  (CASE WHEN i = 8 THEN TIMESTAMP '0001-01-01 00:00:00' ELSE TIMESTAMP '2026-01-01' + to_seconds(i * 86399) END)::TIMESTAMP_S AS tse,
  CASE WHEN i = 6 THEN TIMESTAMP_NS '2262-04-10 23:59:59.999999999' WHEN i = 8 THEN TIMESTAMP_NS '1677-09-22 00:00:00.000000001'
       ELSE (TIMESTAMP '2026-01-01' + to_microseconds(i))::TIMESTAMP_NS END AS tns,
  CASE i % 8 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN 'short' WHEN 3 THEN 'twelve bytes' WHEN 4 THEN 'thirteen byte' WHEN 5 THEN chr(65279) || 'begins with U+FEFF'
       WHEN 6 THEN 'ünïcode 😀 ' || repeat('x', i % 50) ELSE 'a longer text of row ' || i::VARCHAR END AS v
FROM range(3000) r(i) ORDER BY i`;

describe('Arrow pages read from DuckDB\'s vectors', () => {
  let own: TestService;
  beforeAll(async () => {
    own = await startTestService({ walledTeams: false, limits: { page_rows: 5000, datapoints_per_request: 200_000 }, encodeMinBytes: 0 });
  });
  afterAll(() => own?.close());

  const fetchPages = async (id: string, query: Record<string, string | number>): Promise<{ status: number; bytes: Buffer; arrow: RecordBatch[]; text: string; json: any }> => {
    const url = new URL(`${own.url}/v1/execution/${id}/results`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
    const res = await request(url, { headers: { 'x-service-api-key': own.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
    const body = new Uint8Array(await res.body.arrayBuffer());
    const arrow = res.statusCode === 200 ? [...RecordBatchReader.from(body)] : [];
    const json = await call(own, 'GET', `/v1/execution/${id}/results`, { key: own.keys.demo.read, query });
    expect(json.status).toBe(200);
    return { status: res.statusCode, bytes: Buffer.from(body), arrow, text: Buffer.from(body).toString('utf8'), json: parseJsonLossless(json.text) };
  };

  it('hold the values of the JSON pages: extremes, NULLs, texts inline and not, pages over several chunks and not on their boundaries', async () => {
    const id = await runSql(own, VECTOR_TYPES_SQL);
    await own.whenEncoded(id);
    const columns = { columns: (await fetchPages(id, { limit: 1 })).json.result.metadata.column_names.join(',') };
    for (const query of [{ offset: 0, limit: 3000 }, { offset: 7, limit: 2900 }, { offset: 2049, limit: 3 }, { offset: 2990, limit: 100 }]) {
      const page = await fetchPages(id, query);
      expect(page.status, JSON.stringify(query)).toBe(200);
      expect(rowsOf(page.arrow), JSON.stringify(query)).toEqual(jsonPageAsRows(page.json));
      // Every column named: built per request; the same bytes as the page (from the encoding for
      // the first, a whole chunk).
      const built = await fetchPages(id, { ...query, ...columns });
      expect(built.bytes.equals(page.bytes), JSON.stringify(query)).toBe(true);
    }
  });

  it('of dates and timestamps outside years 1-9999 are built per value, with the values of the JSON pages; infinities are 406 as before', async () => {
    const id = await runSql(own, `SELECT i,
      CASE WHEN i = 4000 THEN DATE '10000-01-01' WHEN i = 4001 THEN DATE '-0001-06-01' ELSE DATE '2026-01-01' + i::INTEGER END AS dt,
      CASE WHEN i = 10 THEN TIMESTAMP '0000-06-01 12:00:00.5' ELSE TIMESTAMP '2026-01-01' + to_seconds(i) END AS ts,
      CASE WHEN i = 3000 THEN TIMESTAMPTZ 'infinity' ELSE TIMESTAMPTZ '2026-01-01 00:00:00+00' END AS tz,
      'x' || i AS v FROM range(5000) r(i) ORDER BY i`);
    for (const query of [{ offset: 0, limit: 2000 }, { offset: 3500, limit: 1500 }]) {
      const page = await fetchPages(id, query);
      expect(page.status, JSON.stringify(query)).toBe(200);
      expect(rowsOf(page.arrow)).toEqual(jsonPageAsRows(page.json));
    }
    const infinite = await fetchPages(id, { offset: 2000, limit: 1500 });
    expect(infinite.status).toBe(406);
    expect(JSON.parse(infinite.text).error).toContain('column "tz" (timestamp(6) with time zone), row 1000 of the page: the value "infinity UTC"');
  });
});

/** The timing fields the headers do not carry. */
function pick(m: Record<string, unknown>): Record<string, unknown> {
  return { pending_time_millis: m['pending_time_millis'], execution_time_millis: m['execution_time_millis'] };
}
