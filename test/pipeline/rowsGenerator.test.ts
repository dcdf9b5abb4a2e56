// rows() as an async generator over every column type: calls in flight at once, return(), throw()
// and break behave as a generator's do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { stream, type StreamOptions } from '../../src/pipeline/stream.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let svc: TestService;
let client: ServiceClient;
let executionId: string;

beforeAll(async () => {
  // Small pages: 150 rows cross three pages.
  svc = await startTestService({ limits: { page_rows: 64 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
  const exec = await client.execute({ sql: `SELECT t.*, e.* EXCLUDE (id) FROM (SELECT * FROM sample.events ORDER BY id LIMIT 150) e CROSS JOIN (SELECT * FROM sample.all_types) t ORDER BY e.id, t.id` });
  await exec.wait();
  executionId = exec.id;
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

async function rows(options: StreamOptions): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const r of stream(client, { executionId }, { wire: 'json', ...options })) out.push(r);
  return out;
}

/** A value with its JS type spelled out, so a Date and its ISO text, or 1n and 1, differ. */
function typed(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return [typeof v, typeof v === 'bigint' ? String(v) : Object.is(v, -0) ? '-0' : v];
  if (v instanceof Date) return ['Date', v.getTime()];
  if (v instanceof Uint8Array) return [v.constructor.name, [...v]];
  if (v instanceof Map) return ['Map', [...v].map(([k, x]) => [typed(k), typed(x)])];
  if (Array.isArray(v)) return ['Array', v.map(typed)];
  return ['Object', Object.keys(v), Object.values(v).map(typed)];
}

describe('rows() as an async generator', () => {
  it('calls in flight at once get rows in order; return() and throw() end it', async () => {
    const want = (await rows({})).map(typed);
    const it = stream(client, { executionId }, { wire: 'json', pageSize: 64 }).rows();
    // Ten calls before any settles: a page is read once, and the rows come in order.
    const first = await Promise.all(Array.from({ length: 10 }, () => it.next()));
    expect(first.map((r) => typed(r.value))).toEqual(want.slice(0, 10));
    // Across a page boundary (64 rows a page), still in order.
    const more = await Promise.all(Array.from({ length: 100 }, () => it.next()));
    expect(more.map((r) => typed(r.value))).toEqual(want.slice(10, 110));
    expect(await it.return(undefined)).toEqual({ done: true, value: undefined });
    expect(await it.next()).toEqual({ done: true, value: undefined });

    const other = stream(client, { executionId }, { wire: 'json' }).rows();
    expect((await other.next()).done).toBe(false);
    const boom = new Error('stop');
    await expect(other.throw(boom)).rejects.toBe(boom);
    expect(await other.next()).toEqual({ done: true, value: undefined });
  });

  it('break out of for await ends the read; a new read starts again from the first row', async () => {
    const s = stream(client, { executionId }, { wire: 'json', pageSize: 64 });
    const seen: unknown[] = [];
    for await (const row of s) {
      seen.push(typed(row));
      if (seen.length === 70) break;
    }
    const again: unknown[] = [];
    for await (const row of s) again.push(typed(row));
    expect(again.slice(0, 70)).toEqual(seen);
    expect(again.length).toBe((await rows({})).length);
  });
});

describe('the decodeThreads option (pages are decoded on the calling thread)', () => {
  it('is accepted and ignored: the same rows and batches, and one DeprecationWarning per process naming the option and what to use instead', async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    try {
      const want = (await rows({})).map(typed);
      expect((await rows({ decodeThreads: 2 })).map(typed)).toEqual(want);
      expect((await rows({ decodeThreads: 0 })).map(typed)).toEqual(want);
      let n = 0;
      for await (const b of stream(client, { executionId }, { wire: 'json', decodeThreads: 2 }).batches()) n += b.numRows;
      expect(n).toBe(want.length);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listen);
    }
    const ours = warnings.filter((w) => (w as Error & { code?: string }).code === 'SLUICE_DECODE_THREADS');
    expect(ours).toHaveLength(1);
    expect(ours[0]!.name).toBe('DeprecationWarning');
    expect(ours[0]!.message).toMatch(/decodeThreads is ignored.*calling thread.*--processes N/);
  });
});
