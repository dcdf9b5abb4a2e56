// limits.result_store_max_bytes: past it, the results read least recently expire early (the state
// EXPIRED, no result, as retention would leave them), the one used last is kept, and
// GET /v1/usage (sluice usage) shows the store's size and bound.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ResultStoreBound } from '../../src/service/limits/resultStore.ts';
import { ReadLeases } from '../../src/service/limits/readLeases.ts';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, status } from './api.ts';

describe('ResultStoreBound', () => {
  test('expires the least recently used until the rest fits, never the last used', async () => {
    const sizes = new Map([['a', 40], ['b', 40], ['c', 40], ['d', 100]]);
    const lastUsed: Record<string, number> = { a: 3, b: 1, c: 2, d: 4 };
    const expired: string[] = [];
    const bound = new ResultStoreBound(100, async () => new Map([...sizes].filter(([id]) => !expired.includes(id))), {
      held: () => Object.keys(lastUsed).filter((id) => !expired.includes(id)).map((id) => ({ id, lastUsed: lastUsed[id]! })),
      expire: async (id) => void expired.push(id),
    });
    expect(await bound.enforce()).toEqual(['b', 'c', 'a']);
    expect(bound.status()).toEqual({ bytes: 100, maxBytes: 100 });
    // Alone and over the bound: kept.
    expect(await bound.enforce()).toEqual([]);
    expect(await bound.measure()).toEqual({ bytes: 100, maxBytes: 100 });
  });
});

describe('ReadLeases', () => {
  test('a reader holds a result until it reads the last page; an unfollowed lease lapses; a request in flight holds it', () => {
    let now = 1_000;
    let released = 0;
    const leases = new ReadLeases(100, () => now);
    leases.onRelease(() => released++);
    leases.stored('a');
    expect(leases.held('a')).toBe(true);
    leases.paged('a', 0, 10);
    leases.paged('a', 10, 20);
    now += 99;
    expect(leases.held('a')).toBe(true);
    expect(leases.nextLapse(['a', 'b'])).toBe(1);
    // The last page: nothing is left to hold it.
    leases.paged('a', 20, undefined);
    expect(leases.held('a')).toBe(false);
    // A reader that stopped half-way: held until its lease lapses.
    leases.paged('b', 0, 10);
    now += 100;
    expect(leases.held('b')).toBe(false);
    // Pages fetched at once, answered out of order: the first, read after the second, takes no lease.
    leases.paged('c', 10, undefined);
    leases.paged('c', 0, 10);
    expect(leases.held('c')).toBe(false);
    // The same when the next page was read before this one's request even began (it waited for a slot).
    leases.paged('d', 20, 30);
    leases.paged('d', 30, undefined);
    leases.paged('d', 10, 20);
    expect(leases.held('d')).toBe(false);
    expect(leases.nextLapse(['b'])).toBeUndefined();
    // In flight, whatever the leases; the end is told once.
    const end = leases.begin('b');
    expect(leases.held('b')).toBe(true);
    end();
    end();
    expect(leases.held('b')).toBe(false);
    expect(released).toBe(1);
  });
});

describe('ResultStoreBound with results being read', () => {
  test('keeps them past the bound; drops them, least recently read first, once released or lapsed', async () => {
    const sizes = new Map([['a', 60], ['b', 60], ['c', 60]]);
    const lastUsed: Record<string, number> = { a: 1, b: 2, c: 3 };
    const expired: string[] = [];
    const held = new Set(['a', 'b']);
    let lapse: number | undefined = 20;
    const bound = new ResultStoreBound(
      100,
      async () => new Map([...sizes].filter(([id]) => !expired.includes(id))),
      {
        held: () => Object.keys(lastUsed).filter((id) => !expired.includes(id)).map((id) => ({ id, lastUsed: lastUsed[id]! })),
        expire: async (id) => void expired.push(id),
      },
      { held: (id) => held.has(id), nextLapse: () => lapse },
    );
    // Both older ones are being read, the newest is the last used: the store stays over its bound.
    expect(await bound.enforce()).toEqual([]);
    expect(bound.status()).toEqual({ bytes: 180, maxBytes: 100 });
    // The first lease lapses: the bound runs again by itself and drops what it may, the oldest first.
    held.delete('a');
    held.delete('b');
    lapse = undefined;
    const deadline = Date.now() + 5_000;
    while (bound.status().bytes > 100 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(expired).toEqual(['a', 'b']);
    expect(bound.status()).toEqual({ bytes: 60, maxBytes: 100 });
    await bound.close();
  });
});

describe('a service with a small result store', () => {
  let svc: TestService;
  // Each result: 5,000 rows of a 40-character text, about 1.8 MB stored with its encodings.
  const sql = (n: number): string => `SELECT i, repeat('${n}', 40) || i AS v FROM range(5000) t(i)`;
  beforeAll(async () => {
    svc = await startTestService({ limits: { result_store_max_bytes: 6_000_000 } });
  });
  afterAll(() => svc?.close());

  /** Runs the SQL and reads its result whole as JSON, CSV and Arrow: each format's encoding is written. */
  const runAndRead = async (n: number): Promise<string> => {
    const id = await runSql(svc, sql(n));
    for (const [path, accept] of [['results', 'application/json'], ['results/csv', 'text/csv'], ['results', ARROW_STREAM_MEDIA_TYPE]] as const) {
      expect((await call(svc, 'GET', `/v1/execution/${id}/${path}`, { key: svc.keys.demo.read, query: { limit: 5000 }, headers: { accept } })).status).toBe(200);
    }
    await svc.whenEncoded(id);
    return id;
  };

  test('expires the least recently read results first; their results answer EXPIRED; usage shows the store', async () => {
    const first = await runAndRead(1);
    const second = await runAndRead(2);
    // Read the first again: the second is now the least recently read.
    expect((await call(svc, 'GET', `/v1/execution/${first}/results`, { key: svc.keys.demo.read, query: { limit: 1 } })).status).toBe(200);
    await runAndRead(3);
    const fourth = await runAndRead(4);
    const deadline = Date.now() + 20_000;
    while ((await status(svc, second)).state !== 'QUERY_STATE_EXPIRED' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await status(svc, second)).state).toBe('QUERY_STATE_EXPIRED');
    expect((await status(svc, fourth)).state).toBe('QUERY_STATE_COMPLETED');
    const page = await call(svc, 'GET', `/v1/execution/${second}/results`, { key: svc.keys.demo.read });
    expect(page.status).toBe(200);
    expect(page.json.state).toBe('QUERY_STATE_EXPIRED');
    expect(page.json.result).toBeUndefined();
    // The bound is enforced after each result is stored, not awaited by its execution.
    let usage = await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin });
    while (usage.json.result_store_bytes > 6_000_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      usage = await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin });
    }
    expect(usage.json.result_store_max_bytes).toBe(6_000_000);
    expect(usage.json.result_store_bytes).toBeGreaterThan(0);
    expect(usage.json.result_store_bytes).toBeLessThanOrEqual(6_000_000);
    // The first was read after the second was stored: it outlives it.
    expect((await status(svc, first)).state).toBe('QUERY_STATE_COMPLETED');
  }, 120_000);

  test('encodings written by a first read count: the store is bounded again once they are written', async () => {
    // A result not read yet is held for result_read_lease_ms after it was stored (its job is about to read it): short here.
    const s = await startTestService({ limits: { result_store_max_bytes: 2_000_000, result_read_lease_ms: 300 } });
    try {
      const a = await runSql(s, sql(5));
      const b = await runSql(s, sql(6));
      // Both fit without their encodings.
      let usage = await call(s, 'GET', '/v1/usage', { key: s.keys.demo.admin });
      expect(usage.json.result_store_bytes).toBeLessThanOrEqual(2_000_000);
      expect((await status(s, a)).state).toBe('QUERY_STATE_COMPLETED');
      // Reading the first in every format writes its encodings: past the bound, the second (read
      // least recently, never) expires once its lease from being stored lapses, though no result
      // was stored since.
      for (const [path, accept] of [['results', 'application/json'], ['results/csv', 'text/csv'], ['results', ARROW_STREAM_MEDIA_TYPE]] as const) {
        expect((await call(s, 'GET', `/v1/execution/${a}/${path}`, { key: s.keys.demo.read, query: { limit: 5000 }, headers: { accept } })).status).toBe(200);
      }
      await s.whenEncoded(a);
      const deadline = Date.now() + 20_000;
      while ((await status(s, b)).state !== 'QUERY_STATE_EXPIRED' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await status(s, b)).state).toBe('QUERY_STATE_EXPIRED');
      expect((await status(s, a)).state).toBe('QUERY_STATE_COMPLETED');
      usage = await call(s, 'GET', '/v1/usage', { key: s.keys.demo.admin });
      expect(usage.json.result_store_bytes).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  }, 120_000);
});
