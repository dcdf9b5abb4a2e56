// The streaming API against the real local service (DuckDB, HTTP on 127.0.0.1:0): paging, faults,
// sources, abort and cancel, Node streams and DataFrames.
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, ExecutionFailedError, InvalidArgumentError, PartialResultError, ServiceClient } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import type { Progress } from '../../src/pipeline/progress.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const PAGE_ROWS = 100;
const EVENTS = 'SELECT * FROM sample.events ORDER BY id';
const NO_FAULTS = { latency_ms: 0, error_rate: 0, reset_rate: 0 };
/** A query that runs for many seconds unless it is cancelled. */
const SLOW_SQL = 'SELECT sum(a.range * b.range) AS s FROM range(300000) a, range(300000) b';

let svc: TestService;
let client: ServiceClient;
let events: Record<string, unknown>[];

const collect = async (iterable: AsyncIterable<Record<string, unknown>>) => {
  const rows: Record<string, unknown>[] = [];
  for await (const row of iterable) rows.push(row);
  return rows;
};

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: PAGE_ROWS } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write, retry: { attempts: 20, baseDelayMs: 1, maxDelayMs: 20 } });
  events = await collect(stream(client, { sql: EVENTS }, { concurrency: 1 }));
});
afterEach(() => svc.setFaults(NO_FAULTS));
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

describe('paging', () => {
  it('reads every row of a multi-page result in order', async () => {
    expect(events).toHaveLength(2000);
    expect(events.map((r) => r['id'])).toEqual(Array.from({ length: 2000 }, (_, i) => BigInt(i)));
    expect(Object.keys(events[0]!)).toEqual(['id', 'ts', 'name', 'value', 'amount', 'quantity', 'flag', 'day']);
  });

  it.each([2, 8])('concurrency %i gives exactly the rows of concurrency 1', async (concurrency) => {
    const progress: Progress[] = [];
    const s = stream(client, { sql: EVENTS }, { concurrency, onProgress: (p) => progress.push(p) });
    expect(await collect(s)).toEqual(events);
    expect(progress.map((p) => p.pages)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(progress.at(-1)).toMatchObject({ pages: 20, rows: 2000, totalRows: 2000, etaMs: 0 });
    expect(progress.at(-1)!.bytes).toBeGreaterThan(2000 * 8);
    // The HTTP bodies carry the JSON keys and quotes on top of the values the service counts.
    expect(progress.at(-1)!.httpBytes).toBeGreaterThan(progress.at(-1)!.bytes);
    expect(progress.every((p, i) => i === 0 || p.rows > progress[i - 1]!.rows)).toBe(true);
  });

  it('learns the page size the service really uses (it lowers a larger limit)', async () => {
    const s = stream(client, { sql: EVENTS }, { pageSize: 5000, concurrency: 4 });
    expect(await collect(s)).toEqual(events);
    expect((await s.info()).pageSize).toBe(PAGE_ROWS);
  });

  it('pages with a smaller page size asked for', async () => {
    const s = stream(client, { sql: EVENTS }, { pageSize: 64, concurrency: 3 });
    expect(await collect(s)).toEqual(events);
    expect((await s.info()).pageSize).toBe(64);
    expect(s.progress?.pages).toBe(Math.ceil(2000 / 64));
  });

  it('startOffset: rows from there on, pages on the grid of a read from row 0, nothing before requested', async () => {
    const executionId = (await stream(client, { sql: EVENTS }).info()).executionId;
    const s = stream(client, { executionId }, { startOffset: 1250, pageSize: 100, concurrency: 2 });
    const lengths: number[] = [];
    const ids: bigint[] = [];
    for await (const b of s.batches()) {
      lengths.push(b.numRows);
      for (const id of b.getChild('id')!) ids.push(id as bigint);
    }
    // The page holding row 1250 is read from 1200 and its first 50 rows skipped: batches end where a full read's do.
    expect(lengths).toEqual([50, 100, 100, 100, 100, 100, 100, 100]);
    expect(ids).toEqual(events.slice(1250).map((r) => r['id']));
    expect(s.progress).toMatchObject({ pages: 8, rows: 750, totalRows: 750, etaMs: 0 });
    expect(await collect(stream(client, { executionId }, { startOffset: 1999 }))).toEqual(events.slice(1999));
    expect(await collect(stream(client, { executionId }, { startOffset: 2000, pageSize: 100 }))).toEqual([]);
    expect(() => stream(client, { executionId }, { startOffset: -1 })).toThrow(/startOffset must be a non-negative integer, got -1/);
  });

  it('passes columns, filters and sort order to the service', async () => {
    const s = stream(client, { sql: EVENTS }, { columns: ['name', 'id'], filters: 'quantity < 10', sortBy: 'id desc', pageSize: 7 });
    const expected = events
      .filter((r) => (r['quantity'] as number) < 10)
      .reverse()
      .map((r) => ({ name: r['name'], id: r['id'] }));
    const rows = await collect(s);
    expect(rows.length).toBeGreaterThan(14);
    expect(rows).toEqual(expected);
  });

  it.each([1, 8])('filters with concurrency %i: no row lost or repeated, although total_row_count counts every row; no time-left estimate', async (concurrency) => {
    // quantity < 25 keeps 50 of the 2000 rows, scattered; the service's total_row_count stays 2000,
    // so the fetcher plans pages past the filtered end and must stop at the page without next_offset.
    const expected = events.filter((r) => (r['quantity'] as number) < 25);
    const progress: Progress[] = [];
    const s = stream(client, { sql: EVENTS }, { filters: 'quantity < 25', pageSize: 7, concurrency, onProgress: (p) => progress.push(p) });
    expect(await collect(s)).toEqual(expected);
    expect(expected.length).toBe(50);
    expect((await s.info()).totalRows).toBe(2000);
    expect(progress.at(-1)).toMatchObject({ rows: 50, pages: 8, totalRows: undefined, etaMs: undefined });
  });

  it('an empty result: no rows, no batches, still a schema', async () => {
    const s = stream(client, { sql: 'SELECT * FROM sample.events WHERE id < 0' });
    expect(await collect(s)).toEqual([]);
    const batches = [];
    for await (const b of s.batches()) batches.push(b);
    expect(batches).toEqual([]);
    expect((await s.schema()).fields.map((f) => f.name)).toEqual(Object.keys(events[0]!));
  });

  it('reads the result again on a second iteration, without executing again', async () => {
    const s = stream(client, { sql: 'SELECT id FROM sample.events WHERE id < 250 ORDER BY id' });
    const first = await collect(s);
    const requests = client.stats.requests;
    const second = await collect(s);
    expect(second).toEqual(first);
    expect(first).toHaveLength(250);
    // Three pages, no execute, no status poll.
    expect(client.stats.requests - requests).toBe(3);
  });
});

describe('under faults (500, 429, 502, 503, connection resets, latency)', () => {
  it('gives exactly the fault-free rows', async () => {
    svc.setFaults({ latency_ms: 2, error_rate: 0.25, reset_rate: 0.2, error_statuses: [500, 429, 502, 503], retry_after_seconds: 0 });
    const before = { ...svc.faultCounts };
    const retries = client.stats.retries;
    const rows = await collect(stream(client, { sql: EVENTS }, { concurrency: 4, pageSize: 50 }));
    expect(rows).toEqual(events);
    expect(svc.faultCounts.errors).toBeGreaterThan(before.errors);
    expect(svc.faultCounts.resets).toBeGreaterThan(before.resets);
    expect(client.stats.retries).toBeGreaterThan(retries);
  });

  it('Arrow batches under faults hold the fault-free values', async () => {
    const clean = stream(client, { sql: EVENTS });
    const expected = [];
    for await (const b of clean.batches({ batchSize: 512 })) expected.push(...b.toArray().map((r) => r.toJSON()));
    svc.setFaults({ error_rate: 0.2, reset_rate: 0.2, retry_after_seconds: 0 });
    const actual = [];
    for await (const b of stream(client, { sql: EVENTS }, { concurrency: 8 }).batches({ batchSize: 512 })) actual.push(...b.toArray().map((r) => r.toJSON()));
    expect(actual).toEqual(expected);
    expect(actual).toHaveLength(2000);
  });
});

describe('sources', () => {
  it('an execution id: reads that execution, starts nothing', async () => {
    const execution = await client.execute({ sql: EVENTS });
    const s = stream(client, { executionId: execution.id });
    expect(await collect(s)).toEqual(events);
    expect(await s.info()).toMatchObject({ executionId: execution.id, started: false });
  });

  it('a saved query: fresh runs, latest result reused within maxAgeHours, parameters in the schema', async () => {
    const { query_id: queryId } = await client.createQuery({
      name: 'pipeline events below n',
      query_sql: 'SELECT id, name FROM sample.events WHERE id < {{n}} ORDER BY id',
      parameters: [{ key: 'n', type: 'number', value: 10 }],
    });
    const fresh = stream(client, { queryId, parameters: { n: 150 }, fresh: true });
    const rows = await collect(fresh);
    expect(rows).toEqual(events.slice(0, 150).map((r) => ({ id: r['id'], name: r['name'] })));
    const freshInfo = await fresh.info();
    expect(freshInfo).toMatchObject({ started: true, queryId });

    const latest = stream(client, { queryId, parameters: { n: 150 }, maxAgeHours: 1 });
    expect(await collect(latest)).toEqual(rows);
    expect(await latest.info()).toMatchObject({ started: false, executionId: freshInfo.executionId });
    const schema = await latest.schema();
    expect(schema.metadata.get('service.query_id')).toBe(String(queryId));
    expect(JSON.parse(schema.metadata.get('service.parameters')!)).toEqual({ n: 150 });

    // No stored result for other parameter values: a fresh execution.
    const other = stream(client, { queryId, parameters: { n: 5 } });
    expect(await collect(other)).toHaveLength(5);
    expect((await other.info()).started).toBe(true);
  });

  it('a failed execution rejects with the same error when its first CSV page was asked for early (headStart)', async () => {
    // A client of its own: one that has had an Arrow page from this service asks for no CSV page ahead.
    const own = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
    try {
      const e = await own.execute({ sql: 'SELECT no_such_column FROM sample.events' });
      const plain: unknown = await stream(own, { executionId: e.id }).info().catch((error: unknown) => error);
      const early = stream(own, { executionId: e.id });
      early.headStart();
      const got: unknown = await early.info().catch((error: unknown) => error);
      expect(plain).toBeInstanceOf(ExecutionFailedError);
      expect(got).toBeInstanceOf(ExecutionFailedError);
      expect((got as Error).message).toBe((plain as Error).message);
    } finally {
      await own.close();
    }
  });

  it('a failed execution rejects with ExecutionFailedError', async () => {
    await expect(collect(stream(client, { sql: 'SELECT no_such_column FROM sample.events' }))).rejects.toThrow(ExecutionFailedError);
  });

  it('a bad filter rejects with the service reason', async () => {
    await expect(collect(stream(client, { sql: EVENTS }, { filters: 'quantity <' }))).rejects.toThrow(BadRequestError);
  });

  it('bad options are rejected before any request, naming the option', () => {
    expect(() => stream(client, { sql: EVENTS }, { concurrency: 0 })).toThrow(InvalidArgumentError);
    expect(() => stream(client, { sql: EVENTS }, { pageSize: 1.5 })).toThrow('pageSize must be a positive integer, got 1.5');
    expect(() => stream(client, { sql: EVENTS }, { prefetch: -1 })).toThrow('prefetch must be a non-negative integer, got -1');
  });

  it('a source with none of executionId, sql, queryId is rejected', async () => {
    await expect(stream(client, {} as never).info()).rejects.toThrow('source must have executionId, sql, queryId or viewRefresh, got an empty object');
  });
});

describe('partial results', () => {
  let small: TestService;
  let smallClient: ServiceClient;
  beforeAll(async () => {
    small = await startTestService({ limits: { page_rows: PAGE_ROWS, max_result_bytes: 20_000 } });
    smallClient = new ServiceClient({ baseUrl: small.url, apiKey: small.keys.demo.write });
  });
  afterAll(async () => {
    await smallClient?.close();
    await small?.close();
  });

  it('a truncated result fails unless allowPartialResults, then reads the rows kept, in order', async () => {
    await expect(collect(stream(smallClient, { sql: EVENTS }))).rejects.toThrow(PartialResultError);
    const rows = await collect(stream(smallClient, { sql: EVENTS }, { allowPartialResults: true, concurrency: 4 }));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(2000);
    expect(rows).toEqual(events.slice(0, rows.length));
  });
});

describe('abort and cancel', () => {
  it('an abort while pages are in flight rejects promptly with AbortError and starts no more requests', async () => {
    const controller = new AbortController();
    // JSON wire: rows() re-reads a first page that info() read as Arrow, which here would be a page
    // fetched after the latency fault is set; this test is about the pages in flight when the abort comes.
    const s = stream(client, { sql: EVENTS }, { concurrency: 4, signal: controller.signal, wire: 'json' });
    await s.info(); // the execution is done and the first page read
    svc.setFaults({ latency_ms: 5_000 });
    const seen: unknown[] = [];
    const started = performance.now();
    const run = (async () => {
      for await (const row of s) {
        seen.push(row['id']);
        if (seen.length === 1) setTimeout(() => controller.abort(new Error('enough')), 50);
      }
    })();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    // The pages in flight would have taken 5 s: the abort did not wait for them.
    expect(performance.now() - started).toBeLessThan(2_500);
    const requests = client.stats.requests;
    await new Promise((r) => setTimeout(r, 100));
    expect(client.stats.requests).toBe(requests);
    expect(seen).toHaveLength(PAGE_ROWS);
  });

  it('cancelOnAbort cancels the execution still running', async () => {
    const controller = new AbortController();
    let executionId: string | undefined;
    const s = stream(client, { sql: SLOW_SQL }, {
      signal: controller.signal,
      cancelOnAbort: true,
      onExecution: (id) => {
        executionId = id;
        setTimeout(() => controller.abort(), 300);
      },
    });
    await expect(s.info()).rejects.toMatchObject({ name: 'AbortError' });
    expect(executionId).toBeDefined();
    const status = await client.getStatus(executionId!);
    expect(status.state).toBe('QUERY_STATE_CANCELLED');
  });

  it('without cancelOnAbort, an abort leaves the execution running', async () => {
    const controller = new AbortController();
    let executionId: string | undefined;
    const s = stream(client, { sql: SLOW_SQL }, {
      signal: controller.signal,
      onExecution: (id) => {
        executionId = id;
        setTimeout(() => controller.abort(), 300);
      },
    });
    await expect(s.info()).rejects.toMatchObject({ name: 'AbortError' });
    const status = await client.getStatus(executionId!);
    expect(['QUERY_STATE_PENDING', 'QUERY_STATE_EXECUTING']).toContain(status.state);
    await client.cancel(executionId!);
  });
});

describe('edges: Node stream, DataFrame', () => {
  it('toNodeStream works in stream.pipeline, in order', async () => {
    const ids: unknown[] = [];
    const sink = new Writable({
      objectMode: true,
      write(row: Record<string, unknown>, _enc, done) {
        ids.push(row['id']);
        done();
      },
    });
    await pipeline(stream(client, { sql: EVENTS }, { concurrency: 4 }).toNodeStream(), sink);
    expect(ids).toEqual(events.map((r) => r['id']));
  });

  it('toNodeStream({ batches: true }) gives Arrow RecordBatches of batchSize rows, in order', async () => {
    const sizes: number[] = [];
    const ids: unknown[] = [];
    const sink = new Writable({
      objectMode: true,
      write(batch: RecordBatch, _enc, done) {
        sizes.push(batch.numRows);
        for (const id of batch.getChild('id')!) ids.push(id);
        done();
      },
    });
    const s = stream(client, { sql: EVENTS }, { concurrency: 4 });
    await pipeline(s.toNodeStream({ batches: true, batchSize: 512 }), sink);
    expect(sizes).toEqual([512, 512, 512, 464]);
    expect(ids).toEqual(events.map((r) => r['id']));
  });

  it('a failing sink stops the fetching: pipeline rejects, no request left running', async () => {
    // Its own client, to count the result pages it asked for (status polls vary with how long
    // the execution takes).
    let pages = 0;
    const own = new ServiceClient({
      baseUrl: svc.url,
      apiKey: svc.keys.demo.write,
      retry: { attempts: 20, baseDelayMs: 1, maxDelayMs: 20 },
      onRequest: (event) => {
        if (/\/results/.test(event.url)) pages += 1;
      },
    });
    const sink = new Writable({
      objectMode: true,
      write(row: Record<string, unknown>, _enc, done) {
        done(row['id'] === 150n ? new Error('disk full') : null);
      },
    });
    await expect(pipeline(stream(own, { sql: EVENTS }, { concurrency: 2, prefetch: 0 }).toNodeStream(), sink)).rejects.toThrow('disk full');
    const requests = own.stats.requests;
    await new Promise((r) => setTimeout(r, 100));
    expect(own.stats.requests).toBe(requests);
    // At most a few pages, not all 20.
    expect(pages).toBeGreaterThan(0);
    expect(pages).toBeLessThan(10);
  });

  it('toDataFrame builds a polars DataFrame from Arrow IPC with the same values', async () => {
    const df = await stream(client, { sql: EVENTS }, { concurrency: 4 }).toDataFrame();
    expect(df.height).toBe(2000);
    expect(df.columns).toEqual(Object.keys(events[0]!));
    // Only columns polars can hand to JS (it refuses decimals there; they stay decimals in the frame).
    expect(String(df.getColumn('amount').dtype)).toMatch(/Decimal/);
    const records = df.select('id', 'name', 'quantity', 'flag').toRecords();
    expect(records.map((r) => [BigInt(r['id'] as number | bigint), r['name'], r['quantity'], r['flag']])).toEqual(
      events.map((r) => [r['id'], r['name'], r['quantity'], r['flag']]),
    );
  });

  it('toDataFrame of an empty result keeps the columns', async () => {
    const df = await stream(client, { sql: 'SELECT id, name FROM sample.events WHERE id < 0' }).toDataFrame();
    expect(df.height).toBe(0);
    expect(df.columns).toEqual(['id', 'name']);
  });
});
