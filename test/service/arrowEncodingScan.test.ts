// The Arrow encoding of a result written from one scan of its table (encoding/arrowChunks.ts): the
// DuckDB chunks of the scan (2,048 rows) straddle the Arrow chunks (500 rows here), NULLs, texts
// inline and not, decimals; a value the vectors cannot take (a date outside years 1-9999) in the
// middle of the result ends the scan, and the chunks from there on are built per chunk. Every
// encoded page is the page built per request, byte for byte, and holds the JSON page's values.
import { request } from 'undici';
import { RecordBatchReader } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { parseJsonLossless } from '../../src/types/json.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  // 4 columns: chunks of 2,000 / 4 = 500 rows.
  svc = await startTestService({ limits: { page_rows: 1000, datapoints_per_request: 2000 }, encodeMinBytes: 0 });
});
afterAll(() => svc?.close());

const ROWS = 4600;
const CHUNK = 500;

async function arrowPage(id: string, query: Record<string, string | number>): Promise<Buffer> {
  const url = new URL(`${svc.url}/v1/execution/${id}/results`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  const res = await request(url, { headers: { 'x-service-api-key': svc.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
  const body = Buffer.from(await res.body.arrayBuffer());
  expect(res.statusCode, `${JSON.stringify(query)}: ${body.toString('utf8').slice(0, 200)}`).toBe(200);
  return body;
}

/** The page's rows as the Arrow reader gives them, in a comparable form. */
function arrowRows(bytes: Buffer): unknown[][] {
  const out: unknown[][] = [];
  for (const batch of RecordBatchReader.from(bytes)) {
    for (let r = 0; r < batch.numRows; r++) out.push(batch.schema.fields.map((_, c) => show(batch.getChildAt(c)!.get(r))));
  }
  return out;
}

const show = (v: unknown): unknown => (v === null || v === undefined ? null : typeof v === 'bigint' ? String(v) : v instanceof Date ? v.toISOString() : ArrayBuffer.isView(v) ? Array.from(v as Uint32Array) : v);

async function readAll(id: string): Promise<Buffer[]> {
  const pages: Buffer[] = [];
  for (let offset = 0; offset < ROWS; offset += CHUNK) pages.push(await arrowPage(id, { offset, limit: CHUNK }));
  return pages;
}

describe('the Arrow encoding from one scan', () => {
  for (const [label, dateSql] of [
    ['every value from the vectors', `DATE '2026-01-01' + i::INTEGER`],
    ['a date outside years 1-9999 in the fourth chunk (the rest built per chunk)', `CASE WHEN i = 1700 THEN DATE '10000-01-01' ELSE DATE '2026-01-01' + i::INTEGER END`],
  ] as const) {
    it(`${label}: every page is the page built per request, byte for byte`, async () => {
      const id = await runSql(
        svc,
        `SELECT CASE WHEN i % 7 = 3 THEN NULL ELSE i * 1000003 END AS i,
           CASE WHEN i % 11 = 5 THEN NULL WHEN i % 2 = 0 THEN 'short ' || i ELSE repeat('long text ', 3) || i END AS s,
           (i / 7)::DECIMAL(12, 3) AS d, ${dateSql} AS dt
         FROM range(${ROWS}) r(i) ORDER BY r.i`,
      );
      // The first read (encode_results: on_first_read) is served by the encoder as it writes.
      const first = await readAll(id);
      await svc.whenEncoded(id);
      const warm = await readAll(id);
      for (let k = 0; k < first.length; k++) {
        const offset = k * CHUNK;
        expect(warm[k]!.equals(first[k]!), `warm read at ${offset}`).toBe(true);
        // Every column named: built per request by a page query.
        const built = await arrowPage(id, { offset, limit: CHUNK, columns: 'i,s,d,dt' });
        expect(built.equals(first[k]!), `page at ${offset}`).toBe(true);
        const json = parseJsonLossless((await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read, query: { offset, limit: CHUNK } })).text) as {
          result: { rows: Array<Record<string, unknown>> };
        };
        const rows = arrowRows(first[k]!);
        expect(rows).toHaveLength(json.result.rows.length);
        // Spot checks against the JSON page: the integer, the text, the date's day (the Arrow value is UTC midnight).
        for (const r of [0, 1, Math.min(250, rows.length - 1), rows.length - 1]) {
          const want = json.result.rows[r]!;
          expect(rows[r]![0], `row ${offset + r}`).toBe(want['i'] === null ? null : String(want['i']));
          expect(rows[r]![1], `row ${offset + r}`).toBe(want['s']);
        }
      }
    });
  }
});
