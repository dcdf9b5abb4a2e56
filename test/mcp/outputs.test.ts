import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMcp, textOf, type McpProcess } from './mcpClient.ts';

// export lands a result where a job's outputs can: an object-store prefix, an Iceberg table.

let svc: TestService;
let s3: LocalS3;
let dir: string;
let mcp: McpProcess;

beforeAll(async () => {
  [svc, s3] = await Promise.all([startTestService(), startLocalS3()]);
  await s3.createBucket('lake');
  dir = await mkdtemp(join(tmpdir(), 'sluice-mcp-outputs-'));
  mcp = await startMcp(['--allow-output', 's3://lake/agents', '--allow-output', join(dir, 'tables'), '--state-dir', join(dir, 'state')], {
    env: {
      SERVICE_BASE_URL: svc.url,
      SERVICE_API_KEY: TEST_KEYS.demo.admin,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
      AWS_REGION: s3.region,
    },
  });
});

afterAll(async () => {
  await mcp?.close();
  await Promise.allSettled([svc?.close(), s3?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('sluice mcp export: object stores and tables', () => {
  it('exports SQL to Parquet under an allowed S3 prefix, readable once downloaded', async () => {
    const result = await mcp.call('export', {
      sql: 'SELECT id, amount, day FROM sample.events ORDER BY id',
      output: { path: 's3://lake/agents/events', format: 'parquet', max_rows_per_file: 1500, s3: { endpoint: s3.endpoint, force_path_style: true } },
    });
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ started_execution: true, rows: 2000, files: 2, credits: 10, outputs: [{ url: 's3://lake/agents/events', rows: 2000, files: 2 }] });
    const keys = await s3.list('lake', 'agents/events/');
    expect(keys).toEqual(expect.arrayContaining(['agents/events/_manifest.json', 'agents/events/_SUCCESS']));
    const local = join(dir, 'downloaded');
    await s3.download('lake', 'agents/events', local);
    const [row] = await duckRowsJS(`SELECT count(*) AS n, sum(id) AS ids FROM read_parquet('${local}/*.parquet')`);
    expect(row).toEqual({ n: 2000n, ids: 1999n * 1000n });
  });

  it('refuses a sibling of the allowed prefix before executing', async () => {
    const result = await mcp.call('export', { sql: 'SELECT 1 AS x', output: { path: 's3://lake/agents-old/x', s3: { endpoint: s3.endpoint, force_path_style: true } } });
    expect(textOf(result)).toMatch(/^OUTPUT_NOT_ALLOWED: refused: s3:\/\/lake\/agents-old\/x is outside the allowed output locations/);
    expect(await s3.list('lake', 'agents-old/')).toEqual([]);
  });

  it('exports to an Iceberg table, a snapshot per export, and a second export of the same execution commits nothing new', async () => {
    const preview = (await mcp.call('preview', { sql: 'SELECT id, day FROM sample.events WHERE id < 100', limit: 1 })).structuredContent as { execution_id: string };
    const path = join(dir, 'tables', 'events');
    const first = await mcp.call('export', { execution_id: preview.execution_id, output: { path, table: 'iceberg' } });
    expect(first.isError, textOf(first)).toBeFalsy();
    const summary = first.structuredContent as { rows: number; outputs: { snapshot?: string; skipped: boolean }[] };
    expect(summary.rows).toBe(100);
    expect(summary.outputs[0]!.snapshot).toMatch(/\d+/);
    expect(existsSync(join(path, 'metadata', 'v1.metadata.json'))).toBe(true);
    const [{ n }] = (await duckRowsJS(`SELECT count(*) AS n FROM read_parquet('${path}/data/**/*.parquet')`)) as [{ n: bigint }];
    expect(n).toBe(100n);
    const again = (await mcp.call('export', { execution_id: preview.execution_id, output: { path, table: 'iceberg' } })).structuredContent as { outputs: { skipped: boolean; snapshot?: string }[] };
    expect(again.outputs[0]).toMatchObject({ skipped: true, snapshot: summary.outputs[0]!.snapshot });
    expect(existsSync(join(path, 'metadata', 'v2.metadata.json'))).toBe(false);
  });
});
