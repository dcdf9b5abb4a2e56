// rows() over JSON decoded by threads: the rows are the ones the calling thread decodes (values,
// their JS types, key order), for every column type, ranges and options; a bad value stops the read
// where the calling thread would stop it, with the same error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { decodePacked, unpackRows } from '../../src/pipeline/packedRows.ts';
import { stream, type StreamOptions } from '../../src/pipeline/stream.ts';
import { compileRowDecoder, type ColumnSpec, type DecodeOptions } from '../../src/types/decode.ts';
import { ValueDecodeError } from '../../src/types/errors.ts';
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

describe('rows() with decode threads', () => {
  it('gives the rows of the calling thread: every column type, NULLs and extremes, keys in order', { timeout: 120_000 }, async () => {
    const here = await rows({ decodeThreads: 0 });
    expect(here.length).toBeGreaterThan(150);
    for (const threads of [1, 2]) {
      const there = await rows({ decodeThreads: threads });
      expect(there.map(typed), `${threads} threads`).toEqual(here.map(typed));
      expect(there.map((r) => Object.keys(r))).toEqual(here.map((r) => Object.keys(r)));
    }
  });

  it('dates as Dates, and row ranges on and off the page grid, alike', { timeout: 120_000 }, async () => {
    expect((await rows({ decodeThreads: 2, dates: 'date' })).map(typed)).toEqual((await rows({ decodeThreads: 0, dates: 'date' })).map(typed));
    const exact = (await rows({ decodeThreads: 0, timestamps: 'nanos' })).map(typed);
    expect(exact).not.toEqual((await rows({ decodeThreads: 0 })).map(typed));
    expect((await rows({ decodeThreads: 2, timestamps: 'nanos' })).map(typed)).toEqual(exact);
    const all = (await rows({ decodeThreads: 0 })).map(typed);
    for (const [start, end] of [
      [70, 100],
      [64, 128],
      [10, 11],
      [100, 10_000],
    ] as const) {
      const got = await rows({ decodeThreads: 2, startOffset: start, endOffset: end, pageSize: 64 });
      expect(got.map(typed), `${start}-${end}`).toEqual(all.slice(start, end));
    }
  });
});

describe('rows() as an async generator', () => {
  it.each([0, 2])('calls in flight at once get rows in order; return() and throw() end it (decode threads: %i)', async (decodeThreads) => {
    const want = (await rows({ decodeThreads: 0 })).map(typed);
    const it = stream(client, { executionId }, { wire: 'json', decodeThreads, pageSize: 64 }).rows();
    // Ten calls before any settles: a page is read once, and the rows come in order.
    const first = await Promise.all(Array.from({ length: 10 }, () => it.next()));
    expect(first.map((r) => typed(r.value))).toEqual(want.slice(0, 10));
    // Across a page boundary (64 rows a page), still in order.
    const more = await Promise.all(Array.from({ length: 100 }, () => it.next()));
    expect(more.map((r) => typed(r.value))).toEqual(want.slice(10, 110));
    expect(await it.return(undefined)).toEqual({ done: true, value: undefined });
    expect(await it.next()).toEqual({ done: true, value: undefined });

    const other = stream(client, { executionId }, { wire: 'json', decodeThreads }).rows();
    expect((await other.next()).done).toBe(false);
    const boom = new Error('stop');
    await expect(other.throw(boom)).rejects.toBe(boom);
    expect(await other.next()).toEqual({ done: true, value: undefined });
  });

  it('break out of for await ends the read; a new read starts again from the first row', async () => {
    const s = stream(client, { executionId }, { wire: 'json', decodeThreads: 2, pageSize: 64 });
    const seen: unknown[] = [];
    for await (const row of s) {
      seen.push(typed(row));
      if (seen.length === 70) break;
    }
    const again: unknown[] = [];
    for await (const row of s) again.push(typed(row));
    expect(again.slice(0, 70)).toEqual(seen);
    expect(again.length).toBe((await rows({ decodeThreads: 0 })).length);
  });
});

describe('packed rows (the hand-over between threads)', () => {
  const columns: ColumnSpec[] = [
    { name: 'i', type: 'integer' },
    { name: 'b', type: 'bigint' },
    { name: 'u', type: 'uint256' },
    { name: 'f', type: 'double' },
    { name: 'flag', type: 'boolean' },
    { name: 'ts', type: 'timestamp(3) with time zone' },
    { name: 'd', type: 'date' },
    { name: 'bin', type: 'varbinary' },
    { name: 'a', type: 'array(integer)' },
    { name: '__proto__', type: 'varchar' },
    { name: '2', type: 'varchar' },
  ];
  const raw = [
    { i: 1, b: 9223372036854775807n, u: '115792089237316195423570985008687907853269984665640564039457584007913129639935', f: -0, flag: true, ts: '2026-01-01 00:00:00.123 UTC', d: '2026-02-28', bin: '0x00ff', a: [1, null], ['__proto__']: 'p', 2: 'two' },
    { i: null, b: -9223372036854775808n, u: '0', f: 'NaN', flag: null, ts: null, d: null, bin: null, a: null, ['__proto__']: null, 2: null },
    { i: -2147483648, b: null, u: null, f: 'Infinity', flag: false, ts: '1969-12-31 23:59:59.999 UTC', d: '0044-03-15 (BC)', bin: '0x', a: [], ['__proto__']: '', 2: '' },
  ];
  // JSON.parse makes `__proto__` an own key, as the wire does; an object literal would not.
  const page = raw.map((r) => {
    const o = { ...r };
    Object.defineProperty(o, '__proto__', { value: r['__proto__'], enumerable: true, writable: true, configurable: true });
    return o;
  });

  for (const options of [{}, { dates: 'date' }, { timestamps: 'string' }, { timestamps: 'nanos' }] as DecodeOptions[]) {
    it(`round-trip the decoder's rows exactly (${JSON.stringify(options)})`, () => {
      const decode = compileRowDecoder(columns, options);
      const want = page.map((r, i) => decode(r, i));
      const { packed, error } = decodePacked(page, 0, page.length, columns, options, 0);
      expect(error).toBeUndefined();
      const cloned = structuredClone(packed);
      const rowAt = unpackRows(cloned, columns.map((c) => c.name));
      const got = want.map((_, i) => rowAt(i));
      expect(got.map(typed)).toEqual(want.map(typed));
      expect(got.map((r) => Object.keys(r))).toEqual(want.map((r) => Object.keys(r)));
      // The column named __proto__ is a value, not the prototype.
      expect(Object.getPrototypeOf(got[0])).toBe(Object.prototype);
    });
  }

  it('a bad value ends the rows before it, with the error the row decoder throws', () => {
    const cols: ColumnSpec[] = [
      { name: 'a', type: 'integer' },
      { name: 'b', type: 'date' },
    ];
    const rowsIn = [
      { a: 1, b: '2026-01-01' },
      { a: 2, b: '2026-01-02' },
      { a: 3, b: '2026-02-30' },
      { a: 'x', b: '2026-01-04' },
    ];
    const { packed, error } = decodePacked(rowsIn, 1, 4, cols, {}, 100);
    expect(packed.length).toBe(1);
    expect(unpackRows(packed, ['a', 'b'])(0)).toEqual({ a: 2, b: '2026-01-02' });
    expect(error).toBeInstanceOf(ValueDecodeError);
    expect(error).toMatchObject({ column: 'b', rowOffset: 102, value: '2026-02-30' });
    let direct: unknown;
    try {
      compileRowDecoder(cols)(rowsIn[2], 102);
    } catch (e) {
      direct = e;
    }
    expect((error as Error).message).toBe((direct as Error).message);
  });

  it('a row that is not an object is the row decoder\'s error', () => {
    const { packed, error } = decodePacked([{ a: 1 }, null], 0, 2, [{ name: 'a', type: 'integer' }], {}, 0);
    expect(packed.length).toBe(1);
    expect(error).toBeInstanceOf(ValueDecodeError);
    expect((error as Error).message).toMatch(/row 1.*not a row object/);
  });
});
