// The native decode path of the JSON and CSV wires: pages handed to DuckDB typed from column_types,
// written to Parquet by DuckDB. Its files must hold the values the general path (JS decoders,
// apache-arrow, parquet-wasm) writes: both are read back by two independent readers (DuckDB,
// hyparquet) and compared value by value, over the type matrix of sample.all_types and over parts
// cut across pages, from JSON pages and from CSV pages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { nativeColumns, type NativeColumn, type NativePages } from '../../src/pipeline/nativeWire/duckdbColumns.ts';
import { writeNativeParts, type NativePart, type NativePartsInput } from '../../src/pipeline/nativeWire/nativeParts.ts';
import { csvHeaderOf } from '../../src/pipeline/nativeWire/nativePages.ts';
import { ValueDecodeError } from '../../src/types/errors.ts';
import { InvalidResponseError } from '../../src/client/errors.ts';
import { ALL_TYPES_COLUMN_TYPES } from '../helpers/allTypes.ts';
import { withDuckDb } from '../helpers/duckdb.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMisbehavingServer } from '../client/misbehavingServer.ts';
import { startProxy } from '../helpers/proxy.ts';

let svc: TestService;
let dir: string;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 5 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-native-test-'));
});
afterAll(async () => {
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The columns of sample.all_types the native path takes (the others are refused, with a reason). */
const NATIVE_TYPES = Object.entries(ALL_TYPES_COLUMN_TYPES).filter(([name, type]) => 'columns' in nativeColumns([{ name, type }]));

async function runSql(client: ServiceClient, sql: string): Promise<string> {
  const execution = await client.execute({ sql });
  await execution.wait();
  return execution.id;
}

/** The general path's file: writeExport over JSON pages, one thread. */
async function generalFile(client: ServiceClient, executionId: string, out: string): Promise<string> {
  const s = stream(client, { executionId }, { wire: 'json' });
  const info = await s.info();
  const output = resolveOutput({ format: 'parquet', path: out }, builtins);
  await writeExport({ schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows } }, output);
  const names = (await readdir(out)).filter((n) => n.endsWith('.parquet'));
  return join(out, names[0]!);
}

/**
 * A result read the native way over `pages`: its columns, and `write`, which writes `parts` of it
 * with the stream's range reader (zstd, DuckDB's default row groups unless `more` says otherwise).
 */
async function nativeOver(client: ServiceClient, executionId: string, pages: NativePages) {
  const s = stream(client, { executionId }, { wire: 'json' });
  const info = await s.info();
  const reader = (await s.rangeReader())!;
  const native = nativeColumns(info.columns, pages);
  if (!('columns' in native)) throw new Error(native.reason);
  const write = (parts: readonly NativePart[], store: NativePartsInput['store'], more: Partial<NativePartsInput> = {}) =>
    writeNativeParts({ reader, specs: info.columns, columns: native.columns as NativeColumn[], pages, parts, parquet: { compression: 'zstd', rowGroupSize: 122_880, metadata: {} }, store, ...more });
  return { info, write };
}

/** The native path's files: one per part, in part order. */
async function nativeFiles(client: ServiceClient, executionId: string, parts: readonly NativePart[], out: string, pages: NativePages): Promise<string[]> {
  const { write } = await nativeOver(client, executionId, pages);
  const files: string[] = [];
  await write(parts, async (part, file) => {
    const target = join(out, `part-${part.index}.parquet`);
    await copyFile(file, target);
    files.push(target);
  });
  return files;
}

async function duckRead(files: readonly string[]): Promise<Record<string, unknown>[]> {
  return withDuckDb(async (con) => (await con.runAndReadAll(`SELECT * FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}])`)).getRowObjectsJS());
}

async function hypRead(files: readonly string[]): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const f of files) {
    const b = await readFile(f);
    rows.push(...(await parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer, compressors })));
  }
  return rows;
}

describe('native JSON wire to Parquet', () => {
  it('refuses, with the column and why, the types DuckDB cannot hold as the general writer does', () => {
    const refused = nativeColumns([
      { name: 'id', type: 'bigint' },
      { name: 'big', type: 'uint256' },
    ]);
    expect(refused).toEqual({ reason: expect.stringContaining('column "big" (uint256)') });
    expect(nativeColumns([{ name: 'a', type: 'integer' }, { name: 'A', type: 'integer' }])).toEqual({ reason: expect.stringContaining('differ only in case') });
    expect(NATIVE_TYPES.map(([n]) => n)).toEqual(
      expect.arrayContaining(['c_boolean', 'c_tinyint', 'c_bigint', 'c_real', 'c_double', 'c_decimal', 'c_varchar', 'c_date', 'c_timestamp', 'c_timestamptz', 'c_timestamp_ms', 'c_timestamp_ns', 'c_uuid']),
    );
  });

  for (const pages of ['json', 'csv'] as const) {
    it(`writes from ${pages} pages the values of the type matrix the general path writes (DuckDB and hyparquet read both)`, async () => {
      const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin });
      try {
        // Beyond the matrix: NaN, infinities, 2^53 + 1, a quote; the empty string beside NULL, a
        // comma, quotes and a line end (CSV quoting), the text <nil> (NULL only where it cannot be a value).
        const sql = `SELECT ${NATIVE_TYPES.map(([n]) => n).join(', ')} FROM sample.all_types
          UNION ALL SELECT 5, true, 0, 0, 0, 9007199254740993, 'NaN'::REAL, '-Infinity'::DOUBLE, 0.5, 'x''y', DATE '2026-01-01',
            TIMESTAMP '2026-01-01 00:00:00.5', TIMESTAMPTZ '2026-01-01 00:00:00.000001+00', TIMESTAMP_MS '2026-01-01 00:00:00.001', TIMESTAMP_NS '2026-01-01 00:00:00.000000001', uuid()
          UNION ALL SELECT 6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL, TIMESTAMPTZ '1969-12-31 23:59:59.999999+00', NULL, NULL, NULL
          UNION ALL SELECT 7, false, -128, NULL, NULL, -9223372036854775808, 'Infinity'::REAL, 1e-300, -0.5, 'a,"b"' || chr(10) || 'c', DATE '0001-01-01',
            NULL, TIMESTAMPTZ '2026-06-30 12:00:00+00', NULL, NULL, NULL
          UNION ALL SELECT 8, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '<nil>', NULL, NULL, NULL, NULL, NULL, NULL
          ORDER BY id`;
        const id = await runSql(client, sql);
        const general = await generalFile(client, id, join(dir, `matrix-general-${pages}`));
        const native = await nativeFiles(client, id, [{ index: 0, firstRow: 0, rows: 8 }], await mkdtemp(join(dir, 'matrix-native-')), pages);
        const [g, n] = [await duckRead([general]), await duckRead(native)];
        expect(n).toHaveLength(8);
        expect(n).toEqual(g);
        expect(n[1]!['c_bigint']).toBe(9223372036854775807n);
        expect(Number.isNaN(n[4]!['c_real'])).toBe(true);
        expect(n.slice(5).map((r) => r['c_varchar'])).toEqual(['', 'a,"b"\nc', '<nil>']);
        const [hg, hn] = [await hypRead([general]), await hypRead(native)];
        expect(hn).toEqual(hg);
      } finally {
        await client.close();
      }
    });

    it(`cuts parts across pages of 5 rows from ${pages} pages as the part plan asks, in order, every row once`, async () => {
      const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin });
      try {
        const id = await runSql(client, 'SELECT * FROM sample.events WHERE id < 23 ORDER BY id');
        const parts = [0, 1, 2, 3].map((index) => ({ index, firstRow: index * 7, rows: Math.min(7, 23 - index * 7) }));
        // A resumed export writes only the parts it misses: part 1 is left out.
        const files = await nativeFiles(client, id, [parts[0]!, parts[2]!, parts[3]!], await mkdtemp(join(dir, 'parts-')), pages);
        const ids = await Promise.all(files.map(async (f) => (await duckRead([f])).map((r) => r['id'])));
        expect(ids).toEqual([[0n, 1n, 2n, 3n, 4n, 5n, 6n], [14n, 15n, 16n, 17n, 18n, 19n, 20n], [21n, 22n]]);
        const general = await generalFile(client, id, join(dir, `parts-general-${pages}`));
        expect(await duckRead(files)).toEqual((await duckRead([general])).filter((r) => (r['id'] as bigint) < 7n || (r['id'] as bigint) >= 14n));
      } finally {
        await client.close();
      }
    });
  }
});

describe('native wire, bad pages', () => {
  const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const specs = [
    { name: 'id', type: 'bigint' },
    { name: 'n', type: 'integer' },
  ];
  const page = (rows: { id: unknown; n: unknown }[]) =>
    JSON.stringify({
      execution_id: ID,
      query_id: 0,
      state: 'QUERY_STATE_COMPLETED',
      is_execution_finished: true,
      result: { rows, metadata: { column_names: ['id', 'n'], column_types: ['bigint', 'integer'], row_count: rows.length, result_set_bytes: 10, total_row_count: 3, total_result_set_bytes: 10, datapoint_count: 6 } },
    });
  const csv = (rows: { id: unknown; n: unknown }[], header = 'id,n') => `${header}\n${rows.map((r) => `${String(r.id)},${String(r.n)}`).join('\n')}\n`;

  /** What writeNativeParts raises over a service answering these pages, and how many parts it stored. */
  async function failure(pages: NativePages, rows: { id: unknown; n: unknown }[], header?: string): Promise<{ error: unknown; stored: number }> {
    const server = await startMisbehavingServer((req) =>
      req.url?.includes('/status')
        ? { body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true }) }
        : req.url?.includes('/results/csv')
          ? { body: csv(rows, header), headers: { 'content-type': 'text/csv; charset=utf-8' } }
          : { body: page(rows) },
    );
    try {
      const native = nativeColumns(specs, pages);
      if (!('columns' in native)) throw new Error(native.reason);
      let stored = 0;
      const error = await writeNativeParts({
        reader: { connection: { baseUrl: server.baseUrl, apiKey: 'k', retry: { attempts: 1 } }, executionId: ID, totalRows: 3, options: { wire: 'json', pageSize: 3 }, page: () => undefined },
        specs,
        columns: native.columns as NativeColumn[],
        pages,
        parts: [{ index: 0, firstRow: 0, rows: 3 }],
        parquet: { compression: 'zstd', rowGroupSize: 1000, metadata: {} },
        store: async () => {
          stored++;
        },
      }).catch((e: unknown) => e);
      return { error, stored };
    } finally {
      await server.close();
    }
  }

  for (const pages of ['json', 'csv'] as const) {
    for (const [what, bad, reason] of [
      ['a string in a bigint column', { id: 'abc', n: 1 }, 'id'],
      ['a fraction in an integer column (DuckDB alone would round it)', { id: 2, n: 1.5 }, 'n'],
    ] as const) {
      it(`names the column, row and value of ${what} in ${pages} pages, and stores no part`, async () => {
        const { error, stored } = await failure(pages, [{ id: 0, n: 0 }, { id: 1, n: 1 }, bad]);
        expect(error).toBeInstanceOf(ValueDecodeError);
        expect((error as ValueDecodeError).column).toBe(reason);
        expect((error as ValueDecodeError).rowOffset).toBe(2);
        expect(String((error as ValueDecodeError).value)).toBe(String(bad[reason]));
        expect(stored).toBe(0);
      });
    }
  }

  it('refuses CSV pages whose header is not the result columns in order, and stores no part', async () => {
    const { error, stored } = await failure('csv', [{ id: 0, n: 0 }], 'n,id');
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toMatch(/CSV page at row 0 starts with "n,id", not the result's columns "id,n"/);
    expect(stored).toBe(0);
  });

  it('reads a CSV header however RFC 4180 quotes it, and writes the part', async () => {
    expect(csvHeaderOf(Buffer.from('a,"b,""c""",\n1,2,3\n'))).toEqual(['a', 'b,"c"', '']);
    expect(csvHeaderOf(Buffer.from('a,"b'))).toBeUndefined();
    const { error, stored } = await failure('csv', [{ id: 0, n: 0 }, { id: 1, n: 1 }, { id: 2, n: 2 }], '"id","n"');
    expect(error).toBeUndefined();
    expect(stored).toBe(1);
  });

  it('refuses a CSV line with a field too many, and stores no part', async () => {
    const { error, stored } = await failure('csv', [{ id: 0, n: 0 }, { id: 1, n: '1,2' }, { id: 2, n: 2 }]);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toMatch(/DuckDB could not read the result's pages/);
    expect(stored).toBe(0);
  });

  it('refuses a CSV page holding fewer rows than its paging says, and stores no part', async () => {
    const { error, stored } = await failure('csv', [{ id: 0, n: 0 }, { id: 1, n: 1 }]);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toMatch(/part 0 should hold 3 rows from row 0, its pages held 2/);
    expect(stored).toBe(0);
  });
});

describe('native wire, DuckDB opening beside the first pages', () => {
  it('a DuckDB that cannot open fails the export, naming its settings, once the pages are in; no part stored, no staging folder left', async () => {
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin });
    // The staging folder goes under TMPDIR (os.tmpdir() reads it on each call): one of this test's own.
    const staging = await mkdtemp(join(dir, 'tmp-'));
    const saved = process.env.TMPDIR;
    try {
      const executionId = await runSql(client, 'select range AS id from range(12)');
      const { write } = await nativeOver(client, executionId, 'json');
      process.env.TMPDIR = staging;
      let stored = 0;
      const error = await write(
        [{ index: 0, firstRow: 0, rows: 12 }],
        async () => {
          stored++;
        },
        { parquet: { compression: 'zstd', rowGroupSize: 1000, metadata: {} }, memoryLimit: 'a lot' },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/DuckDB .*did not start.*memory_limit "a lot"/);
      expect(stored).toBe(0);
      expect(await readdir(staging)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await client.close();
    }
  });
});

// The native path reads the parts of an export as row ranges: the pages holding the parts' rows
// and no others, parts that follow each other as one stream of pages. Counted on the wire, through
// a proxy in front of the local service: a part must not follow next_offset past its last row (each
// part read the result to its end once, some 2.5x the bytes of the result for an export of four
// parts), and a page holding rows of two parts is asked for once (each part asked for its own pages,
// so such a page twice, and the requests in flight ran dry at every part's end).
describe('native parts read their own pages', () => {
  // Parts of 12 rows on pages of 5: the second part starts and the third ends mid-page. Rows
  // [0,12) on pages 0,5,10; [12,24) on 10,15,20; [24,36) on 20,25,30,35; [36,40) on 35.
  const cases = [
    { what: 'every part', indexes: [0, 1, 2, 3], offsets: [0, 5, 10, 15, 20, 25, 30, 35] },
    // A resumed export with part 1 kept: part 0, then parts 2 and 3 from the page holding row 24.
    { what: 'the parts a resumed export misses', indexes: [0, 2, 3], offsets: [0, 5, 10, 20, 25, 30, 35] },
  ];
  for (const pages of ['csv', 'json'] as const) {
    for (const { what, indexes, offsets } of cases) {
      it(`asks over ${pages} pages, for ${what}, for each page of the parts once, and writes every row once`, async () => {
        const requests: string[] = [];
        const proxy = await startProxy(svc.url, (url) => {
          if (url.includes('/results')) requests.push(new URL(url, 'http://x').searchParams.get('offset') ?? '');
          return undefined;
        });
        // The client's request hooks (telemetry's traceparent) see every request it sends.
        const hooked: string[] = [];
        const requestHeaders = (operation: string) => (hooked.push(operation), {});
        const client = new ServiceClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.demo.admin, requestHeaders });
        try {
          const execution = await client.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 40' });
          await execution.wait();
          const { write } = await nativeOver(client, execution.id, pages);
          requests.length = 0;
          const sent = client.stats.requests;
          hooked.length = 0;
          const parts: NativePart[] = indexes.map((index) => ({ index, firstRow: index * 12, rows: Math.min(12, 40 - index * 12) }));
          const files: string[] = [];
          await write(parts, async (part, file) => {
            const target = join(dir, `ranges-${pages}-${indexes.length}-${part.index}.parquet`);
            await copyFile(file, target);
            files.push(target);
          });
          // Requests in flight together may reach the proxy in any order.
          expect(requests.map(Number).sort((a, b) => a - b)).toEqual(offsets);
          // Over the stream's own client, whose connections are open (not a client of their own).
          expect(client.stats.requests - sent).toBe(offsets.length);
          expect(hooked).toHaveLength(offsets.length);
          const ids = await Promise.all(files.map(async (f) => (await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT id FROM read_parquet('${f}')`)).getRowObjectsJS())).map((r) => Number(r['id']))));
          expect(ids).toEqual(parts.map((p) => Array.from({ length: p.rows }, (_, i) => p.firstRow + i)));
        } finally {
          await client.close();
          await proxy.close();
        }
      });
    }
  }
});

// DuckDB writes a part while the next one's pages come in; one that writes (or stores) more slowly
// than the link brings the next part must not stop the link: the part after waits its turn on disk.
describe('native parts, a slow write', () => {
  it('fetches the pages of the part after next while the first part is still being stored, and writes every row once', async () => {
    const requests: number[] = [];
    let seen: (() => void) | undefined;
    // The last page of part 2 (parts of 40 rows over pages of 5: pages 80 to 115).
    const lastOfPart2 = new Promise<void>((resolve) => (seen = resolve));
    const proxy = await startProxy(svc.url, (url) => {
      if (!url.includes('/results')) return undefined;
      const offset = Number(new URL(url, 'http://x').searchParams.get('offset'));
      requests.push(offset);
      if (offset === 115) seen!();
      return undefined;
    });
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const { parts, write } = await idsOverCsv(client);
      requests.length = 0;
      const ids: number[][] = [];
      await write(async (part, file) => {
        if (part.index === 0) {
          // Eight pages past the pages in flight: only fetched if the pages run ahead of the writes.
          const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('part 2 was not fetched while part 0 was being stored')), 5_000));
          await Promise.race([lastOfPart2, late]);
        }
        ids.push(await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT id FROM read_parquet('${file}')`)).getRowObjectsJS().map((r) => Number(r['id']))));
      });
      expect(ids).toEqual(parts.map((p) => Array.from({ length: p.rows }, (_, i) => p.firstRow + i)));
      expect(requests.sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, k) => k * 5));
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

// DuckDB writes a part as soon as it has written the one before, not once that one is stored: the
// store runs beside the next statement, and the last part (the export's tail) waits for no store.
describe('native parts, a store beside the next write', () => {
  it('writes part 1 while part 0 is still being stored, stores them in order, and writes every row once', async () => {
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const { parts, write } = await idsOverCsv(client);
      const order: number[] = [];
      const ids: number[][] = [];
      await write(async (part, file) => {
        order.push(part.index);
        if (part.index === 0) {
          // Part 1's file appears in the engine's folder once DuckDB has started writing it.
          const next = join(dirname(file), 'part-1.parquet');
          const deadline = Date.now() + 5_000;
          while (!existsSync(next)) {
            if (Date.now() > deadline) throw new Error('part 1 was not written while part 0 was being stored');
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
        ids.push(await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT id FROM read_parquet('${file}')`)).getRowObjectsJS().map((r) => Number(r['id']))));
      });
      expect(order).toEqual([0, 1, 2]);
      expect(ids).toEqual(parts.map((p) => Array.from({ length: p.rows }, (_, i) => p.firstRow + i)));
    } finally {
      await client.close();
    }
  });
});

// Over CSV pages a part is written as soon as its pages are in, beside a part DuckDB is still
// writing (two connections): part 0, 300,000 rows, takes DuckDB a while; parts 1 and 2, 40 rows
// each, are complete by the time part 0 is (before, each started only once the part before was
// written). The last part, the export's tail, on more of DuckDB's threads: the same bytes.
describe('native parts, written side by side', () => {
  it('writes later parts while the first is still being written, stores them in order, and writes the files one connection and one thread write', async () => {
    // Tenancy is not tested here: no team instances opened at start.
    const big = await startTestService({ walledTeams: false });
    const client = new ServiceClient({ baseUrl: big.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const execution = await client.execute({ sql: 'SELECT a.id * 2000 + b.id AS id, a.name FROM sample.events a CROSS JOIN sample.events b ORDER BY id LIMIT 300080' });
      await execution.wait();
      const { write } = await nativeOver(client, execution.id, 'csv');
      const parts: NativePart[] = [
        { index: 0, firstRow: 0, rows: 300_000 },
        { index: 1, firstRow: 300_000, rows: 40 },
        { index: 2, firstRow: 300_040, rows: 40 },
      ];
      const laterDone: boolean[][] = [];
      const counts: number[] = [];
      const beside: Buffer[] = [];
      await write(
        parts,
        async (part, file) => {
          // Looked at as soon as part 0 is handed over, before anything else runs: a later part's
          // file is whole (its footer written) only if its statement ran beside part 0's.
          if (part.index === 0) laterDone.push([1, 2].map((i) => wholeParquet(join(dirname(file), `part-${i}.parquet`))));
          counts.push(await withDuckDb(async (con) => Number((await con.runAndReadAll(`SELECT count(DISTINCT id) FROM read_parquet('${file}')`)).getRows()[0]![0])));
          beside.push(await readFile(file));
        },
        { statements: 2 },
      );
      expect([laterDone, counts]).toEqual([[[true, true]], [300_000, 40, 40]]);
      // One connection and one thread, one part after the other: the same files, byte for byte.
      const alone: Buffer[] = [];
      await write(parts, async (_part, file) => void alone.push(await readFile(file)), { statements: 1, threads: 1 });
      expect(beside.map((b, i) => b.equals(alone[i]!))).toEqual([true, true, true]);
      // A last part of ten pages, on DuckDB's threads for the tail (the default), against one thread.
      const tail: NativePart[] = [
        { index: 0, firstRow: 0, rows: 80 },
        { index: 1, firstRow: 80, rows: 300_000 },
      ];
      const files: Buffer[][] = [[], []];
      await write(tail, async (_part, file) => void files[0]!.push(await readFile(file)), { statements: 2 });
      await write(tail, async (_part, file) => void files[1]!.push(await readFile(file)), { statements: 1, threads: 1 });
      expect(files[0]!.map((b, i) => b.equals(files[1]![i]!))).toEqual([true, true]);
    } finally {
      await client.close();
      await big.close();
    }
  });
});

/** A Parquet file whose writer has closed it: its footer's magic at its end (read now, synchronously). */
function wholeParquet(file: string): boolean {
  if (!existsSync(file)) return false;
  const bytes = readFileSync(file);
  return bytes.length > 8 && bytes.subarray(-4).toString('latin1') === 'PAR1';
}

// Pages come in out of order (on a real link, most of the time): a page done before the one at the
// cursor must not hold its request's place, or fewer requests are in flight until the late one comes.
describe('native range reads, a late page', () => {
  it('keeps its requests in flight while the first page is late, and writes every row once', async () => {
    let csvRequests = 0;
    let whileLate = 0;
    let release: (() => void) | undefined;
    const late = new Promise<void>((resolve) => (release = resolve));
    const proxy = await startProxy(
      svc.url,
      (url) => {
        if (url.includes('/results/csv')) csvRequests++;
        // Six requests: the late page, and five after it (four in flight, two done and waiting).
        if (csvRequests >= 6) release!();
        return undefined;
      },
      async (url) => {
        if (!url.includes('/results/csv') || new URL(url, 'http://x').searchParams.get('offset') !== '0') return;
        await Promise.race([late, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        whileLate = csvRequests;
      },
    );
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const execution = await client.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 40' });
      await execution.wait();
      const { write } = await nativeOver(client, execution.id, 'csv');
      const ids: number[] = [];
      await write([{ index: 0, firstRow: 0, rows: 40 }], async (_part, file) => {
        ids.push(...(await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT id FROM read_parquet('${file}')`)).getRowObjectsJS())).map((r) => Number(r['id'])));
      });
      expect(whileLate).toBeGreaterThanOrEqual(6);
      expect(ids).toEqual(Array.from({ length: 40 }, (_, i) => i));
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

describe('native parts, stopped while a part waits its turn', () => {
  it('writes and stores no part after the stop, though its pages are in', async () => {
    let seen: (() => void) | undefined;
    // Asked for once the pages have run past part 1's end (parts of 40 rows over pages of 5,
    // 6 pages ahead at most): part 1 then waits its turn behind part 0's store.
    const partOneIn = new Promise<void>((resolve) => (seen = resolve));
    const proxy = await startProxy(svc.url, (url) => {
      if (url.includes('/results/csv') && new URL(url, 'http://x').searchParams.get('offset') === '115') seen!();
      return undefined;
    });
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const { write } = await idsOverCsv(client);
      const stop = new AbortController();
      const stored: number[] = [];
      const failed = await write(async (part) => {
        stored.push(part.index);
        if (part.index !== 0) return;
        await partOneIn;
        stop.abort(new Error('stopped by the test'));
      }, stop.signal).catch((e: unknown) => e);
      expect([(failed as Error).message, stored]).toEqual(['stopped by the test', [0]]);
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});

/** 120 ids in order, executed, and what a native export over their CSV pages reads them by. */
async function idsOverCsv(client: ServiceClient) {
  const execution = await client.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 120' });
  await execution.wait();
  const native = await nativeOver(client, execution.id, 'csv');
  const parts: NativePart[] = [0, 1, 2].map((index) => ({ index, firstRow: index * 40, rows: 40 }));
  /** The three parts written over CSV pages, each handed to `store`. */
  const write = (store: NativePartsInput['store'], signal?: AbortSignal) => native.write(parts, store, { signal });
  return { parts, write };
}
