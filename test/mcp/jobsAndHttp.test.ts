import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSluice, terminate } from '../cli/sluiceProcess.ts';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMcp, textOf, type McpProcess } from './mcpClient.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-mcp-jobs-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('sluice mcp FILE on the embedded service: no key, no cost', () => {
  let mcp: McpProcess;
  beforeAll(async () => {
    await writeFile(
      join(dir, 'jobs.yaml'),
      [
        'version: 1',
        'connection:',
        '  embedded: { data_dir: ./service, sample_rows: 2000 }',
        'state_dir: ./state',
        'jobs:',
        '  - name: daily',
        '    source: { sql: "select id % 365 as day_of_year, count(*) as events from sample.events group by 1" }',
        '    outputs:',
        '      - { format: parquet, path: ./lake/daily }',
        '',
      ].join('\n'),
    );
    // No SERVICE_API_KEY, no --allow-output: the job file's own outputs are the human's choice.
    mcp = await startMcp([join(dir, 'jobs.yaml')], { cwd: dir });
  });
  afterAll(async () => mcp?.close());

  it("plans and runs a job of the file into its configured output, recorded with origin mcp", async () => {
    const plan = (await mcp.call('plan', { job: 'daily' })).structuredContent as Record<string, any>;
    expect(plan).toMatchObject({ action: 'execute', credits: 10, worst_case_credits: 10, embedded: true, within_budget: true });
    expect(plan.outputs).toEqual([expect.objectContaining({ format: 'parquet', action: 'write' })]);

    const result = await mcp.call('run_job', { job: 'daily' });
    expect(result.isError, textOf(result)).toBeFalsy();
    const s = result.structuredContent as Record<string, any>;
    expect(s).toMatchObject({ job: 'daily', started_execution: true, rows: 365, credits: 10 });
    const [{ n }] = (await duckRowsJS(`SELECT count(*) AS n FROM read_parquet('${join(dir, 'lake/daily')}/*.parquet')`)) as [{ n: bigint }];
    expect(n).toBe(365n);

    const runs = ((await mcp.call('runs', { job: 'daily' })).structuredContent as { runs: Record<string, any>[] }).runs;
    expect(runs).toEqual([expect.objectContaining({ job: 'daily', outcome: 'succeeded', origin: 'mcp', rows: 365, credits: 10 })]);
  });

  it('previews without a key, and names the jobs the file has when asked for another', async () => {
    const preview = await mcp.call('preview', { sql: 'SELECT 1 AS one', limit: 1 });
    expect((preview.structuredContent as any).rows).toEqual([{ one: 1 }]);
    expect(textOf(await mcp.call('run_job', { job: 'nightly' }))).toBe('UNKNOWN_JOB: no job named "nightly" (the job file has: daily)');
  });

  it('exports nowhere when no location is allowed', async () => {
    const result = await mcp.call('export', { sql: 'SELECT 1 AS one', output: { path: join(dir, 'lake/other') } });
    expect(textOf(result)).toMatch(/^OUTPUT_NOT_ALLOWED: refused: the server allows no output location: start it with --allow-output/);
  });
});

describe('sluice mcp --http', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => svc?.close());

  it('serves streamable HTTP on loopback, one budget per session, only to clients with the token, and refuses a foreign Host header', async () => {
    const token = 'mcp-test-token-0123456789';
    const proc = startSluice(['mcp', '--http', '--port', '0', '--max-credits', '10', '--token-env', 'AGENT_GATE', '--state-dir', join(dir, 'http-state')], {
      env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: TEST_KEYS.demo.admin, AGENT_GATE: token },
    });
    try {
      const [, url] = (await proc.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/)) as unknown as [string, string];
      const connect = async (bearer = token): Promise<Client> => {
        const client = new Client({ name: 'sluice-test', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
        return client;
      };
      await expect(connect('not-the-token')).rejects.toThrow(/unauthorized: send Authorization: Bearer/);
      const a = await connect();
      const b = await connect();
      expect((await a.listTools()).tools).toHaveLength(8);
      expect((await a.callTool({ name: 'preview', arguments: { sql: 'SELECT 1 AS x' } })).isError).toBeFalsy();
      const refused = await a.callTool({ name: 'preview', arguments: { sql: 'SELECT 2 AS x' } });
      expect(refused.isError).toBe(true);
      // Another session has a budget of its own.
      expect((await b.callTool({ name: 'preview', arguments: { sql: 'SELECT 2 AS x' } })).isError).toBeFalsy();
      await a.close();
      await b.close();

      // fetch() will not send another Host header than the URL's: node:http will, as a browser tricked by DNS rebinding would.
      const rebinding = await new Promise<{ status: number }>((resolve, reject) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
        const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, host: 'attacker.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0 });
        });
        req.on('error', reject);
        req.end(body);
      });
      expect(rebinding.status).toBe(403);
    } finally {
      const { result } = await terminate(proc);
      expect(result.code).toBe(0);
    }
  });
});
