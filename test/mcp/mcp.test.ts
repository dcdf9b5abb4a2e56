import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ServiceClient } from '../../src/client/index.ts';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMcp, textOf, type McpProcess } from './mcpClient.ts';

// Every test talks to `sluice mcp` through the MCP SDK's own client over stdio, and the server to the
// real local service: what an agent's client sees, end to end.

const TYPED_SQL = `SELECT i AS n,
  9007199254740993::BIGINT + i AS big,
  CAST('12.50' AS DECIMAL(10, 2)) AS price,
  TIMESTAMP '2026-01-02 03:04:05.678' AS at,
  TIMESTAMPTZ '2026-01-02 03:04:05.678+00' AS at_utc,
  DATE '2026-01-02' AS day,
  'x' || i AS label
FROM range(0, 50) t(i) ORDER BY i`;

let svc: TestService;
let dir: string;
let admin: ServiceClient;

beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'sluice-mcp-'));
  admin = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin, env: {} });
});

afterAll(async () => {
  await admin?.close();
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function executions(): Promise<number> {
  return (await admin.getUsage()).executions;
}

function serviceEnv(key: string = TEST_KEYS.demo.admin): Record<string, string> {
  return { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: key };
}

describe('sluice mcp: tools, preview, export', () => {
  let mcp: McpProcess;
  let out: string;
  let state: string;

  beforeAll(async () => {
    out = join(dir, 'allowed');
    state = join(dir, 'state');
    mcp = await startMcp(['--allow-output', out, '--state-dir', state], { env: serviceEnv() });
  });
  afterAll(async () => mcp?.close());

  it('lists its tools, each with an input and an output JSON schema', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['describe', 'export', 'plan', 'preview', 'run_job', 'runs', 'status', 'usage']);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
      expect(tool.description?.length).toBeGreaterThan(40);
    }
    const preview = tools.find((t) => t.name === 'preview')!;
    const props = preview.inputSchema.properties as Record<string, { maximum?: number; type?: string }>;
    expect(Object.keys(props)).toEqual(expect.arrayContaining(['sql', 'query_id', 'parameters', 'execution_id', 'max_age_hours', 'limit']));
    expect(props.limit!.maximum).toBe(100);
    const exportTool = tools.find((t) => t.name === 'export')!;
    expect(Object.keys((exportTool.inputSchema.properties as Record<string, unknown>).output as object)).toContain('properties');
    expect(preview.annotations?.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === 'status')!.annotations?.readOnlyHint).toBe(true);
  });

  let executionId: string;

  it('previews typed values as JSON (bigint and decimal as exact text, timestamps in ISO 8601) and never more than N rows', async () => {
    const before = await executions();
    const result = await mcp.call('preview', { sql: TYPED_SQL, limit: 5 });
    expect(result.isError, textOf(result)).toBeFalsy();
    const s = result.structuredContent as Record<string, any>;
    executionId = s.execution_id;
    expect(s.rows).toHaveLength(5);
    expect(s.total_rows).toBe(50);
    expect(s.truncated).toBe(true);
    expect(s.reused).toBe(false);
    expect(s.credits).toBe(10);
    expect(s.columns).toEqual([
      { name: 'n', type: 'bigint' },
      { name: 'big', type: 'bigint' },
      { name: 'price', type: 'decimal(10, 2)' },
      { name: 'at', type: 'timestamp(6)' },
      { name: 'at_utc', type: 'timestamp(6) with time zone' },
      { name: 'day', type: 'date' },
      { name: 'label', type: 'varchar' },
    ]);
    expect(s.rows[0]).toEqual({ n: '0', big: '9007199254740993', price: '12.50', at: '2026-01-02T03:04:05.678000', at_utc: '2026-01-02T03:04:05.678Z', day: '2026-01-02', label: 'x0' });
    expect(s.rows[4].big).toBe('9007199254740997');
    // The text block carries the same JSON (for clients that read text only).
    expect(JSON.parse(textOf(result))).toEqual(s);
    expect(await executions()).toBe(before + 1);
  });

  it('caps a preview at 100 rows by its schema: asking for more is a schema error, nothing executed', async () => {
    const before = await executions();
    const result = await mcp.call('preview', { sql: 'SELECT * FROM range(0, 1000)', limit: 500 });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/Input validation error[\s\S]*limit/);
    expect(await executions()).toBe(before);
  });

  it('keeps a preview of wide rows within its size: fewer rows than asked, long values clipped and counted', async () => {
    const result = await mcp.call('preview', { sql: "SELECT i, repeat('w', 30000) AS wide FROM range(0, 20) t(i)", limit: 20 });
    expect(result.isError, textOf(result)).toBeFalsy();
    const s = result.structuredContent as Record<string, any>;
    expect(s.size_limited).toBe(false);
    expect(s.clipped_values).toBe(20);
    expect(s.rows[0].wide).toMatch(/^w{2000}\.\.\. \[clipped: 28000 more characters\]$/);
    const many = (await mcp.call('preview', { sql: "SELECT i, repeat('w', 1500) AS wide FROM range(0, 100) t(i)", limit: 100 })).structuredContent as Record<string, any>;
    expect(many).toMatchObject({ size_limited: true, truncated: true, clipped_values: 0 });
    expect(many.rows.length).toBeGreaterThan(10);
    expect(many.rows.length).toBeLessThan(100);
    expect(JSON.stringify(many.rows).length).toBeLessThanOrEqual(64 * 1024);
  });

  it('reuses an execution of the same SQL within max_age_hours: no second charge', async () => {
    const before = await executions();
    const result = await mcp.call('preview', { sql: TYPED_SQL, limit: 2, max_age_hours: 1 });
    expect(result.isError, textOf(result)).toBeFalsy();
    const s = result.structuredContent as Record<string, any>;
    expect(s).toMatchObject({ execution_id: executionId, reused: true, credits: 0 });
    expect(s.rows).toHaveLength(2);
    expect(await executions()).toBe(before);
  });

  it('exports the previewed execution to Parquet that DuckDB reads back, returning only the summary', async () => {
    const before = await executions();
    const path = join(out, 'typed');
    const progress: { progress: number; total?: number; message?: string }[] = [];
    const result = (await mcp.client.callTool({ name: 'export', arguments: { execution_id: executionId, output: { path, format: 'parquet' } } }, undefined, { onprogress: (p) => progress.push(p) })) as CallToolResult;
    expect(result.isError, textOf(result)).toBeFalsy();
    // Asked for with a progress token: the first page read is told at once.
    expect(progress[0]).toEqual({ progress: 50, total: 50, message: '50 of 50 rows read' });
    const s = result.structuredContent as Record<string, any>;
    expect(s).toMatchObject({ execution_id: executionId, started_execution: false, rows: 50, credits: 0 });
    expect(s.outputs[0]).toMatchObject({ url: `file://${path}`, format: 'parquet', rows: 50, skipped: false });
    expect(JSON.stringify(s)).not.toContain('x49');
    expect(await executions()).toBe(before);
    const rows = await duckRowsJS(`SELECT n, big, price::VARCHAR AS price, "at", label FROM read_parquet('${path}/*.parquet') ORDER BY n`);
    expect(rows).toHaveLength(50);
    expect(rows[49]).toMatchObject({ n: 49n, big: 9007199254741042n, price: '12.50', label: 'x49' });
    expect(existsSync(join(path, '_SUCCESS'))).toBe(true);
  });

  it('refuses a path outside the allowlist, or out of it through "..", before executing or writing anything', async () => {
    const before = await executions();
    for (const path of [join(dir, 'elsewhere'), join(out, '..', 'escape'), '-']) {
      const result = await mcp.call('export', { sql: 'SELECT 1 AS x', output: { path } });
      expect(result.isError, path).toBe(true);
      expect(textOf(result)).toMatch(/^OUTPUT_NOT_ALLOWED: refused: /);
    }
    expect(existsSync(join(dir, 'elsewhere'))).toBe(false);
    expect(existsSync(join(dir, 'escape'))).toBe(false);
    expect(await executions()).toBe(before);
  });

  it('names the field of an output that cannot work', async () => {
    const result = await mcp.call('export', { execution_id: executionId, output: { path: join(out, 'bad'), format: 'csv', format_options: { delimiter: 'ab' } } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^INVALID_OUTPUT: output\.format_options\.delimiter/);
  });

  it('gives a schema error for malformed arguments', async () => {
    const wrongType = await mcp.call('preview', { sql: 42 });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/Input validation error[\s\S]*sql/);
    const unknownField = await mcp.call('export', { execution_id: executionId, output: { path: join(out, 'x'), fromat: 'csv' } });
    expect(unknownField.isError).toBe(true);
    expect(textOf(unknownField)).toMatch(/Input validation error[\s\S]*fromat/);
    const twoSources = await mcp.call('preview', { sql: 'SELECT 1', execution_id: executionId });
    expect(textOf(twoSources)).toBe('INVALID_ARGUMENTS: give one of sql, query_id or execution_id, not sql and execution_id');
  });

  it('describes a result and a table, tells the status, the usage and the run history with origin mcp', async () => {
    const described = (await mcp.call('describe', { execution_id: executionId })).structuredContent as Record<string, any>;
    expect(described.columns[1]).toEqual({ name: 'big', type: 'bigint' });
    expect(described).toMatchObject({ total_rows: 50, credits: 0 });
    const table = await mcp.call('describe', { table: 'sample.events' });
    expect(table.isError, textOf(table)).toBeFalsy();
    expect((table.structuredContent as any).columns.map((c: { name: string }) => c.name)).toContain('id');

    const status = (await mcp.call('status', { execution_id: executionId })).structuredContent as Record<string, any>;
    expect(status).toMatchObject({ execution_id: executionId, state: 'QUERY_STATE_COMPLETED', rows: 50, credits: 10 });

    const usage = (await mcp.call('usage')).structuredContent as Record<string, any>;
    expect(usage.service.team).toBe('demo');
    expect(usage.budget).toMatchObject({ call_limit: 20, session_limit: 100, session_spent: 40, session_left: 60 });

    const runs = ((await mcp.call('runs', { last: 200 })).structuredContent as { runs: Record<string, any>[] }).runs;
    expect(runs.every((r) => r.origin === 'mcp')).toBe(true);
    expect(runs.map((r) => r.job)).toEqual(expect.arrayContaining(['mcp-preview', 'mcp-export', 'mcp-describe', 'mcp-status', 'mcp-usage']));
    const exported = runs.find((r) => r.job === 'mcp-export' && r.outcome === 'succeeded')!;
    expect(exported).toMatchObject({ execution_id: executionId, rows: 50, credits: 0 });
    expect(runs.find((r) => r.job === 'mcp-export' && r.outcome === 'failed')?.error.code).toBe('OUTPUT_NOT_ALLOWED');
    // No key in anything the server said or logged.
    expect(JSON.stringify(runs)).not.toContain(TEST_KEYS.demo.admin);
    expect(mcp.stderr()).not.toContain(TEST_KEYS.demo.admin);
  });
});

describe('sluice mcp: budgets and read-only mode', () => {
  let mcp: McpProcess;
  beforeAll(async () => {
    mcp = await startMcp(['--read-only', '--max-call-credits', '15', '--max-credits', '25', '--state-dir', join(dir, 'state-ro')], { env: serviceEnv() });
  });
  afterAll(async () => mcp?.close());

  it('offers no tool that writes', async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).not.toContain('export');
    expect(tools.map((t) => t.name)).not.toContain('run_job');
    const result = await mcp.call('export', { execution_id: 'x', output: { path: dir } });
    expect(result.isError).toBe(true);
  });

  it('refuses a call over the per-call budget with its plan, executing nothing', async () => {
    const before = await executions();
    const result = await mcp.call('preview', { sql: 'SELECT 1 AS x', performance: 'large' });
    expect(result.isError).toBe(true);
    const [head, details] = textOf(result).split('\n');
    expect(head).toBe('BUDGET_EXCEEDED: refused: this call could cost 20 credits, over the per-call budget of 15; nothing was executed');
    expect(JSON.parse(details!).plan).toMatchObject({ action: 'execute', credits: 20 });
    expect(await executions()).toBe(before);
  });

  it('refuses a call once the session budget is spent, executing nothing', async () => {
    const before = await executions();
    expect((await mcp.call('preview', { sql: 'SELECT 1 AS x' })).isError).toBeFalsy();
    expect((await mcp.call('preview', { sql: 'SELECT 2 AS x' })).isError).toBeFalsy();
    const plan = (await mcp.call('plan', { sql: 'SELECT 3 AS x' })).structuredContent as Record<string, any>;
    expect(plan).toMatchObject({ action: 'execute', credits: 10, within_budget: false, budget: { session_spent: 20, session_left: 5 } });
    const third = await mcp.call('preview', { sql: 'SELECT 3 AS x' });
    expect(textOf(third)).toMatch(/^BUDGET_EXCEEDED: refused: this call could cost 10 credits and the session has 5 left of its budget of 25/);
    expect(await executions()).toBe(before + 2);
  });
});

describe('sluice mcp: a call the client cancels', () => {
  it('cancels the execution it started, and records the call as stopped', async () => {
    const state = join(dir, 'state-cancel');
    const mcp = await startMcp(['--state-dir', state], { env: serviceEnv() });
    try {
      const controller = new AbortController();
      const call = mcp.client.callTool({ name: 'preview', arguments: { sql: 'SELECT sum(i) AS s FROM range(0, 1000000000000) t(i)' } }, undefined, { signal: controller.signal });
      // Cancel once the server knows the execution it started (it logs it).
      for (let i = 0; i < 400 && !mcp.stderr().includes('execution started'); i++) await new Promise((r) => setTimeout(r, 50));
      controller.abort();
      await expect(call).rejects.toThrow();
      let record: Record<string, any> | undefined;
      for (let i = 0; i < 200 && record === undefined; i++) {
        record = ((await mcp.call('runs', { job: 'mcp-preview' })).structuredContent as { runs: Record<string, any>[] }).runs[0];
        if (record === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(record).toMatchObject({ outcome: 'stopped', origin: 'mcp', tool: 'preview' });
      const statusCall = await mcp.call('status', { execution_id: record!.execution_id });
      const status = statusCall.structuredContent as Record<string, any>;
      expect(status.state).toBe('QUERY_STATE_CANCELLED');
    } finally {
      await mcp.close();
    }
  });
});

describe('sluice mcp: service errors', () => {
  it('turns a 401 into a tool error naming the key variable, and keeps serving', async () => {
    const mcp = await startMcp(['--state-dir', join(dir, 'state-401')], { env: serviceEnv('sk_not_a_key') });
    try {
      const result = await mcp.call('preview', { sql: 'SELECT 1 AS x' });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^INVALID_API_KEY: .*SERVICE_API_KEY/);
      expect(textOf(result)).not.toContain('sk_not_a_key');
      expect((await mcp.client.listTools()).tools.length).toBe(8);
    } finally {
      await mcp.close();
    }
  });
});
