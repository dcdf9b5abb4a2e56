import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { listFiles } from '../connectors/destinations.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';
import { startLocalS3 } from '../helpers/s3.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let svc: TestService;
let client: ServiceClient;
let executionId: string;
const dirs: string[] = [];
const ROWS = 1_000;
const SQL = `SELECT i AS id, 'name ' || i AS name, i * 0.5 AS half, DATE '2024-01-01' + (i % 30)::INTEGER AS day FROM range(${ROWS}) t(i) ORDER BY i`;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 64 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  const execution = await client.execute({ sql: SQL });
  await execution.wait();
  executionId = execution.id;
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function outDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-parts-'));
  dirs.push(parent);
  return join(parent, 'out');
}

async function exportWith(workers: number, output: Record<string, unknown>, at?: string, wire: 'json' | 'auto' = 'json') {
  const path = at ?? (await outDir());
  const s = stream(client, { executionId }, { wire });
  const info = await s.info();
  const summary = await writeExport(
    { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts: await s.rangeReader() },
    resolveOutput({ ...output, path }, builtins),
    { workers },
  );
  return { path, summary };
}

describe('parts in parallel', () => {
  for (const format of ['parquet', 'csv', 'ndjson', 'arrow'] as const) {
    it(`${format}: workers 2 and 4 write the same bytes as workers 1`, async () => {
      const output = { format, max_rows_per_file: 150 };
      const one = await exportWith(1, output);
      const files = one.summary.files.map((f) => f.path);
      expect(files).toHaveLength(7);
      for (const workers of [2, 4]) {
        const many = await exportWith(workers, output);
        expect(many.summary.files.map((f) => f.path)).toEqual(files);
        for (const name of files) expect(Buffer.compare(await readFile(join(many.path, name)), await readFile(join(one.path, name)))).toBe(0);
        expect(many.summary.rows).toBe(ROWS);
      }
    });
  }

  it('over Arrow pages (wire auto, the local service serves them) the threads write what one thread writes from JSON pages', async () => {
    const output = { format: 'parquet', max_rows_per_file: 150 };
    const json = await exportWith(1, output);
    const arrow = await exportWith(2, output, undefined, 'auto');
    for (const f of json.summary.files) expect(Buffer.compare(await readFile(join(arrow.path, f.path)), await readFile(join(json.path, f.path))), f.path).toBe(0);
  });

  it('rows come back in order and exactly once', async () => {
    const { path } = await exportWith(4, { format: 'parquet', max_rows_per_file: 100 });
    const rows = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS d, min(id)::INTEGER AS lo, max(id)::INTEGER AS hi FROM read_parquet('${path}/*.parquet')`);
    expect(rows).toEqual([{ n: ROWS, d: ROWS, lo: 0, hi: ROWS - 1 }]);
    expect((await listFiles(path)).filter((n) => n.endsWith('.parquet'))).toHaveLength(10);
  });

  it('to S3: parts uploaded by the threads are the objects one thread uploads, and the manifest lists them in part order', async () => {
    const s3 = await startLocalS3();
    try {
      await s3.createBucket('parts');
      const settings = { endpoint: s3.endpoint, region: s3.region, force_path_style: true };
      const one = await exportWith(1, { format: 'parquet', max_rows_per_file: 300, s3: settings }, 's3://parts/one');
      const four = await exportWith(4, { format: 'parquet', max_rows_per_file: 300, s3: settings }, 's3://parts/four');
      expect(four.summary.files.map((f) => f.path)).toEqual(one.summary.files.map((f) => f.path));
      expect(four.summary.files.map((f) => f.sha256)).toEqual(one.summary.files.map((f) => f.sha256));
      for (const f of one.summary.files) expect(Buffer.compare(Buffer.from(await s3.get('parts', `four/${f.path}`)), Buffer.from(await s3.get('parts', `one/${f.path}`)))).toBe(0);
      const manifest = JSON.parse(new TextDecoder().decode(await s3.get('parts', 'four/_manifest.json'))) as { files: { path: string }[]; total_rows: number };
      expect(manifest.total_rows).toBe(ROWS);
      expect(manifest.files.map((f) => f.path)).toEqual([0, 1, 2, 3].map((k) => `part-${String(k).padStart(5, '0')}-${executionId}.parquet`));
      expect((await s3.list('parts', 'four/')).filter((k) => k.includes('sluice'))).toEqual([]);
    } finally {
      await s3.stop();
    }
  });

  it('an empty result is one empty part, as with one thread', async () => {
    const empty = await client.execute({ sql: 'SELECT 1 AS id WHERE false' });
    await empty.wait();
    const path = await outDir();
    const s = stream(client, { executionId: empty.id });
    const info = await s.info();
    const summary = await writeExport(
      { schema: await s.schema(), batches: s.batches(), meta: { executionId: empty.id, totalRowCount: info.totalRows }, parts: await s.rangeReader() },
      resolveOutput({ format: 'csv', path, max_rows_per_file: 10 }, builtins),
      { workers: 2 },
    );
    expect(summary.files).toEqual([expect.objectContaining({ path: `part-00000-${empty.id}.csv`, rows: 0 })]);
    expect(await readFile(join(path, summary.files[0]!.path), 'utf8')).toMatch(/^id\r?\n$/);
  });

  it('a part thread kept from an earlier export reads with the connection options of the export it writes now', async () => {
    // A proxy in front of the service records who asks (the user agent of each client), then forwards.
    const seen: string[] = [];
    const target = new URL(svc.url);
    const proxy = createServer((req, res) => {
      seen.push(String(req.headers['user-agent']));
      const upstream = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', (error) => res.destroy(error));
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname}`;
    try {
      for (const userAgent of ['sluice-test-first', 'sluice-test-second']) {
        const via = new ServiceClient({ baseUrl: base, apiKey: svc.keys.demo.admin, userAgent, env: {} });
        try {
          seen.length = 0;
          const s = stream(via, { executionId }, { wire: 'json' });
          const info = await s.info();
          const summary = await writeExport(
            { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts: await s.rangeReader() },
            resolveOutput({ format: 'csv', max_rows_per_file: 150, path: await outDir() }, builtins),
            { workers: 2 },
          );
          expect(summary.rows).toBe(ROWS);
          // Pages of 64 rows: the threads asked for some 16 pages, every one as this export's client.
          expect(seen.length).toBeGreaterThan(10);
          expect(new Set(seen)).toEqual(new Set([userAgent]));
        } finally {
          await via.close();
        }
      }
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('workers must be a positive integer or auto: the error names the option and the value', async () => {
    const s = stream(client, { executionId });
    await expect(
      writeExport({ schema: await s.schema(), batches: s.batches(), meta: { executionId }, parts: await s.rangeReader() }, resolveOutput({ format: 'csv', path: await outDir(), max_rows_per_file: 10 }, builtins), { workers: 0 }),
    ).rejects.toThrow(/invalid export options:\n  workers: expected a positive integer or 'auto'.*\(got 0\)/);
    // More than one thread, but nothing to read the parts with: said, not silently one thread.
    await expect(
      writeExport({ schema: await s.schema(), batches: s.batches(), meta: { executionId } }, resolveOutput({ format: 'csv', path: await outDir(), max_rows_per_file: 10 }, builtins), { workers: 2 }),
    ).rejects.toThrow(/workers: part threads read their rows themselves: pass input.parts/);
  });

  it('workers auto: rows too few to pay for a thread are written by this thread; a count asked for starts the threads anyway', async () => {
    // Which side wrote the parts shows in what was read: this thread reads `batches`, part threads read `parts`.
    const run = async (workers: number | 'auto') => {
      const s = stream(client, { executionId }, { wire: 'json' });
      const info = await s.info();
      let batchRows = 0;
      let threadRows = 0;
      const source = s.batches();
      const batches = (async function* () {
        for await (const b of source) {
          batchRows += b.numRows;
          yield b;
        }
      })();
      const reader = (await s.rangeReader())!;
      const parts = { ...reader, page: (rows: number, bytes: number, httpBytes: number, wireBytes: number) => ((threadRows += rows), reader.page(rows, bytes, httpBytes, wireBytes)) };
      const path = await outDir();
      const summary = await writeExport(
        { schema: await s.schema(), batches, meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts },
        resolveOutput({ format: 'csv', max_rows_per_file: 150, path }, builtins),
        { workers },
      );
      expect(summary.rows).toBe(ROWS);
      return { batchRows, threadRows };
    };
    expect(await run('auto')).toEqual({ batchRows: ROWS, threadRows: 0 });
    expect(await run(2)).toEqual({ batchRows: 0, threadRows: ROWS });
  });
});
