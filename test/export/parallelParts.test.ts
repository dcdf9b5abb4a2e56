import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { listFiles } from '../connectors/destinations.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';
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

async function exportWith(workers: number, output: Record<string, unknown>) {
  const path = await outDir();
  const s = stream(client, { executionId }, { wire: 'json' });
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

  it('rows come back in order and exactly once', async () => {
    const { path } = await exportWith(4, { format: 'parquet', max_rows_per_file: 100 });
    const rows = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS d, min(id)::INTEGER AS lo, max(id)::INTEGER AS hi FROM read_parquet('${path}/*.parquet')`);
    expect(rows).toEqual([{ n: ROWS, d: ROWS, lo: 0, hi: ROWS - 1 }]);
    expect((await listFiles(path)).filter((n) => n.endsWith('.parquet'))).toHaveLength(10);
  });
});
