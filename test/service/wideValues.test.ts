// Values of any width are served, on every wire, by a service at its default memory (the files
// instance has 64 MiB): a page whose rows do not fit is served with fewer rows, one row that still
// does not fit is read alone with the engine's whole memory, and a row DuckDB cannot render even
// then (the JSON text of a 64 MB string) is made from its stored value. Each value is read back
// byte for byte, by following next_offset as a client pages.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { request } from 'undici';
import { tableFromIPC } from 'apache-arrow';
import { ARROW_STREAM_MEDIA_TYPE, CSV_NEXT_OFFSET_HEADER } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { executeSql, waitFor } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ sampleRows: 10 });
});
afterAll(() => svc?.close());

const MiB = 1024 * 1024;

/** Row i's value: `size` bytes of a letter of its own, then the row number. */
const textOf = (size: number, i: number): string => String.fromCharCode(97 + i).repeat(size) + String(i);
const sqlOf = (size: number, rows: number, blob: boolean): string =>
  Array.from({ length: rows }, (_, i) => `SELECT ${i} AS i, (repeat(chr(${97 + i}), ${size}) || '${i}')${blob ? '::BLOB' : ''} AS v`).join(' UNION ALL ');

async function get(path: string, offset: number, accept: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  const res = await request(`${svc.url}${path}?offset=${offset}`, { headers: { 'x-service-api-key': svc.keys.demo.read, accept } });
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

/** Every row's `v` as text (blob: 0x + hex), by paging through the result in `format`. */
async function readAll(id: string, format: 'json' | 'csv' | 'arrow'): Promise<{ values: string[]; pages: number }> {
  const values: string[] = [];
  let offset: number | undefined = 0;
  let pages = 0;
  while (offset !== undefined && pages < 20) {
    pages += 1;
    if (format === 'json') {
      const r = await get(`/v1/execution/${id}/results`, offset, 'application/json');
      expect(r.status, `${format} at ${offset}: ${r.body.subarray(0, 300).toString()}`).toBe(200);
      const page = JSON.parse(r.body.toString('utf8')) as { result: { rows: Array<{ v: string }> }; next_offset?: number };
      values.push(...page.result.rows.map((row) => row.v));
      offset = page.next_offset;
    } else if (format === 'csv') {
      const r = await get(`/v1/execution/${id}/results/csv`, offset, 'text/csv');
      expect(r.status, `${format} at ${offset}: ${r.body.subarray(0, 300).toString()}`).toBe(200);
      const lines = r.body.toString('utf8').split('\n').slice(1).filter((l) => l !== '');
      values.push(...lines.map((l) => l.slice(l.indexOf(',') + 1)));
      const next = r.headers[CSV_NEXT_OFFSET_HEADER];
      offset = next === undefined ? undefined : Number(next);
    } else {
      const r = await get(`/v1/execution/${id}/results`, offset, ARROW_STREAM_MEDIA_TYPE);
      expect(r.status, `${format} at ${offset}: ${r.body.subarray(0, 300).toString()}`).toBe(200);
      const column = tableFromIPC(r.body).getChild('v')!;
      for (const v of column.toArray() as Array<string | Uint8Array>) values.push(typeof v === 'string' ? v : `0x${Buffer.from(v).toString('hex')}`);
      const next = r.headers['x-service-next-offset'];
      offset = next === undefined ? undefined : Number(next);
    }
  }
  return { values, pages };
}

describe.each([
  { size: 1 * MiB, rows: 5 },
  { size: 8 * MiB, rows: 3 },
  { size: 64 * MiB, rows: 2 },
])('rows of $size-byte values', ({ size, rows }) => {
  for (const blob of [false, true]) {
    test(`${blob ? 'varbinary' : 'text'}: JSON, CSV and Arrow read back byte for byte`, async () => {
      const id = await executeSql(svc, sqlOf(size, rows, blob));
      const done = await waitFor(svc, id, (s) => s.is_execution_finished, svc.keys.demo.read, 240_000);
      expect(done.state, JSON.stringify(done.error)).toBe('QUERY_STATE_COMPLETED');
      const expected = Array.from({ length: rows }, (_, i) => (blob ? `0x${Buffer.from(textOf(size, i)).toString('hex')}` : textOf(size, i))).sort();
      for (const format of ['json', 'csv', 'arrow'] as const) {
        // UNION ALL without an ORDER BY (a sort would hold every value at once): rows in any order.
        const values = (await readAll(id, format)).values.sort();
        expect(values.length, format).toBe(rows);
        for (let i = 0; i < rows; i++) {
          // Compared without printing megabytes on a failure.
          expect(values[i]!.length, `${format} row ${i}`).toBe(expected[i]!.length);
          expect(values[i] === expected[i], `${format} row ${i}`).toBe(true);
        }
      }
    }, 300_000);
  }
});
