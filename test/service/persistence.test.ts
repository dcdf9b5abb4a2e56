import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/service/clock.ts';
import { RESTART_MESSAGE } from '../../src/service/executions.ts';
import { startService } from '../../src/service/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { startTestService, TEST_KEYS, testSettings } from '../helpers/service.ts';
import { call, executeSql, LONG_SQL, runSql, status, waitRunning } from './api.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('restart on the same data directory', () => {
  it('keeps sample.events when started without a row count (no silent rebuild to the default); rebuilds it only for another count', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-sample-rows-'));
    dirs.push(dataDir);
    const notices: string[] = [];
    const rowsAfterStart = async (sampleRows: number | undefined): Promise<unknown> => {
      const svc = await startService({ dataDir, settings: testSettings(), onNotice: (m) => notices.push(m), ...(sampleRows === undefined ? {} : { sampleRows }) });
      const client = new ServiceClient({ baseUrl: svc.url, apiKey: TEST_KEYS.demo.write, env: {} });
      try {
        return Number((await client.run('SELECT count(*) AS n FROM sample.events'))[0]!.n);
      } finally {
        await client.close();
        await svc.close();
      }
    };
    expect(await rowsAfterStart(30)).toBe(30);
    expect(await rowsAfterStart(undefined)).toBe(30);
    expect(await rowsAfterStart(40)).toBe(40);
    // Each generation is told, a start that kept the table says nothing.
    expect(notices).toEqual(['sample.events generated with 30 rows', 'sample.events rebuilt with 40 rows (it held 30; the job or command asked for 40)']);

    // A table an older generator made (no version comment) is rebuilt at its size, and says why.
    const db = await DuckDBInstance.create(join(dataDir, 'engine', 'engine.duckdb'));
    const conn = await db.connect();
    await conn.run("CREATE OR REPLACE TABLE sample.events AS SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_microseconds(i * 1234567) AS ts, DATE '2026-01-01' + (i % 365)::INTEGER AS day FROM range(40) t(i)");
    conn.closeSync();
    db.closeSync();
    notices.length = 0;
    expect(await rowsAfterStart(undefined)).toBe(40);
    expect(notices).toEqual(['sample.events rebuilt with 40 rows: an older version of sluice made it (its day column was not the date of ts)']);
  });

  it("sample.events' day is the UTC date of its ts (100,000 rows: an event every 1.234567 s over 1.4 days)", async () => {
    const svc = await startTestService({ sampleRows: 100_000 });
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write, env: {} });
    try {
      const [row] = await client.run(
        "SELECT count(*) FILTER (WHERE day <> CAST(timezone('UTC', ts) AS DATE))::INTEGER AS off, min(day)::VARCHAR AS first, max(day)::VARCHAR AS last, count(DISTINCT day)::INTEGER AS days FROM sample.events",
      );
      expect(row).toEqual({ off: 0, first: '2026-01-01', last: '2026-01-02', days: 2 });
    } finally {
      await client.close();
      await svc.close();
    }
  });

  it('keeps queries, executions and stored results; unfinished executions become FAILED', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-restart-'));
    dirs.push(dataDir);
    const first = await startTestService({ dataDir });
    const done = await runSql(first, 'SELECT id, name FROM sample.events ORDER BY id LIMIT 5');
    const q = await call(first, 'POST', '/v1/query', { key: first.keys.demo.write, body: { name: 'kept', query_sql: 'SELECT 1 AS x' } });
    const before = await status(first, done);
    const page = await call(first, 'GET', `/v1/execution/${done}/results`, { key: first.keys.demo.read });
    const running = await executeSql(first, LONG_SQL);
    await waitRunning(first, running);
    await first.close();

    const second = await startTestService({ dataDir });
    try {
      expect(await status(second, done)).toEqual(before);
      const again = await call(second, 'GET', `/v1/execution/${done}/results`, { key: second.keys.demo.read });
      expect(again.json.result).toEqual(page.json.result);
      expect((await call(second, 'GET', `/v1/query/${q.json.query_id}`, { key: second.keys.demo.read })).json.name).toBe('kept');
      const failed = await status(second, running);
      expect(failed.state).toBe('QUERY_STATE_FAILED');
      expect(failed.execution_cost_credits).toBe(0);
      expect(failed.error).toEqual({ type: 'FAILED_TYPE_EXECUTION_FAILED', message: RESTART_MESSAGE });
      // New ids keep counting after the persisted ones.
      const q2 = await call(second, 'POST', '/v1/query', { key: second.keys.demo.write, body: { name: 'next', query_sql: 'SELECT 2' } });
      expect(q2.json.query_id).toBe(q.json.query_id + 1);
    } finally {
      await second.close();
    }
  });

  it('removes what a crash left of uploads and view refreshes: scratch files and staging tables', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-leftovers-'));
    dirs.push(dataDir);
    const first = await startTestService({ dataDir, sampleRows: 10 });
    const up = await call(first, 'POST', '/v1/uploads/csv', { key: first.keys.demo.write, body: { table_name: 'prices', data: 'px\n1\n2\n' } });
    expect(up.json).toEqual({ success: true, table_name: 'service.demo.dataset_prices', full_name: 'service.demo.dataset_prices', example_query: 'SELECT * FROM service.demo.dataset_prices LIMIT 10' });
    await runSql(first, 'CREATE TABLE service.demo.keep_me AS SELECT 42 AS n');
    await first.close();

    // What a crash in the middle of an upload and of a refresh leaves behind.
    const resultsDir = join(dataDir, 'engine', 'results');
    await writeFile(join(resultsDir, 'scratch~upload-0a1b2c3d.csv'), 'px\n1\n');
    // Each team's tables are in a file of its own (engine.walled_teams). Connections are closed
    // before their instance: an instance with one open lives on until it is collected, and then
    // writes what it holds over the file.
    const teamDb = (team: string): string => join(dataDir, 'engine', 'teams', `${team}.duckdb`);
    const listTables = async (): Promise<string[]> => {
      const out: string[] = [];
      for (const team of ['demo', 'other']) {
        const db = await DuckDBInstance.create(teamDb(team));
        try {
          const conn = await db.connect();
          const r = await conn.runAndReadAll("SELECT schema_name || '.' || table_name FROM duckdb_tables() UNION ALL SELECT schema_name || '.' || view_name FROM duckdb_views() WHERE NOT internal ORDER BY ALL");
          out.push(...r.getRowsJson().map((row) => String(row[0])));
          conn.closeSync();
        } finally {
          db.closeSync();
        }
      }
      return out;
    };
    {
      const db = await DuckDBInstance.create(teamDb('demo'));
      const conn = await db.connect();
      await conn.run('CREATE TABLE demo.demo.__upload_raw_0a1b2c3d AS SELECT 1 AS px');
      await conn.run('CREATE TABLE demo.demo.__upload_prices_0a1b2c3d AS SELECT 1 AS px');
      // A view over a snapshot of another team's object, whose catalog went with the run.
      await conn.run('CREATE SCHEMA IF NOT EXISTS demo.other');
      await conn.run('CREATE VIEW demo.other.result_x AS SELECT 1 AS n');
      conn.closeSync();
      db.closeSync();
    }
    {
      const db = await DuckDBInstance.create(teamDb('other'));
      const conn = await db.connect();
      await conn.run('CREATE SCHEMA IF NOT EXISTS other.other');
      await conn.run('CREATE TABLE other.other.__staging_result_daily_0a1b2c3d AS SELECT 1 AS n');
      conn.closeSync();
      db.closeSync();
    }
    expect(await listTables()).toHaveLength(6);

    const second = await startTestService({ dataDir, sampleRows: 10 });
    try {
      expect((await readdir(resultsDir)).filter((n) => !n.endsWith('.duckdb'))).toEqual([]);
      const id = await runSql(second, 'SELECT ((SELECT sum(px) FROM service.demo.dataset_prices) + (SELECT n FROM service.demo.keep_me))::INTEGER AS s');
      const page = await call(second, 'GET', `/v1/execution/${id}/results`, { key: second.keys.demo.read });
      expect(page.json.result.rows).toEqual([{ s: 45 }]);
    } finally {
      await second.close();
    }
    expect(await listTables()).toEqual(['demo.dataset_prices', 'demo.keep_me']);
  });
});

describe('expiry', () => {
  it('moves a result to EXPIRED at expires_at (lazily, against the service clock)', async () => {
    const clock = new ManualClock();
    const svc = await startTestService({ clock, limits: { retention_days: 1 } });
    try {
      const id = await runSql(svc, 'SELECT 1 AS x');
      const s = await status(svc, id);
      const stored = join(svc.dataDir, 'engine', 'results', `${id}.duckdb`);
      expect(existsSync(stored)).toBe(true);
      expect(Date.parse(s.expires_at) - Date.parse(s.execution_ended_at)).toBe(86_400_000);
      clock.advance(86_400_000 - 10_000);
      expect((await status(svc, id)).state).toBe('QUERY_STATE_COMPLETED');
      clock.advance(20_000);
      const expired = await status(svc, id);
      expect(expired.state).toBe('QUERY_STATE_EXPIRED');
      expect(expired.is_execution_finished).toBe(true);
      expect(expired.expires_at).toBe(s.expires_at);
      expect(expired.execution_ended_at).toBe(s.execution_ended_at);
      expect(expired).not.toHaveProperty('result_metadata');
      const r = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
      expect(r.status).toBe(200);
      expect(r.json.state).toBe('QUERY_STATE_EXPIRED');
      expect(r.json).not.toHaveProperty('result');
      const csv = await call(svc, 'GET', `/v1/execution/${id}/results/csv`, { key: svc.keys.demo.read });
      expect(csv.status).toBe(400);
      expect(csv.json.error).toBe('Query state is QUERY_STATE_EXPIRED, cannot provide CSV result');
      // Its stored result is deleted.
      for (let i = 0; i < 100 && existsSync(stored); i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(stored)).toBe(false);
    } finally {
      await svc.close();
    }
  });

  it('sweeps expired results without any read', async () => {
    const clock = new ManualClock();
    const svc = await startTestService({ clock, limits: { retention_days: 1, sweep_interval_ms: 50 } });
    try {
      const id = await runSql(svc, 'SELECT 1 AS x');
      const stored = join(svc.dataDir, 'engine', 'results', `${id}.duckdb`);
      expect(existsSync(stored)).toBe(true);
      clock.advance(2 * 86_400_000);
      for (let i = 0; i < 100 && existsSync(stored); i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(stored)).toBe(false);
      expect((await status(svc, id)).state).toBe('QUERY_STATE_EXPIRED');
    } finally {
      await svc.close();
    }
  });
});
