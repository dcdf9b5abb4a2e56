// A result being read is never dropped by the result store's bound (limits.result_store_max_bytes):
// a page request in flight, or a reader paging through it (a lease, renewed by every page read
// that has a next page, ended by the read of the last one, lapsing after
// limits.result_read_lease_ms idle), keeps it; the store may exceed its bound meanwhile, and is
// bounded again once the reading ends.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, status } from './api.ts';

const BOUND = 2_500_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a result paged through slowly under a small result store', () => {
  let svc: TestService;
  // Each result: 5,000 rows of a 40-character text, about 1.8 MB stored with its encodings.
  const sql = (n: number): string => `SELECT i, repeat('${n}', 40) || i AS v FROM range(5000) t(i)`;
  beforeAll(async () => {
    svc = await startTestService({ limits: { result_store_max_bytes: BOUND, result_read_lease_ms: 60_000 } });
  });
  afterAll(() => svc?.close());

  const usageBytes = async (): Promise<number> => (await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json.result_store_bytes;

  test('every page of the first is served while another completes; the bound is restored once reading ends', async () => {
    const first = await runSql(svc, sql(1));
    let page = await call(svc, 'GET', `/v1/execution/${first}/results`, { key: svc.keys.demo.read, query: { limit: 500 } });
    expect(page.status).toBe(200);
    let next: number | undefined = page.json.next_offset;
    expect(next).toBe(500);

    // Another job's result is stored and read whole in every format (its encodings are written):
    // together they pass the bound, and the first is the one read least recently.
    const second = await runSql(svc, sql(2));
    for (const [path, accept] of [['results', 'application/json'], ['results/csv', 'text/csv'], ['results', ARROW_STREAM_MEDIA_TYPE]] as const) {
      expect((await call(svc, 'GET', `/v1/execution/${second}/${path}`, { key: svc.keys.demo.read, query: { limit: 5000 }, headers: { accept } })).status).toBe(200);
    }
    await svc.whenEncoded(second);
    // Give the bound time to run (it is not awaited by the read that grew the store).
    for (let i = 0; i < 20 && (await status(svc, first)).state === 'QUERY_STATE_COMPLETED'; i++) await sleep(50);
    // The first is kept, and the store exceeds its bound while it is read.
    expect((await status(svc, first)).state).toBe('QUERY_STATE_COMPLETED');
    expect(await usageBytes()).toBeGreaterThan(BOUND);

    // The first, paged through slowly: every page is still served, in order.
    let rows = 500;
    while (next !== undefined) {
      await sleep(100);
      page = await call(svc, 'GET', `/v1/execution/${first}/results`, { key: svc.keys.demo.read, query: { limit: 500, offset: next } });
      expect(page.status).toBe(200);
      expect(page.json.state).toBe('QUERY_STATE_COMPLETED');
      expect(page.json.result.rows[0]).toEqual({ i: next, v: `${'1'.repeat(40)}${next}` });
      rows += page.json.result.rows.length;
      next = page.json.next_offset;
    }
    expect(rows).toBe(5000);

    // Reading ended (both read to their last page: no lease is left to lapse): bounded again.
    const deadline = Date.now() + 20_000;
    let bytes = await usageBytes();
    while (bytes > BOUND && Date.now() < deadline) {
      await sleep(100);
      bytes = await usageBytes();
    }
    expect(bytes).toBeLessThanOrEqual(BOUND);
    // The second was read least recently: it went; the first, read last, stays.
    expect((await status(svc, second)).state).toBe('QUERY_STATE_EXPIRED');
    expect((await status(svc, first)).state).toBe('QUERY_STATE_COMPLETED');
  }, 120_000);
});
