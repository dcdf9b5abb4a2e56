// The wire of result pages: Arrow when the service offers it, JSON from a service that only speaks
// JSON (today's local service) or refuses Arrow (406); the batches hold the same values either way.
// The Arrow pages come from a proxy that re-encodes the real service's pages (test/helpers/arrowProxy.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordBatch } from 'apache-arrow';
import { ServiceClient } from '../../src/client/index.ts';
import { stream, type StreamOptions } from '../../src/pipeline/stream.ts';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { arrowRows } from './arrowCells.ts';

let svc: TestService;
let jsonOnly: ArrowProxy;
let refusing: ArrowProxy;
let arrow: ArrowProxy;
const clients: ServiceClient[] = [];
let direct: ServiceClient;
let executionId: string;

const client = (baseUrl: string) => {
  const c = new ServiceClient({ baseUrl, apiKey: svc.keys.demo.write });
  clients.push(c);
  return c;
};

beforeAll(async () => {
  // Small pages: the 4 rows of all_types and 150 rows of events cross several pages.
  svc = await startTestService({ limits: { page_rows: 64 } });
  jsonOnly = await startArrowProxy(svc.url, 'json');
  refusing = await startArrowProxy(svc.url, 'refuse');
  arrow = await startArrowProxy(svc.url, 'arrow');
  direct = client(svc.url);
  const exec = await direct.execute({ sql: SQL });
  await exec.wait();
  executionId = exec.id;
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await jsonOnly?.close();
  await refusing?.close();
  await arrow?.close();
  await svc?.close();
});

// Every column type of the wire (all_types, 4 rows with NULLs and extremes) beside many rows of events.
const SQL = `SELECT t.*, e.* EXCLUDE (id) FROM (SELECT * FROM sample.events ORDER BY id LIMIT 150) e CROSS JOIN (SELECT * FROM sample.all_types WHERE id = 1) t`;
const ALL_TYPES = 'SELECT * FROM sample.all_types ORDER BY id';

async function values(c: ServiceClient, source: { executionId: string } | { sql: string }, options: StreamOptions = {}): Promise<{ rows: unknown[]; batches: RecordBatch[] }> {
  const batches: RecordBatch[] = [];
  for await (const b of stream(c, source, options).batches()) batches.push(b);
  return { rows: batches.flatMap(arrowRows), batches };
}

describe('wire: a service that only speaks JSON (the official one)', () => {
  it('auto falls back to JSON; auto and wire json give the same values', async () => {
    const auto = await values(client(jsonOnly.url), { executionId }, { wire: 'auto' });
    const json = await values(direct, { executionId }, { wire: 'json' });
    expect(auto.rows).toHaveLength(150);
    expect(auto.rows).toEqual(json.rows);
    // One schema object for every batch.
    expect(new Set(auto.batches.map((b) => b.schema)).size).toBe(1);
  }, 120_000);

  it("wire 'arrow' is a clear error naming the wire and what to use instead", async () => {
    await expect(values(client(jsonOnly.url), { executionId }, { wire: 'arrow' })).rejects.toThrow(/wire 'arrow'.*answered a result page as JSON.*use wire 'auto'/);
  });

  it('batchSize re-cuts across pages on JSON, and is refused with the Arrow wire', async () => {
    const sizes: number[] = [];
    for await (const b of stream(direct, { executionId }).batches({ batchSize: 100 })) sizes.push(b.numRows);
    expect(sizes).toEqual([100, 50]);
    const gen = stream(direct, { executionId }, { wire: 'arrow' }).batches({ batchSize: 100 });
    await expect(gen.next()).rejects.toThrow(/batchSize.*Arrow wire.*wire 'auto' or 'json'/);
  });
});

describe('wire: the local service itself', () => {
  it('auto gives the values of the JSON wire, every column type included', { timeout: 120_000 }, async () => {
    for (const source of [{ executionId }, { sql: ALL_TYPES }]) {
      const auto = await values(direct, source, { wire: 'auto' });
      const json = await values(direct, source, { wire: 'json' });
      expect(auto.rows.length).toBeGreaterThan(0);
      expect(auto.rows).toEqual(json.rows);
    }
  });
});

describe('wire: a service that refuses Arrow (406)', () => {
  it('auto asks once for Arrow, then reads JSON with the same values', async () => {
    const before = refusing.seen.length;
    const got = await values(client(refusing.url), { executionId }, { wire: 'auto' });
    expect(got.rows).toEqual((await values(direct, { executionId }, { wire: 'json' })).rows);
    const seen = refusing.seen.slice(before);
    expect(seen.filter((s) => s.answered.includes('406'))).toHaveLength(1);
    expect(seen.filter((s) => s.accept.includes('arrow'))).toHaveLength(1);
  });

  it("wire 'arrow' names the 406", async () => {
    await expect(values(client(refusing.url), { executionId }, { wire: 'arrow' })).rejects.toThrow(/refused Arrow pages \(406\)/);
  });
});

describe('wire: a service that serves Arrow pages', () => {
  it('auto reads every page as Arrow, with the values of the JSON wire', async () => {
    const before = arrow.seen.length;
    const got = await values(client(arrow.url), { executionId }, { wire: 'auto' });
    const seen = arrow.seen.slice(before);
    expect(seen.length).toBeGreaterThanOrEqual(3); // 150 rows in pages of 64
    expect(seen.every((s) => s.answered === 'application/vnd.apache.arrow.stream')).toBe(true);
    expect(got.rows).toEqual((await values(direct, { executionId }, { wire: 'json' })).rows);
    expect(new Set(got.batches.map((b) => b.schema)).size).toBe(1);
  });

  it('every type of the wire arrives with the same values, and rows() still reads JSON rows', { timeout: 120_000 }, async () => {
    const viaArrow = await values(client(arrow.url), { sql: ALL_TYPES }, { wire: 'arrow' });
    expect(viaArrow.rows).toEqual((await values(direct, { sql: ALL_TYPES }, { wire: 'json' })).rows);
    const rows: unknown[] = [];
    for await (const r of stream(client(arrow.url), { executionId }, { wire: 'arrow' })) rows.push(r);
    const jsonRows: unknown[] = [];
    for await (const r of stream(direct, { executionId })) jsonRows.push(r);
    expect(rows).toEqual(jsonRows);
  });

  it('the default wire is auto: Arrow pages from a service that serves them, the same values', async () => {
    const before = arrow.seen.length;
    const got = await values(client(arrow.url), { executionId });
    const seen = arrow.seen.slice(before);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.some((s) => s.answered === 'application/vnd.apache.arrow.stream')).toBe(true);
    expect(got.rows).toEqual((await values(direct, { executionId }, { wire: 'json' })).rows);
  });

  it('a resumed read (startOffset off the page grid) skips the same rows on both wires', async () => {
    const a = await values(client(arrow.url), { executionId }, { startOffset: 70, pageSize: 64, wire: 'auto' });
    const j = await values(direct, { executionId }, { startOffset: 70, pageSize: 64, wire: 'json' });
    expect(a.rows).toHaveLength(80);
    expect(a.rows).toEqual(j.rows);
  });
});

describe('row ranges (a part of an export)', () => {
  it('startOffset and endOffset, on or off the page grid, give exactly those rows on both wires and rows() alike', async () => {
    const all = (await values(direct, { executionId }, { wire: 'json' })).rows;
    expect(all).toHaveLength(150);
    for (const [start, end] of [
      [70, 100],
      [0, 64],
      [64, 128],
      [10, 11],
      [100, 400],
    ] as const) {
      const want = all.slice(start, end);
      const range = { startOffset: start, endOffset: end, pageSize: 64 };
      expect((await values(direct, { executionId }, { ...range, wire: 'json' })).rows, `${start}-${end} json`).toEqual(want);
      expect((await values(client(arrow.url), { executionId }, { ...range, wire: 'arrow' })).rows, `${start}-${end} arrow`).toEqual(want);
      let n = 0;
      for await (const _ of stream(direct, { executionId }, range)) n++;
      expect(n, `${start}-${end} rows()`).toBe(want.length);
    }
  });

  it('a range asks for no page past its end', async () => {
    const arrowClient = client(arrow.url);
    for (const [start, end, pages] of [
      [0, 64, 1],
      [10, 70, 2],
      [64, 150, 2],
    ] as const) {
      const before = arrow.seen.length;
      const got = await values(arrowClient, { executionId }, { startOffset: start, endOffset: end, pageSize: 64, wire: 'arrow', concurrency: 4 });
      expect(got.rows).toHaveLength(end - start);
      expect(arrow.seen.length - before, `${start}-${end}`).toBe(pages);
    }
  });

  it('an endOffset not above startOffset is refused, naming both', () => {
    expect(() => stream(direct, { executionId }, { startOffset: 10, endOffset: 10 })).toThrow('endOffset must be an integer above startOffset (10), got 10');
  });
});
