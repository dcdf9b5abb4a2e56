import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { fetchOrdered, PageSequenceError, type FetchOrderedOptions } from '../../src/pipeline/fetchOrdered.ts';
import { seeded } from '../helpers/seeded.ts';
import { memorySource, type MemorySourceOptions } from './memorySource.ts';

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

async function collect(source: MemorySourceOptions, options: Partial<FetchOrderedOptions> & { pageSize: number }) {
  const { fetchPage, stats } = memorySource(source);
  const rows: number[] = [];
  for await (const { page, skip } of fetchOrdered(fetchPage, { start: 0, totalRows: source.total, ...options })) {
    stats.received++;
    rows.push(...page.rows.slice(skip));
  }
  return { rows, stats };
}

describe('fetchOrdered: order and completeness', () => {
  it.each([1, 3, 8])('yields every row once, in order, under random latency (concurrency %i)', async (concurrency) => {
    const random = seeded(concurrency);
    const { rows, stats } = await collect(
      { total: 1000, latency: () => Math.floor(random() * 6) },
      { pageSize: 37, concurrency },
    );
    expect(rows).toEqual(range(1000));
    expect(stats.calls.map((c) => c.offset)).toEqual(range(28).map((k) => k * 37));
    expect(stats.inFlight).toBe(0);
  });

  it('reads one empty page when the result is empty', async () => {
    const { rows, stats } = await collect({ total: 0 }, { pageSize: 10 });
    expect(rows).toEqual([]);
    expect(stats.calls).toEqual([{ offset: 0, limit: 10 }]);
  });

  it('starts at `start`, after a first page read elsewhere', async () => {
    const { fetchPage } = memorySource({ total: 50 });
    const rows: number[] = [];
    for await (const { page, skip } of fetchOrdered(fetchPage, { start: 20, pageSize: 20, totalRows: 50 })) rows.push(...page.rows.slice(skip));
    expect(rows).toEqual(range(30, 20));
  });

  it('fills the gap a short page leaves before the planned page after it', async () => {
    // The service answers 3 rows instead of 10 at offsets 10 and 40 (allowed before the end).
    const { rows, stats } = await collect(
      { total: 95, rowsAt: (offset) => (offset === 10 || offset === 40 ? 3 : undefined), latency: (r) => (r.offset === 10 ? 5 : 0) },
      { pageSize: 10, concurrency: 4 },
    );
    expect(rows).toEqual(range(95));
    const offsets = stats.calls.map((c) => `${c.offset}+${c.limit}`);
    expect(offsets).toContain('13+7');
    expect(offsets).toContain('43+7');
  });

  it('copes with a page cap below the page size asked for (every page short)', async () => {
    const { rows } = await collect({ total: 100, cap: 7 }, { pageSize: 10, concurrency: 3 });
    expect(rows).toEqual(range(100));
  });

  it('delivers no row twice when the service returns more rows than asked', async () => {
    const { rows } = await collect(
      { total: 100, rowsAt: (offset, limit) => (offset === 20 ? limit + 15 : undefined), latency: (r) => (r.offset === 20 ? 4 : 0) },
      { pageSize: 10, concurrency: 4 },
    );
    expect(rows).toEqual(range(100));
  });

  it('follows next_offset beyond a total_row_count that was too low', async () => {
    const { rows } = await collect({ total: 100 }, { pageSize: 10, totalRows: 45 });
    expect(rows).toEqual(range(100));
  });

  it('stops at the last page when total_row_count was too high', async () => {
    const { rows } = await collect({ total: 45 }, { pageSize: 10, totalRows: 100 });
    expect(rows).toEqual(range(45));
  });

  it('plans open-ended without total_row_count and ends at the page without next_offset', async () => {
    const { rows } = await collect({ total: 45 }, { pageSize: 10, totalRows: undefined, concurrency: 3 });
    expect(rows).toEqual(range(45));
  });

  it('asks for no page at or past endOffset, whatever the total and next_offset say', async () => {
    for (const totalRows of [100, 45, undefined]) {
      const { fetchPage, stats } = memorySource({ total: 100 });
      const rows: number[] = [];
      for await (const { page, skip } of fetchOrdered(fetchPage, { start: 20, pageSize: 10, totalRows, endOffset: 55, concurrency: 4 })) rows.push(...page.rows.slice(skip));
      // The last page is asked for up to the end only.
      expect(rows).toEqual(range(35, 20));
      expect(stats.calls.every((c) => c.offset + c.limit <= 55)).toBe(true);
      // A total too low (45) is planned up to, then next_offset is followed, up to the end.
      expect(stats.calls.map((c) => `${c.offset}+${c.limit}`)).toEqual(totalRows === 45 ? ['20+10', '30+10', '40+5', '45+10'] : ['20+10', '30+10', '40+10', '50+5']);
    }
  });

  it('fetches the gap of a short page up to endOffset only', async () => {
    const { rows, stats } = await collect({ total: 100, rowsAt: (offset) => (offset === 40 ? 3 : undefined) }, { pageSize: 10, endOffset: 50, concurrency: 2 });
    expect(rows).toEqual(range(50));
    expect(stats.calls.every((c) => c.offset + c.limit <= 50)).toBe(true);
    expect(stats.calls.map((c) => `${c.offset}+${c.limit}`)).toContain('43+7');
  });

  it('reads nothing when endOffset is at the start', async () => {
    const { rows, stats } = await collect({ total: 100 }, { start: 30, pageSize: 10, endOffset: 30 });
    expect(rows).toEqual([]);
    expect(stats.calls).toEqual([]);
  });

  it('rejects a next_offset that does not move forward', async () => {
    await expect(collect({ total: 100, nextOffsetAt: (offset) => (offset === 30 ? 30 : undefined) }, { pageSize: 10 })).rejects.toThrow(
      PageSequenceError,
    );
  });

  it('rejects bad options, naming the option and the value', async () => {
    await expect(collect({ total: 10 }, { pageSize: 10, concurrency: 0 })).rejects.toThrow('concurrency must be a positive integer, got 0');
    await expect(collect({ total: 10 }, { pageSize: 2.5 })).rejects.toThrow('pageSize must be a positive integer, got 2.5');
    await expect(collect({ total: 10 }, { pageSize: 10, prefetch: -1 })).rejects.toThrow('prefetch must be a non-negative integer, got -1');
    await expect(collect({ total: 10 }, { pageSize: 10, endOffset: 1.5 })).rejects.toThrow('endOffset must be a non-negative integer, got 1.5');
  });
});

describe('fetchOrdered: bounds, counted', () => {
  it.each([
    [1, 0],
    [4, 2],
    [8, 0],
  ])('never has more than %i requests in flight (prefetch %i), and reaches the bound', async (concurrency, prefetch) => {
    const random = seeded(7);
    const { rows, stats } = await collect(
      { total: 2000, latency: () => Math.floor(random() * 4) },
      { pageSize: 20, concurrency, prefetch },
    );
    expect(rows).toEqual(range(2000));
    expect(stats.maxInFlight).toBe(concurrency);
    // Pages started and not yet received: the window, plus the one handed over and not yet counted.
    expect(stats.maxAhead).toBeLessThanOrEqual(concurrency + prefetch + 1);
  });

  it('stops fetching when the consumer stops pulling (backpressure)', async () => {
    const concurrency = 3;
    const prefetch = 2;
    const { fetchPage, stats } = memorySource({ total: 10_000 });
    const pages = fetchOrdered(fetchPage, { start: 0, pageSize: 10, totalRows: 10_000, concurrency, prefetch });
    const iterator = pages[Symbol.asyncIterator]();
    await iterator.next();
    stats.received++;
    // The consumer stalls: let every request that was started finish, then look at the counts.
    while (stats.inFlight > 0) await sleep(1);
    await sleep(10);
    const startedWhileStalled = stats.calls.length;
    expect(startedWhileStalled - stats.received).toBe(concurrency + prefetch);
    await sleep(20);
    expect(stats.calls.length).toBe(startedWhileStalled);
    // Pulling again resumes fetching.
    await iterator.next();
    stats.received++;
    while (stats.inFlight > 0) await sleep(1);
    expect(stats.calls.length).toBe(startedWhileStalled + 1);
    await iterator.return(undefined);
    expect(stats.inFlight).toBe(0);
  });
});

describe('fetchOrdered: abort, early exit, errors', () => {
  it('an abort stops every request in flight and rejects with the abort reason', async () => {
    const controller = new AbortController();
    const { fetchPage, stats } = memorySource({ total: 1000, hang: (r) => r.offset >= 20 });
    const seen: number[] = [];
    const run = (async () => {
      for await (const { page } of fetchOrdered(fetchPage, { start: 0, pageSize: 10, totalRows: 1000, concurrency: 4, signal: controller.signal })) {
        seen.push(...page.rows);
        if (seen.length === 20) setImmediate(() => controller.abort(new Error('user gave up')));
      }
    })();
    await expect(run).rejects.toThrow('user gave up');
    expect(seen).toEqual(range(20));
    const started = stats.calls.length;
    expect(started).toBeGreaterThan(2);
    expect(stats.signals.filter((_, i) => stats.calls[i]!.offset >= 20).every((s) => s.aborted)).toBe(true);
    // Every hanging request was settled (by its abort) before the iteration ended.
    expect(stats.inFlight).toBe(0);
    await sleep(10);
    expect(stats.calls.length).toBe(started);
  });

  it('rejects at once when the signal is already aborted, without a request', async () => {
    const { fetchPage, stats } = memorySource({ total: 100 });
    const pages = fetchOrdered(fetchPage, { start: 0, pageSize: 10, signal: AbortSignal.abort(new Error('too late')) });
    await expect(pages.next()).rejects.toThrow('too late');
    expect(stats.calls).toEqual([]);
  });

  it('breaking out of the loop aborts and settles the requests still in flight', async () => {
    const { fetchPage, stats } = memorySource({ total: 1000, hang: (r) => r.offset >= 10 });
    for await (const { page } of fetchOrdered(fetchPage, { start: 0, pageSize: 10, totalRows: 1000, concurrency: 4 })) {
      expect(page.rows[0]).toBe(0);
      break;
    }
    expect(stats.calls.length).toBeGreaterThan(1);
    expect(stats.inFlight).toBe(0);
    expect(stats.signals.slice(1).every((s) => s.aborted)).toBe(true);
  });

  it('a failed page rejects the iteration after the pages before it are handed over, in order', async () => {
    const boom = new Error('page 50 failed for good');
    // Page 50 fails at once, while the pages before it are still on their way.
    const { fetchPage, stats } = memorySource({ total: 1000, failAt: (r) => (r.offset === 50 ? boom : undefined), latency: (r) => (r.offset < 50 ? 20 : 0) });
    const seen: number[] = [];
    const run = (async () => {
      for await (const { page } of fetchOrdered(fetchPage, { start: 0, pageSize: 10, totalRows: 1000, concurrency: 8 })) seen.push(...page.rows);
    })();
    await expect(run).rejects.toBe(boom);
    expect(seen).toEqual(range(50));
    expect(stats.inFlight).toBe(0);
  });

  it('a failed page rejects the iteration after the other requests settle', async () => {
    const boom = new Error('page 50 failed for good');
    const { fetchPage, stats } = memorySource({
      total: 1000,
      failAt: (r) => (r.offset === 50 ? boom : undefined),
      hang: (r) => r.offset > 50,
      latency: (r) => (r.offset === 50 ? 5 : 0),
    });
    const seen: number[] = [];
    const run = (async () => {
      for await (const { page } of fetchOrdered(fetchPage, { start: 0, pageSize: 10, totalRows: 1000, concurrency: 4 })) seen.push(...page.rows);
    })();
    await expect(run).rejects.toBe(boom);
    expect(stats.inFlight).toBe(0);
    expect(seen.length).toBeLessThanOrEqual(50);
    expect(seen).toEqual(range(seen.length));
    expect(stats.calls.filter((c) => c.offset > 50).length).toBeGreaterThan(0);
  });
});
