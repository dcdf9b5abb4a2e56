// CSV pages in zstd handed to DuckDB as they came off the wire (the native path asks for zstd alone
// and never decodes it in JS): the values written must be those the general path writes, over the
// type matrix; a page cut short must be found before DuckDB reads it (DuckDB reads the blocks that
// are there and would write a part short of rows) and fetched again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, gzipSync, zstdCompressSync } from 'node:zlib';
import { builtins } from '../../connectors/index.ts';
import { ContentEncodingError } from '../../src/client/errors.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { nativeColumns } from '../../src/pipeline/nativeWire/duckdbColumns.ts';
import { writeNativeParts } from '../../src/pipeline/nativeWire/nativeParts.ts';
import { zstdHead, zstdIncomplete } from '../../src/pipeline/nativeWire/zstdFrames.ts';
import { ALL_TYPES_COLUMN_TYPES } from '../helpers/allTypes.ts';
import { withDuckDb } from '../helpers/duckdb.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMisbehavingServer } from '../client/misbehavingServer.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-native-zstd-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const zstd = (text: string, checksum = false) => zstdCompressSync(Buffer.from(text), { params: { [constants.ZSTD_c_compressionLevel]: 1, [constants.ZSTD_c_checksumFlag]: checksum ? 1 : 0 } });

/** CSV text of `n` rows of every kind of field, several zstd blocks long once compressed. */
const manyRows = (n: number) => `id,name\n${Array.from({ length: n }, (_, i) => `${i},"row ${(i * 2654435761) % 1000003} of ""${i % 97}"""`).join('\n')}\n`;

describe('zstd bodies walked whole before DuckDB reads them', () => {
  it('takes whole frames (with or without a checksum, several, a skippable one) and refuses every cut', () => {
    for (const checksum of [false, true]) {
      const body = zstd(manyRows(40_000), checksum);
      expect(zstdIncomplete(body)).toBeUndefined();
      // Every cut: at block boundaries DuckDB reads a shorter page without a word.
      for (let cut = 1; cut < body.length; cut += cut < 64 ? 1 : 997) {
        expect(zstdIncomplete(body.subarray(0, body.length - cut)), `cut ${cut} of ${body.length}`).toBeDefined();
      }
    }
    const two = Buffer.concat([zstd('id\n1\n'), zstd('2\n')]);
    expect(zstdIncomplete(two)).toBeUndefined();
    const skippable = Buffer.alloc(8 + 3);
    skippable.writeUInt32LE(0x184d2a5a, 0);
    skippable.writeUInt32LE(3, 4);
    expect(zstdIncomplete(Buffer.concat([skippable, zstd('id\n1\n')]))).toBeUndefined();
    expect(zstdIncomplete(skippable.subarray(0, 10))).toMatch(/skippable frame cut short/);
    expect(zstdIncomplete(Buffer.from('id,name\n1,a\n'))).toMatch(/no zstd frame at byte 0/);
    expect(zstdIncomplete(Buffer.alloc(0))).toMatch(/empty/);
  });

  it('decodes the head of a page, not all of it', () => {
    const text = manyRows(40_000);
    const head = zstdHead(zstd(text), 1000);
    expect(head.length).toBeGreaterThanOrEqual(1000);
    expect(head.length).toBeLessThan(text.length);
    expect(text.startsWith(head.toString('latin1'))).toBe(true);
    expect(zstdHead(zstd('id\n1\n'), 1000).toString()).toBe('id\n1\n');
  });
});

describe('native CSV pages kept in zstd', () => {
  const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const specs = [
    { name: 'id', type: 'bigint' },
    { name: 'name', type: 'varchar' },
  ];
  const ROWS = 20_000;
  const page = zstd(manyRows(ROWS));

  /** writeNativeParts over a service answering the page with `answers` in turn (the last one from then on), in `coding`. */
  async function run(answers: readonly Buffer[], attempts: number, coding = 'zstd', compression?: 'on') {
    const server = await startMisbehavingServer((req, n) =>
      req.url?.includes('/status')
        ? { body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true }) }
        : { body: answers[Math.min(n - 1, answers.length - 1)]!, headers: { 'content-type': 'text/csv; charset=utf-8', 'content-encoding': coding } },
    );
    const native = nativeColumns(specs, 'csv');
    if (!('columns' in native)) throw new Error(native.reason);
    const files: string[] = [];
    try {
      const error = await writeNativeParts({
        reader: { connection: { baseUrl: server.baseUrl, apiKey: 'sk_test_zstd_key', retry: { attempts, baseDelayMs: 1, maxDelayMs: 1 }, ...(compression === undefined ? {} : { compression }) }, executionId: ID, totalRows: ROWS, options: { wire: 'json', pageSize: ROWS }, page: () => undefined },
        specs,
        columns: native.columns,
        pages: 'csv',
        parts: [{ index: 0, firstRow: 0, rows: ROWS }],
        parquet: { compression: 'zstd', rowGroupSize: 100_000, metadata: {} },
        store: async (_part, file) => {
          const target = join(dir, `kept-${files.length}-${Date.now()}.parquet`);
          await copyFile(file, target);
          files.push(target);
        },
      }).catch((e: unknown) => e);
      return { error, files, received: server.received.filter((r) => r.url.includes('/results/csv')) };
    } finally {
      await server.close();
    }
  }

  it('asks for zstd alone, hands the body to DuckDB undecoded, and writes every row', async () => {
    const { error, files, received } = await run([page], 1);
    expect(error).toBeUndefined();
    expect(received.map((r) => r.headers['accept-encoding'])).toEqual(['zstd']);
    const rows = await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT count(*) AS n, max(id) AS top, min(name) AS low FROM read_parquet('${files[0]}')`)).getRowObjectsJS());
    expect(rows).toEqual([{ n: BigInt(ROWS), top: BigInt(ROWS - 1), low: expect.stringContaining('row ') }]);
  });

  it('with compression on, asks as the client does, and decodes a gzip page itself (DuckDB would not check it whole)', async () => {
    const { error, files, received } = await run([gzipSync(manyRows(ROWS))], 1, 'gzip', 'on');
    expect(error).toBeUndefined();
    expect(received.map((r) => r.headers['accept-encoding'])).toEqual(['zstd, br, gzip']);
    const rows = await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${files[0]}')`)).getRowObjectsJS());
    expect(rows).toEqual([{ n: BigInt(ROWS) }]);
    // A gzip page cut short is the client's decoding error, as on every other call.
    const cut = gzipSync(manyRows(ROWS));
    const failed = await run([cut.subarray(0, cut.length - 100)], 1, 'gzip', 'on');
    expect(failed.error).toBeInstanceOf(ContentEncodingError);
    expect(failed.files).toHaveLength(0);
  });

  it('fetches a page cut short at a block boundary again (a whole answer per HTTP, short in zstd), and writes every row', async () => {
    // The last block cut off whole: DuckDB alone would read the page ROWS - k rows long.
    const cut = page.subarray(0, lastBlockStart(page));
    const { error, files, received } = await run([cut, page], 3);
    expect(error).toBeUndefined();
    expect(received).toHaveLength(2);
    const rows = await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${files[0]}')`)).getRowObjectsJS());
    expect(rows).toEqual([{ n: BigInt(ROWS) }]);
  });

  it('fails with a content coding error, storing no part, when every answer is cut short', async () => {
    const { error, files, received } = await run([page.subarray(0, page.length - 1)], 2);
    expect(error).toBeInstanceOf(ContentEncodingError);
    expect((error as Error).message).toMatch(/not valid zstd \(a block cut short/);
    expect(received).toHaveLength(2);
    expect(files).toHaveLength(0);
  });
});

/** Where the last block of a one-frame zstd body without checksum starts (its blocks walked). */
function lastBlockStart(body: Buffer): number {
  const descriptor = body[4]!;
  let at = 4 + 1 + ((descriptor & 0x20) !== 0 ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]! + [(descriptor & 0x20) !== 0 ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  for (;;) {
    const header = body.readUIntLE(at, 3);
    if ((header & 1) === 1) return at;
    at += 3 + (((header >> 1) & 3) === 1 ? 1 : header >>> 3);
  }
}

describe('the type matrix over zstd pages of the local service', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ limits: { page_rows: 400 } });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('writes natively from pages kept in zstd the values the general path writes', async () => {
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin });
    try {
      const names = Object.keys(ALL_TYPES_COLUMN_TYPES).filter((n) => n !== 'id' && 'columns' in nativeColumns([{ name: n, type: ALL_TYPES_COLUMN_TYPES[n]! }], 'csv'));
      // The matrix 200 times over: pages of 400 rows, each well past the size the service compresses.
      const execution = await client.execute({ sql: `SELECT r.range * 100 + t.id AS id, ${names.map((n) => `t.${n}`).join(', ')} FROM sample.all_types t, range(200) r ORDER BY 1` });
      await execution.wait();
      const s = stream(client, { executionId: execution.id }, { wire: 'json' });
      const info = await s.info();
      const general = join(dir, 'matrix-general');
      await writeExport({ schema: await s.schema(), batches: s.batches(), meta: { executionId: execution.id, totalRowCount: info.totalRows } }, resolveOutput({ format: 'parquet', path: general }, builtins));
      const generalFile = join(general, (await readdir(general)).find((n) => n.endsWith('.parquet'))!);
      const reader = (await stream(client, { executionId: execution.id }, { wire: 'json' }).rangeReader())!;
      const native = nativeColumns(info.columns, 'csv');
      if (!('columns' in native)) throw new Error(native.reason);
      // Bytes as they came and as counted decoded: the same for a page kept coded, fewer than the page's text.
      const sizes = { wire: 0, counted: 0 };
      let nativeFile = '';
      await writeNativeParts({
        reader: { ...reader, page: (_rows, bytes, _http, wire) => ((sizes.wire += wire), (sizes.counted += bytes)) },
        specs: info.columns,
        columns: native.columns,
        pages: 'csv',
        parts: [{ index: 0, firstRow: 0, rows: info.totalRows }],
        parquet: { compression: 'zstd', rowGroupSize: 122_880, metadata: {} },
        store: async (_part, file) => {
          nativeFile = join(dir, 'matrix-native.parquet');
          await copyFile(file, nativeFile);
        },
      });
      const text = (await client.getResultsCsv(execution.id, { offset: 0, limit: 400 })).body.length;
      expect(sizes.wire).toBe(sizes.counted);
      expect(sizes.wire).toBeLessThan((text * info.totalRows) / 400 / 2);
      const read = (file: string) => withDuckDb(async (con) => (await con.runAndReadAll(`SELECT * FROM read_parquet('${file}') ORDER BY id`)).getRowObjectsJS());
      const [g, n] = [await read(generalFile), await read(nativeFile)];
      expect(n).toHaveLength(info.totalRows);
      expect(n).toEqual(g);
    } finally {
      await client.close();
    }
  });
});
