// The MCP server's guard rails attacked with two teams on the real service, over HTTP: a session's
// budget that cancelled calls used to escape, and secrets that scrubbing used to miss. Each case
// failed before: a call cancelled while its submission was in flight charged the team but not the
// session (and its execution ran on, its id unknown); a secret holding `"` or `\`, or held by a
// variable named *_PASS*, *_AUTH*, *DSN* or read by the job file's ${VAR}, reached the agent.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';
import { startMcp, textOf, type McpProcess } from './mcpClient.ts';

let svc: TestService;
let dir: string;
beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'sluice-mcp-guards-'));
});
afterAll(async () => {
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A loopback proxy to the service that holds the answer to every submission for `holdMs`: the
 * execution exists, its id is on the way, and a cancel can land meanwhile.
 */
async function slowAnswers(target: string, holdMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const headers: Record<string, string> = {};
        for (const h of ['x-service-api-key', 'content-type', 'accept']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
        const body = chunks.length === 0 ? undefined : Buffer.concat(chunks);
        const answer = await fetch(`${target}${req.url}`, { method: req.method!, headers, ...(body === undefined ? {} : { body }) });
        const text = Buffer.from(await answer.arrayBuffer());
        if (req.method === 'POST' && /\/execute$/.test(req.url ?? '')) await sleep(holdMs);
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

describe('cancelled calls stay within the session budget', () => {
  it('a call cancelled while its submission is in flight is charged to the session and cancels its execution', async () => {
    const other = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.other.admin, env: {} });
    const proxy = await slowAnswers(svc.origin, 1_000);
    const mcp = await startMcp(['--max-credits', '30', '--state-dir', join(dir, 'state-budget')], { env: { SERVICE_BASE_URL: proxy.url, SERVICE_API_KEY: TEST_KEYS.other.admin } });
    const before = await other.getUsage();
    try {
      for (let i = 0; i < 6; i++) {
        const controller = new AbortController();
        const call = mcp.client.callTool({ name: 'preview', arguments: { sql: `SELECT sum(i + ${i}) AS s FROM range(0, 1000000000000) t(i)` } }, undefined, { signal: controller.signal });
        await sleep(400);
        controller.abort();
        // Cancelled, or refused at once while earlier calls still hold the whole budget.
        const outcome = await call.then((r) => textOf(r as never), () => 'cancelled');
        expect(outcome).toMatch(/^(cancelled|BUDGET_EXCEEDED: )/);
      }
      // The server settles each call after the client gave up on it: wait for every reservation.
      let budget: Record<string, number> = {};
      for (let i = 0; i < 200; i++) {
        budget = ((await mcp.call('usage')).structuredContent as { budget: Record<string, number> }).budget;
        if (budget.session_reserved === 0) break;
        await sleep(100);
      }
      expect(budget.session_reserved).toBe(0);
      const runs = ((await mcp.call('runs', { job: 'mcp-preview' })).structuredContent as { runs: Record<string, any>[] }).runs;
      const started = runs.filter((r) => r.execution_id !== undefined);
      const after = await other.getUsage();
      // Every execution the team got was started by a call that knows it, and cancelled by it.
      expect(after.executions - before.executions).toBe(started.length);
      expect(started.length).toBeGreaterThan(0);
      for (const r of started) expect((await other.getStatus(r.execution_id)).state).toBe('QUERY_STATE_CANCELLED');
      // What the team was charged is what the session counted, never past its budget.
      expect(after.credits_used - before.credits_used).toBe(budget.session_spent);
      expect(budget.session_spent).toBeLessThanOrEqual(30);
    } finally {
      await mcp.close();
      await proxy.close();
      await other.close();
    }
  });
});

describe('secrets are scrubbed from values, whatever they hold and whatever their variable is called', () => {
  const SECRETS = {
    QUOTED_TOKEN: 'tok"en\\with-quote',
    DB_PASS: 'hunter2-hunter2',
    PROXY_AUTH_HEADER: 'Basic dXNlcjpwYXNz',
    PG_DSN: 'postgres://u:p4ss@db.internal/x',
    WAREHOUSE: 'warehouse-credential-blob',
  };
  let mcp: McpProcess;
  beforeAll(async () => {
    await writeFile(
      join(dir, 'jobs.yaml'),
      [
        'version: 1',
        'connection:',
        `  base_url: "${svc.url}"`,
        '  api_key_env: TEAM_KEY',
        'state_dir: ./state',
        'jobs:',
        '  - name: daily',
        // WAREHOUSE has no secret-looking name: it is one because the job file reads it.
        '    source: { sql: "SELECT \'${WAREHOUSE}\' AS w" }',
        '    outputs:',
        '      - { format: parquet, path: ./lake/daily }',
        '',
      ].join('\n'),
    );
    mcp = await startMcp([join(dir, 'jobs.yaml')], { cwd: dir, env: { TEAM_KEY: TEST_KEYS.demo.admin, ...SECRETS } });
  });
  afterAll(async () => mcp?.close());

  const literal = (s: string) => `'${s.replaceAll("'", "''")}'`;

  it('no secret comes back in rows, column names or errors of either team', async () => {
    for (const [name, value] of Object.entries(SECRETS)) {
      const rows = await mcp.call('preview', { sql: `SELECT ${literal(value)} AS s, ${literal(`x ${value} y`)} AS "${value.replaceAll('"', '""')}"` });
      expect(rows.isError, textOf(rows)).toBeFalsy();
      expect(JSON.stringify(rows), name).not.toContain(JSON.stringify(value).slice(1, -1));
      expect(textOf(rows), name).not.toContain(value);
      expect(JSON.stringify(rows.structuredContent), name).toContain('***');
      const failed = await mcp.call('preview', { sql: `SELECT CAST(${literal(value)} AS INTEGER) AS n` });
      expect(failed.isError).toBe(true);
      expect(textOf(failed), name).not.toContain(value);
      expect(textOf(failed), name).toContain('***');
    }
    expect(mcp.stderr()).not.toContain(TEST_KEYS.demo.admin);
    for (const value of Object.values(SECRETS)) expect(mcp.stderr()).not.toContain(value);
  });
});

describe('--read-only refuses SQL that writes, as the service classifies it, before anything is submitted', () => {
  let mcp: McpProcess;
  let demo: ServiceClient;
  beforeAll(async () => {
    demo = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.admin, env: {} });
    mcp = await startMcp(['--read-only', '--state-dir', join(dir, 'state-ro')], { env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: TEST_KEYS.demo.admin } });
  });
  afterAll(async () => {
    await mcp?.close();
    await demo?.close();
  });

  it('creating, filling or dropping tables (the team\'s or temporary, plain, under EXPLAIN ANALYZE, in a saved query) is refused and never executed', async () => {
    // Team other has a table; team demo (read-only agent) must neither change its own nor anything else.
    const other = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.other.admin, env: {} });
    await (await other.execute({ sql: 'CREATE TABLE service.other.kept AS SELECT 1 AS x' })).wait();
    await other.close();
    await (await demo.execute({ sql: 'CREATE TABLE service.demo.mine AS SELECT 1 AS x' })).wait();
    const writer = await demo.createQuery({ name: 'writer', query_sql: 'INSERT INTO service.demo.mine SELECT {{n}}', parameters: [{ key: 'n', type: 'number', value: '2' }] } as never);
    const before = (await demo.getUsage()).executions;
    const attempts: Record<string, unknown>[] = [
      { sql: 'CREATE TABLE service.demo.t AS SELECT 1 AS x' },
      { sql: 'insert into service.demo.mine select 3' },
      { sql: 'DROP TABLE service.demo.mine' },
      { sql: 'CREATE TEMP TABLE scratch AS SELECT 1 AS x; SELECT * FROM scratch' },
      { sql: 'SELECT 1 AS x; /* a comment */ INSERT INTO service.demo.mine SELECT 4' },
      { sql: 'EXPLAIN ANALYZE INSERT INTO service.demo.mine SELECT 5' },
      { sql: 'INSERT INTO service.other.kept SELECT 6' },
      { query_id: writer.query_id, parameters: { n: 7 } },
    ];
    for (const args of attempts) {
      for (const tool of ['preview', 'plan']) {
        const result = await mcp.call(tool, args);
        expect(result.isError, JSON.stringify(args)).toBe(true);
        expect(textOf(result), JSON.stringify(args)).toMatch(/^READ_ONLY: refused: statement \d+ \(line \d+:\d+\) creates, fills or drops a table or view, and this server is read-only/);
      }
    }
    expect((await demo.getUsage()).executions).toBe(before);
    // Reading still works, and saw nothing change.
    const read = await mcp.call('preview', { sql: 'SELECT count(*) AS n FROM service.demo.mine' });
    expect(read.isError, textOf(read)).toBeFalsy();
    expect((read.structuredContent as { rows: unknown[] }).rows).toEqual([{ n: '1' }]);
  });

  it('a statement the service cannot show to only read (WITH before INSERT or DELETE) is refused before submission, saying which and why; a plain query still runs', async () => {
    await (await demo.execute({ sql: 'CREATE TABLE service.demo.held AS SELECT 1 AS x' })).wait();
    const before = (await demo.getUsage()).executions;
    for (const sql of ['with x as (select 2 as x) insert into service.demo.held select x from x', 'with x as (select 1 as x) delete from service.demo.held where x in (select x from x)']) {
      for (const tool of ['preview', 'plan']) {
        const result = await mcp.call(tool, { sql });
        expect(result.isError, sql).toBe(true);
        expect(textOf(result), sql).toMatch(/^READ_ONLY: refused: the statement at line 1:\d+ cannot be shown to only read \(the service's check: line 1:1: Not allowed: this form of query cannot be checked \(a WITH before INSERT, UPDATE or DELETE, say\); write it with plain SELECT\), and this server is read-only \(--read-only\); nothing was submitted\. Write it as a plain query/);
      }
    }
    // Nothing was submitted: no execution started (the service's own refusal would count one).
    expect((await demo.getUsage()).executions).toBe(before);
    const read = await mcp.call('preview', { sql: 'with x as (select 1 as x) select count(*) as n from service.demo.held' });
    expect(read.isError, textOf(read)).toBeFalsy();
    expect((read.structuredContent as { rows: unknown[] }).rows).toEqual([{ n: '1' }]);
  });
});
