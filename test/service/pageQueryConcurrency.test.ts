// Pages of a result not encoded (yet) are built by a query each, on the engine's files instance,
// which has a quarter of memory_limit. Readers fetching several full pages at once must all be
// served: page queries wait their turn instead of failing for memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runSql } from './api.ts';
import { pageSlotCount } from '../../src/service/engine/memory/pageSlots.ts';
import { Gate } from '../../src/service/engine/memory/gate.ts';

// A million rows: 32 full pages; at 250,000 the page queries fit together and the test proves nothing.
const ROWS = 1_000_000;
const PAGE = 31_250;
let svc: TestService;
beforeAll(async () => {
  // The default engine block (256 MiB, a quarter for the files instance); no encodings before reads.
  svc = await startTestService({ sampleRows: ROWS, encodeMinBytes: 0, engine: { encode_results: 'when_idle' } });
}, 120_000);
afterAll(async () => {
  await svc?.close();
});

async function fetchPage(id: string, offset: number, arrow: boolean): Promise<{ status: number; rows: number; text: string }> {
  const res = await request(`${svc.url}/v1/execution/${id}/results?offset=${offset}&limit=${PAGE}`, {
    headers: { 'x-service-api-key': svc.keys.demo.read, accept: arrow ? ARROW_STREAM_MEDIA_TYPE : 'application/json' },
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200 || arrow) return { status: res.statusCode, rows: -1, text: body.toString().slice(0, 300) };
  const page = JSON.parse(body.toString()) as { result: { rows: unknown[] } };
  return { status: res.statusCode, rows: page.result.rows.length, text: '' };
}

describe('page queries under concurrency', () => {
  it('every page of a million rows at once, JSON and Arrow, is served', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
    const offsets = Array.from({ length: ROWS / PAGE }, (_, i) => i * PAGE);
    const answers = await Promise.all([...offsets.map((o) => fetchPage(id, o, false)), ...offsets.map((o) => fetchPage(id, o, true))]);
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(answers.slice(0, offsets.length).map((a) => a.rows)).toEqual(offsets.map(() => PAGE));
  }, 180_000);
});

describe('the generated sample', () => {
  it('a million rows of sample.events are stored in id order (generated without a sort, over several row groups)', async () => {
    const id = await runSql(svc, 'SELECT count(*) FILTER (WHERE id <> rn) AS off, count(*) AS n FROM (SELECT id, row_number() OVER () - 1 AS rn FROM sample.events)');
    const res = await request(`${svc.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': svc.keys.demo.read } });
    const page = (await res.body.json()) as { result: { rows: Array<{ off: number; n: number }> } };
    expect(page.result.rows).toEqual([{ off: 0, n: ROWS }]);
  }, 60_000);
});

describe('page slots', () => {
  it('as many as the files instance memory holds, at least one, at most four', () => {
    expect(pageSlotCount('64.0 MiB')).toBe(2);
    expect(pageSlotCount('67108864B')).toBe(2);
    expect(pageSlotCount('16.0 MiB')).toBe(1);
    expect(pageSlotCount('4.0 GiB')).toBe(4);
    expect(pageSlotCount(undefined)).toBe(4);
  });

  it('waiters are served first come first served, and a release counts once', async () => {
    const slots = Gate.weighted(1);
    const order: number[] = [];
    const first = await slots.enter(1);
    const waiting = [1, 2].map((n) => slots.enter(1).then((release) => (order.push(n), release)));
    first();
    first();
    const r1 = await waiting[0]!;
    expect(order).toEqual([1]);
    r1();
    const r2 = await waiting[1]!;
    expect(order).toEqual([1, 2]);
    r2();
    // One slot again, not three: the double release of `first` gave back one.
    const a = await slots.enter(1);
    let second = false;
    void slots.enter(1).then(() => (second = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(second).toBe(false);
    a();
  });
});
