// The pipeline against the cases the local service never produces (it writes every value as its type
// says, and renames nothing): a value that does not fit its column, two columns of one name. A tiny
// scripted node:http server stands in for a misbehaving real service; everything else is real (HTTP,
// client, retries, fetcher, decoders).
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RecordBatchStreamWriter } from 'apache-arrow';
import { InvalidResponseError, ServiceClient } from '../../src/client/index.ts';
import { stream, type StreamOptions } from '../../src/pipeline/index.ts';
import { madeBody, releaseBody } from '../../src/client/pageBody.ts';
import type { Progress } from '../../src/pipeline/progress.ts';
import { ArrowValueError, ValueDecodeError } from '../../src/types/errors.ts';
import { arrowPageHeaders, ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/arrowPage.ts';
import { compileRowDecoder, createBatchBuilder } from '../../src/types/index.ts';
import { startMisbehavingServer, type MisbehavingServer, type Scripted } from '../client/misbehavingServer.ts';

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const TOTAL = 10;
const STATUS = JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, execution_ended_at: '2026-11-20T10:15:30.123456Z' });

let server: MisbehavingServer | undefined;
let client: ServiceClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

interface ResultScript {
  names: string[];
  types: string[];
  /** The wire row at a result offset. */
  row: (offset: number) => Record<string, unknown>;
  /** Delay of the page at an offset. */
  delayAt?: (offset: number) => number;
  /** What the page at an offset waits for before its delay (called as each page request arrives). */
  holdAt?: (offset: number) => Promise<unknown> | undefined;
  /** Rows the page at an offset holds, given the limit asked for (a service may send more). */
  limitAt?: (offset: number, asked: number) => number;
  /** Headers of the page at an offset. */
  headersAt?: (offset: number) => Record<string, string> | undefined;
  /** Column types of the page at an offset, when not `types`. */
  typesAt?: (offset: number) => string[] | undefined;
  /** Text sent before the JSON of the page at an offset. */
  prefixAt?: (offset: number) => string;
}

/** Status and JSON result pages of one execution of TOTAL rows, paged by `limit` and `offset`. */
function results(script: ResultScript) {
  const bodies: number[] = [];
  const answer = (req: IncomingMessage): Scripted => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/status')) return { body: STATUS };
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const asked = Number(url.searchParams.get('limit') ?? 3);
    const limit = script.limitAt?.(offset, asked) ?? asked;
    const end = Math.min(TOTAL, offset + limit);
    const rows = Array.from({ length: Math.max(0, end - offset) }, (_, i) => script.row(offset + i));
    const metadata = {
      column_names: script.names,
      column_types: script.typesAt?.(offset) ?? script.types,
      row_count: rows.length,
      result_set_bytes: rows.length * 2,
      total_row_count: TOTAL,
      total_result_set_bytes: TOTAL * 2,
      datapoint_count: rows.length * script.names.length,
    };
    const body = (script.prefixAt?.(offset) ?? '') + JSON.stringify({ execution_id: ID, query_id: 0, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows, metadata }, ...(end < TOTAL ? { next_offset: end } : {}) });
    bodies.push(Buffer.byteLength(body));
    const headers = script.headersAt?.(offset);
    const after = script.holdAt?.(offset);
    return { body, delayMs: script.delayAt?.(offset) ?? 0, ...(headers === undefined ? {} : { headers }), ...(after === undefined ? {} : { after }) };
  };
  return { answer, bodies };
}

async function serve(script: ResultScript) {
  const r = results(script);
  server = await startMisbehavingServer((req) => r.answer(req));
  client = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, retry: { attempts: 2, baseDelayMs: 1 } });
  return { server, client, bodies: r.bodies };
}

/** The ids a read of rows or batches delivers, and the error it ends with (undefined: none). */
async function idsUntilError(client: ServiceClient, read: 'rows' | 'batches', options: StreamOptions): Promise<{ seen: unknown[]; error: unknown }> {
  const seen: unknown[] = [];
  const error = await (async () => {
    const s = stream(client, { executionId: ID }, options);
    if (read === 'rows') for await (const r of s) seen.push(r['id']);
    else for await (const b of s.batches()) for (const v of b.getChild('id')!) seen.push(v);
  })().catch((e: unknown) => e);
  return { seen, error };
}

describe('a value that does not fit its column, through stream()', () => {
  it('rejects with ValueDecodeError naming column, row offset and value; the rows before arrive; requests in flight are settled', async () => {
    // The bad page is answered once the pages after it have reached the server (or after 10 s,
    // when the assertion below says they never came; a fixed 100 ms was not enough on a loaded
    // machine); they are slow, so they are still in flight when the error happens.
    const arrived = new Set<number>();
    let later!: () => void;
    const laterArrived = new Promise<void>((resolve) => (later = resolve));
    const timer = setTimeout(later, 10_000);
    const { server, client } = await serve({
      names: ['id', 'n'],
      types: ['integer', 'bigint'],
      row: (i) => ({ id: i, n: i === 5 ? 'oops' : i }),
      delayAt: (offset) => (offset >= 6 ? 20_000 : 0),
      holdAt: (offset) => {
        arrived.add(offset);
        if (arrived.has(6) && arrived.has(8)) later();
        return offset === 4 ? laterArrived : undefined;
      },
    });
    onTestFinished(() => clearTimeout(timer));
    const seen: unknown[] = [];
    const started = performance.now();
    const error = await (async () => {
      for await (const row of stream(client, { executionId: ID }, { pageSize: 2, concurrency: 4 })) seen.push(row['id']);
    })().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ValueDecodeError);
    expect(error).toMatchObject({ code: 'VALUE_DECODE', column: 'n', type: 'bigint', rowOffset: 5, value: 'oops' });
    expect((error as Error).message).toBe('column "n" (bigint), row 5: "oops" is not an integer (bigint)');
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    // The slow pages (20 s each) were aborted, not awaited to their end, and nothing is left open
    // or started after. The bound leaves room for a loaded CI machine.
    expect(performance.now() - started).toBeLessThan(10_000);
    // Counted where requests start, in the client: one already sent may reach a loaded server's
    // handler only after the error (its bytes were on the wire), which is not a request started after.
    const requests = client.stats.requests;
    await vi.waitFor(() => expect(server.open).toBe(0), { timeout: 5_000 });
    expect(server.received.filter((r) => r.url.includes('offset=6') || r.url.includes('offset=8')).length).toBeGreaterThan(0);
    expect(client.stats.requests).toBe(requests);
    expect(server.received.length).toBeLessThanOrEqual(requests);
  });

  it('the same misfit in batches() is the same error (Arrow never sees the value)', async () => {
    const { client } = await serve({ names: ['d'], types: ['date'], row: (i) => ({ d: i === 7 ? '2026-02-30' : '2026-01-01' }) });
    const error = await (async () => {
      for await (const _ of stream(client, { executionId: ID }, { pageSize: 3 }).batches()) void _;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValueDecodeError);
    expect(error).toMatchObject({ column: 'd', rowOffset: 7, value: '2026-02-30' });
  });
});

describe('misfits through every JSON decode path of batches()', () => {
  // Page by page and re-cut batches: the same error every time. The
  // nanosecond timestamp of year 9999 decodes but does not fit Int64 (an Arrow error); the date
  // after it does not decode, and decoding comes first.
  const paths = [
    ['page by page', {}, {}],
    ['batchSize 4', {}, { batchSize: 4 }],
  ] as const;
  const row = (bad: 'arrow' | 'both') => (i: number) => ({
    id: i,
    ts: i === 7 ? '9999-12-31 00:00:00.000000000' : '2026-01-01 10:15:30.123456789',
    d: i === 7 && bad === 'both' ? '2026-02-30' : '2026-01-01',
  });

  it('a value Arrow cannot hold is an ArrowValueError naming column, row offset and value', async () => {
    const { client } = await serve({ names: ['id', 'ts', 'd'], types: ['integer', 'timestamp(9)', 'date'], row: row('arrow') });
    for (const [label, options, batchOptions] of paths) {
      const rows: number[] = [];
      const error = await (async () => {
        for await (const b of stream(client, { executionId: ID }, { pageSize: 3, ...options }).batches(batchOptions)) rows.push(b.numRows);
      })().catch((e: unknown) => e);
      expect(error, label).toBeInstanceOf(ArrowValueError);
      expect(error, label).toMatchObject({ code: 'ARROW_VALUE', column: 'ts', type: 'timestamp(9)', rowOffset: 7, path: '', value: '9999-12-31 00:00:00.000000000', reason: 'does not fit in 64 bits' });
      // The batches before the bad row's arrive.
      expect(rows.reduce((a, b) => a + b, 0), label).toBe(batchOptions === undefined || !('batchSize' in batchOptions) ? 6 : 4);
    }
  });

  it('a row with a value that does not decode is that ValueDecodeError, even after a value Arrow cannot hold', async () => {
    const { client } = await serve({ names: ['id', 'ts', 'd'], types: ['integer', 'timestamp(9)', 'date'], row: row('both') });
    for (const [label, options, batchOptions] of paths) {
      const error = await (async () => {
        for await (const _ of stream(client, { executionId: ID }, { pageSize: 3, ...options }).batches(batchOptions)) void _;
      })().catch((e: unknown) => e);
      expect(error, label).toBeInstanceOf(ValueDecodeError);
      expect(error, label).toMatchObject({ code: 'VALUE_DECODE', column: 'd', type: 'date', rowOffset: 7, value: '2026-02-30' });
      expect((error as Error).message, label).toBe('column "d" (date), row 7: "2026-02-30" is not a valid date (YYYY-MM-DD)');
    }
  });
});

describe('a bad value outside the rows read', () => {
  it('is no error on any path: only the rows read are decoded', async () => {
    const { client } = await serve({ names: ['id', 'd'], types: ['integer', 'date'], row: (i) => ({ id: i, d: i === 5 ? '2026-02-30' : '2026-01-01' }) });
    for (const [startOffset, endOffset] of [
      [0, 5],
      [6, TOTAL],
      [1, 4],
    ] as const) {
      const expected = Array.from({ length: endOffset - startOffset }, (_, k) => startOffset + k);
      const rows: unknown[] = [];
      for await (const r of stream(client, { executionId: ID }, { pageSize: 3, wire: 'json', startOffset, endOffset })) rows.push(r['id']);
      expect(rows, `rows ${startOffset}-${endOffset}`).toEqual(expected);
      const ids: unknown[] = [];
      for await (const b of stream(client, { executionId: ID }, { pageSize: 3, wire: 'json', startOffset, endOffset }).batches()) ids.push(...b.getChild('id')!);
      expect(ids, `batches ${startOffset}-${endOffset}`).toEqual(expected);
    }
  });
});

describe('a bad value in the last page', () => {
  it('ends the read after the rows before it on every path, however early its page was fetched', async () => {
    const { client } = await serve({ names: ['id', 'd'], types: ['integer', 'date'], row: (i) => ({ id: i, d: i === 9 ? '2026-02-30' : '2026-01-01' }) });
    const rows = await idsUntilError(client, 'rows', { pageSize: 4, wire: 'json' });
    expect(rows.error).toBeInstanceOf(ValueDecodeError);
    expect(rows.seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // A batch is a page: the one with the bad value is not delivered.
    const batches = await idsUntilError(client, 'batches', { pageSize: 4, wire: 'json' });
    expect(batches.error).toBeInstanceOf(ValueDecodeError);
    expect(batches.seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('two columns of one name', () => {
  it('are refused with InvalidResponseError before any row is delivered, naming the column', async () => {
    // What the wire carries for SELECT 1 AS a, 2 AS a, 3 AS "A": one key `a`, holding the last value.
    const { client } = await serve({ names: ['a', 'a', 'A'], types: ['integer', 'integer', 'integer'], row: () => ({ a: 2, A: 3 }) });
    const s = stream(client, { executionId: ID });
    const error = await s.info().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'INVALID_RESPONSE', executionId: ID });
    expect((error as Error).message).toContain('column name "a" appears more than once');
    const rows = await (async () => {
      for await (const _ of s) void _;
    })().catch((e: unknown) => e);
    expect(rows).toBeInstanceOf(InvalidResponseError);
  });
});

describe('progress', () => {
  it('httpBytes counts the HTTP bodies of the pages, bytes the service\'s result_set_bytes', async () => {
    const { client, bodies } = await serve({ names: ['id'], types: ['integer'], row: (i) => ({ id: i }) });
    const events: Progress[] = [];
    const s = stream(client, { executionId: ID }, { pageSize: 4, concurrency: 2, onProgress: (p) => events.push(p) });
    for await (const _ of s) void _;
    expect(bodies).toHaveLength(3);
    expect(events.map((p) => p.httpBytes)).toEqual([bodies[0], bodies[0]! + bodies[1]!, bodies[0]! + bodies[1]! + bodies[2]!]);
    expect(events.at(-1)).toMatchObject({ pages: 3, rows: TOTAL, bytes: TOTAL * 2, totalRows: TOTAL, etaMs: 0 });
  });
});

describe('pages read from their text', () => {
  // The calling thread reads a JSON page's rows straight from its text (the first page's too, once
  // it knows the columns); a page it cannot read so (here: escapes in a string) is parsed the general way. Either way a read gives
  // the rows the general path gives, also from and to offsets inside a page.
  const names = ['id', 'name', 'ts', 'amount', 'big'];
  const types = ['integer', 'varchar', 'timestamp(6) with time zone', 'decimal(18, 4)', 'bigint'];
  const row = (i: number) => ({
    id: i,
    name: i === 4 ? 'a "quoted" name\non two lines' : i % 2 === 0 ? `event ${i} with a name longer than thirteen chars` : `é ${i} ✓`,
    ts: `2026-01-0${1 + (i % 9)} 10:15:30.12345${i % 10} UTC`,
    amount: i === 6 ? null : `${i}.5000`,
    big: i === 8 ? 12_345_678_901_234 : -i,
  });

  it('rows() and batches() give the rows of the general path, and only pages with escapes are parsed whole', async () => {
    const { client } = await serve({ names, types, row });
    const expected = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, k) => {
        const r = row(from + k);
        return { ...r, ts: new Date(`${r.ts.slice(0, 10)}T${r.ts.slice(11, 23)}Z`), big: BigInt(r.big) };
      });
    const parsed: number[] = [];
    const parse = JSON.parse;
    const spy = vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      if (text.includes('"rows":[{')) parsed.push(Number(/"row_count":(\d+)/.exec(text)?.[1] ?? -1));
      return parse(text, reviver);
    });
    try {
      for (const [from, to] of [
        [0, TOTAL],
        [1, 8],
        [5, 6],
      ] as const) {
        parsed.length = 0;
        const rows: Record<string, unknown>[] = [];
        for await (const r of stream(client, { executionId: ID }, { pageSize: 3, startOffset: from, endOffset: to })) rows.push(r);
        expect(rows, `${from}-${to}`).toEqual(expected(from, to));
        // Only the page of rows 3 to 5 (escapes in row 4), which each of these reads reads, was parsed
        // whole; a first page's rows too are read from its text.
        expect(parsed.length, `${from}-${to}`).toBe(1);

        let batched = 0;
        const ids: number[] = [];
        for await (const b of stream(client, { executionId: ID }, { pageSize: 3, startOffset: from, endOffset: to }).batches()) {
          batched += b.numRows;
          for (const v of b.getChild('id')!) ids.push(v as number);
          expect(b.getChild('name')!.toArray(), `${from}-${to}`).toEqual(expected(from + batched - b.numRows, from + batched).map((r) => r.name));
        }
        expect(ids).toEqual(expected(from, to).map((r) => r.id));
      }
    } finally {
      spy.mockRestore();
    }
  });
});

describe('page bodies', () => {
  const row = (i: number) => ({ id: i, name: i % 2 === 0 ? `row ${i}` : `row ${i} é` });

  it('are freed once their rows are read, after their text was made, and rows and batches are whole', async () => {
    const { client, bodies } = await serve({ names: ['id', 'name'], types: ['integer', 'varchar'], row });
    const freed: number[] = [];
    const transfer = ArrayBuffer.prototype.transfer;
    const spy = vi.spyOn(ArrayBuffer.prototype, 'transfer').mockImplementation(function (this: ArrayBuffer, length?: number) {
      if (length === 0) freed.push(this.byteLength);
      return transfer.call(this, length);
    });
    try {
      const rows: Record<string, unknown>[] = [];
      for await (const r of stream(client, { executionId: ID }, { pageSize: 3 })) rows.push(r);
      expect(rows).toEqual(Array.from({ length: TOTAL }, (_, i) => row(i)));
      // Pages at 0, 3, 6 and 9: the first is read before the stream knows its columns and is left to the collector.
      expect(freed).toEqual(bodies.slice(1));
      freed.length = 0;
      bodies.length = 0;
      const names: unknown[] = [];
      for await (const b of stream(client, { executionId: ID }, { pageSize: 3, wire: 'json' }).batches()) names.push(...b.getChild('name')!);
      expect(names).toEqual(rows.map((r) => r['name']));
      expect(freed).toEqual(bodies.slice(1));
    } finally {
      spy.mockRestore();
    }
  });

  it("are never freed when a caller's own client hands them out (it may keep them)", async () => {
    const { client } = await serve({ names: ['id', 'name'], types: ['integer', 'varchar'], row });
    const kept: { body: Buffer; copy: Buffer }[] = [];
    const own = new Proxy(client, {
      get(target, key) {
        if (key === 'getResultsWire') {
          return async (...args: Parameters<ServiceClient['getResultsWire']>) => {
            const answer = await target.getResultsWire(...args);
            if (answer.format !== 'json') return answer;
            const body = Buffer.from(new ArrayBuffer(answer.body.length));
            answer.body.copy(body);
            kept.push({ body, copy: Buffer.from(body) });
            return { ...answer, body, parse: answer.parse, parseText: answer.parseText };
          };
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const rows: Record<string, unknown>[] = [];
    for await (const r of stream(own, { executionId: ID }, { pageSize: 3 })) rows.push(r);
    expect(rows).toEqual(Array.from({ length: TOTAL }, (_, i) => row(i)));
    expect(kept.length).toBeGreaterThan(1);
    for (const { body, copy } of kept) expect(body.equals(copy)).toBe(true);
  });

  it('are freed only when the transport made them, whole, never a slice of a shared buffer', () => {
    const made = madeBody(Buffer.from(new ArrayBuffer(16)));
    releaseBody(made);
    expect(made.buffer.byteLength).toBe(0);
    const callers = Buffer.from(new ArrayBuffer(16)).fill(7);
    releaseBody(callers);
    expect([...callers]).toEqual(Array(16).fill(7));
    const shared = new ArrayBuffer(32);
    const head = madeBody(Buffer.from(shared, 0, 16).fill(1));
    const tail = madeBody(Buffer.from(shared, 16, 16).fill(2));
    releaseBody(head, true);
    releaseBody(tail, true);
    expect(shared.byteLength).toBe(32);
    expect([...head, ...tail]).toEqual([...Array(16).fill(1), ...Array(16).fill(2)]);
    const own = Buffer.from(new ArrayBuffer(8));
    releaseBody(own, true);
    expect(own.buffer.byteLength).toBe(0);
  });
});

describe('pages read from their text, against a service that breaks the rules', () => {
  it('a page with more rows than asked: the next page starts after them, and no row comes twice', async () => {
    // The page at offset 3 holds rows 3-6 (4 rows for a limit of 3) and says next_offset 7.
    const { client } = await serve({ names: ['id', 'name'], types: ['integer', 'varchar'], row: (i) => ({ id: i, name: `n${i}` }), limitAt: (offset, asked) => (offset === 3 ? asked + 1 : asked) });
    const rows: unknown[] = [];
    for await (const r of stream(client, { executionId: ID }, { pageSize: 3 })) rows.push(r['id']);
    expect(rows).toEqual(Array.from({ length: TOTAL }, (_, i) => i));
    const ids: unknown[] = [];
    const names: unknown[] = [];
    for await (const b of stream(client, { executionId: ID }, { pageSize: 3 }).batches()) {
      for (const v of b.getChild('id')!) ids.push(v);
      for (const v of b.getChild('name')!) names.push(v);
    }
    expect(ids).toEqual(Array.from({ length: TOTAL }, (_, i) => i));
    expect(names).toEqual(Array.from({ length: TOTAL }, (_, i) => `n${i}`));
  });

  it('a page whose column types changed is refused for that, before its values are decoded: the same InvalidResponseError on every path', async () => {
    const { client } = await serve({ names: ['id', 'x'], types: ['integer', 'varchar'], row: (i) => ({ id: i, x: `v${i}` }), typesAt: (offset) => (offset === 3 ? ['integer', 'date'] : undefined) });
    for (const read of ['rows', 'batches'] as const) {
      const { seen, error } = await idsUntilError(client, read, { pageSize: 3, wire: 'json', concurrency: 1 });
      expect(error, read).toBeInstanceOf(InvalidResponseError);
      expect((error as Error).message, read).toMatch(/columns changed between pages/);
      expect(seen, read).toEqual([0, 1, 2]);
    }
  });

  it('a page behind a byte order mark is not JSON on every path, as JSON.parse says: an InvalidResponseError after the rows before it', async () => {
    const { client } = await serve({ names: ['id'], types: ['integer'], row: (i) => ({ id: i }), prefixAt: (offset) => (offset === 6 ? '\ufeff' : '') });
    for (const read of ['rows', 'batches'] as const) {
      const { seen, error } = await idsUntilError(client, read, { pageSize: 3, wire: 'json', concurrency: 1 });
      expect(error, read).toBeInstanceOf(InvalidResponseError);
      // The request the page answered, whichever thread read it.
      expect((error as Error).message, read).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/\S*results\S*offset=6/);
      expect(seen, read).toEqual([0, 1, 2, 3, 4, 5]);
    }
  });

  it('an Arrow stream where JSON was asked for is an InvalidResponseError, after the rows before it', async () => {
    const { client } = await serve({
      names: ['id'],
      types: ['integer'],
      row: (i) => ({ id: i }),
      headersAt: (offset) => (offset === 6 ? { 'content-type': 'application/vnd.apache.arrow.stream' } : undefined),
    });
    for (const read of ['rows', 'batches'] as const) {
      const { seen, error } = await idsUntilError(client, read, { pageSize: 3, wire: 'json' });
      expect(error, read).toBeInstanceOf(InvalidResponseError);
      expect(seen, read).toEqual([0, 1, 2, 3, 4, 5]);
    }
  });
});

describe('Arrow pages against a service that breaks the rules', () => {
  it('a page whose row count header disagrees with its rows delivers none of them, as a JSON page does', async () => {
    const columns = [{ name: 'id', type: 'integer' }];
    const decode = compileRowDecoder(columns);
    const http = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/status')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(STATUS);
        return;
      }
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const end = Math.min(TOTAL, offset + Number(url.searchParams.get('limit') ?? 3));
      const builder = createBatchBuilder(columns);
      for (let i = offset; i < end; i++) builder.append(decode({ id: i }, i));
      const ipc = Buffer.from(RecordBatchStreamWriter.writeAll([builder.flush()]).toUint8Array(true));
      // The page at offset 3 holds 3 rows and says 4.
      const rowCount = end - offset + (offset === 3 ? 1 : 0);
      const metadata = { column_names: ['id'], column_types: ['integer'], row_count: rowCount, result_set_bytes: 1, total_row_count: TOTAL, total_result_set_bytes: 1, datapoint_count: 1 };
      const next = end < TOTAL ? { next_offset: end } : {};
      res.writeHead(200, { 'content-type': ARROW_STREAM_MEDIA_TYPE, 'content-length': ipc.length, ...arrowPageHeaders({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', metadata, ...next }) }).end(ipc);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    client = new ServiceClient({ apiKey: 'k', baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}/api`, retry: { attempts: 1, baseDelayMs: 1 } });
    try {
      const seen: unknown[] = [];
      const error = await (async () => {
        for await (const b of stream(client!, { executionId: ID }, { pageSize: 3, wire: 'arrow', concurrency: 1 }).batches()) for (const v of b.getChild('id')!) seen.push(v);
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidResponseError);
      expect((error as Error).message).toMatch(/holds 3 rows but its row count says 4/);
      expect(seen).toEqual([0, 1, 2]);
    } finally {
      await client.close();
      client = undefined;
      await new Promise((resolve) => http.close(resolve));
    }
  });
});
