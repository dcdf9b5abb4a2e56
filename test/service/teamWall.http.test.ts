// The wall between teams that does not depend on the SQL sandbox (engine.walled_teams): each
// team's SQL runs on a DuckDB instance of its own, which attaches the team's own file and
// snapshots of other teams' public objects, and nothing else. Attacked over HTTP with two teams,
// the sandbox switched off on purpose (a stand-in for a hole in its lists): team other's SQL gets
// DuckDB's own "does not exist" / "Cannot access file" for demo's private upload, table and view
// definition, while demo's public upload stays readable by name; making it private takes it out
// of other's reach, public again brings it back. On one shared instance (walled_teams off) the
// same attacks read demo's private rows: the second test shows it.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Sandbox } from '../../src/service/engine/sandbox/sandbox.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, waitFor } from './api.ts';

const CANARY = 'CANARY-7f3a';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs SQL as team `other`; the rows (JSON) or the FAILED execution's message. */
async function asOther(svc: TestService, sql: string, sandbox: 'on' | 'off'): Promise<{ rows?: unknown[]; error?: string }> {
  if (sandbox === 'off') vi.spyOn(Sandbox.prototype, 'check').mockResolvedValue(undefined);
  try {
    const id = await executeSql(svc, sql, svc.keys.other.write);
    const s = await waitFor(svc, id, undefined, svc.keys.other.read);
    if (s.state === 'QUERY_STATE_FAILED') return { error: String(s.error?.message) };
    const res = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.other.read });
    expect(res.status).toBe(200);
    return { rows: res.json.result.rows };
  } finally {
    vi.restoreAllMocks();
  }
}

async function asDemo(svc: TestService, sql: string): Promise<void> {
  const id = await executeSql(svc, sql, svc.keys.demo.write);
  const s = await waitFor(svc, id, undefined, svc.keys.demo.read);
  expect(s.state, JSON.stringify(s.error)).toBe('QUERY_STATE_COMPLETED');
}

async function upload(svc: TestService, table: string, data: string, isPrivate: boolean): Promise<void> {
  const res = await call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.demo.write, body: { table_name: table, data, is_private: isPrivate } });
  expect(res.status, res.text).toBe(200);
}

/** demo's private upload, table and view (its definition holds the canary), and a public upload. */
async function plant(svc: TestService): Promise<void> {
  await upload(svc, 'secret', `s\n${CANARY}-upload\n`, true);
  await upload(svc, 'open', 'n\n1\n2\n', false);
  await asDemo(svc, `CREATE TABLE service.demo.mine AS SELECT '${CANARY}-table' AS s`);
  await asDemo(svc, `CREATE VIEW service.demo.spyview AS SELECT '${CANARY}-viewdef' AS s`);
}

/** Every way to other's SQL past the lists (sandbox off) that reads a private object of demo's on one shared instance. */
function attacks(dataDir: string): string[] {
  return [
    'SELECT * FROM service.demo.dataset_secret',
    'SELECT * FROM service.demo.mine',
    'SELECT * FROM service.demo.spyview',
    "SELECT string_agg(sql, ' ') AS s FROM duckdb_views() WHERE NOT internal",
    `SELECT string_agg(schema_name || '/' || table_name, ' ') || ' ${CANARY}-listing' AS s FROM duckdb_tables() WHERE table_name = 'dataset_secret'`,
    "SELECT json_serialize_plan('SELECT * FROM service.demo.dataset_secret') AS s",
    `ATTACH '${join(dataDir, 'engine', 'teams', 'demo.duckdb')}' AS stolen`,
    `SELECT * FROM read_blob('${join(dataDir, 'engine', 'teams', 'demo.duckdb')}')`,
  ];
}

describe('walled_teams (the default): each team on its own DuckDB instance', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
    await plant(svc);
  });
  afterAll(async () => {
    await svc.close();
  });

  it("other's SQL past the sandbox finds none of demo's private objects: DuckDB says they do not exist or cannot be opened", async () => {
    for (const sql of attacks(svc.dataDir)) {
      const out = await asOther(svc, sql, 'off');
      expect(JSON.stringify(out), sql).not.toContain(CANARY);
      if (out.error !== undefined) expect(out.error, sql).toMatch(/does not exist|Cannot access file|disabled by configuration/);
    }
    const denied = await asOther(svc, 'SELECT * FROM service.demo.dataset_secret', 'off');
    expect(denied.error).toMatch(/Table with name "demo.dataset_secret" does not exist/);
    const attach = await asOther(svc, attacks(svc.dataDir)[6]!, 'off');
    expect(attach.error).toMatch(/Cannot access file .*demo.duckdb.* disabled by configuration/);
  });

  it("demo's public upload is read by name; private takes it out of other's reach (even past the sandbox), public brings it back", async () => {
    expect(await asOther(svc, 'SELECT n FROM service.demo.dataset_open ORDER BY n', 'on')).toEqual({ rows: [{ n: 1 }, { n: 2 }] });
    // Replaced with other rows: the next read sees them (a snapshot per change).
    await upload(svc, 'open', `n\n3\n`, false);
    expect(await asOther(svc, 'SELECT n FROM service.demo.dataset_open', 'on')).toEqual({ rows: [{ n: 3 }] });

    await upload(svc, 'open', `n\n4\n`, true);
    const sandboxed = await asOther(svc, 'SELECT n FROM service.demo.dataset_open', 'on');
    expect(sandboxed.error).toMatch(/belongs to another team/);
    const past = await asOther(svc, 'SELECT n FROM service.demo.dataset_open', 'off');
    expect(past.error).toMatch(/dataset_open does not exist/);
    // No snapshot of it is attached any more, under any name.
    const databases = await asOther(svc, "SELECT string_agg(database_name, ',') AS s FROM duckdb_databases()", 'off');
    expect(String((databases.rows?.[0] as { s: string }).s).split(',').sort()).toEqual(['engine', 'service', 'system', 'temp']);

    await upload(svc, 'open', `n\n5\n`, false);
    expect(await asOther(svc, 'SELECT n FROM service.demo.dataset_open', 'on')).toEqual({ rows: [{ n: 5 }] });
  });

  it("a public materialized view is read by other and follows demo's refreshes; the sample data stays readable", async () => {
    await asDemo(svc, "CREATE TABLE service.demo.src AS SELECT 'first' AS v");
    const q = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'mv', query_sql: 'SELECT v, uint256(7) AS u FROM service.demo.src' } });
    expect(q.status, q.text).toBe(200);
    const mv = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_shared', query_id: q.json.query_id, is_private: false } });
    expect(mv.status, mv.text).toBe(200);
    await waitFor(svc, mv.json.execution_id, undefined, svc.keys.demo.read);
    const first = await asOther(svc, 'SELECT v, u FROM service.demo.result_shared', 'on');
    expect(first.rows).toEqual([{ v: 'first', u: '7' }]);
    await asDemo(svc, "INSERT INTO service.demo.src VALUES ('second')");
    const refresh = await call(svc, 'POST', '/v1/materialized-views/result_shared/refresh', { key: svc.keys.demo.write, body: {} });
    expect(refresh.status, refresh.text).toBe(200);
    await waitFor(svc, refresh.json.execution_id, undefined, svc.keys.demo.read);
    const second = await asOther(svc, 'SELECT v FROM service.demo.result_shared ORDER BY v', 'on');
    expect(second.rows).toEqual([{ v: 'first' }, { v: 'second' }]);
    const types = await asOther(svc, 'SELECT count(*) AS n FROM sample.events', 'on');
    expect(types.rows).toEqual([{ n: 2000 }]);
  });
});

describe('on one shared instance (walled_teams off), the sandbox is the only wall', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ engine: { walled_teams: false } });
    await plant(svc);
  });
  afterAll(async () => {
    await svc.close();
  });

  it("other's SQL past the sandbox reads demo's private rows and view definitions (what the wall prevents)", async () => {
    const leaked = [];
    for (const sql of attacks(svc.dataDir).slice(0, 5)) {
      if (JSON.stringify(await asOther(svc, sql, 'off')).includes(CANARY)) leaked.push(sql);
    }
    expect(leaked).toEqual(attacks(svc.dataDir).slice(0, 5));
  });
});

describe('a data folder of one service.duckdb, started with walled_teams', () => {
  it("is split into the teams' files at the first start: tables, uploads, view definitions and keys survive; off again is refused", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-split-'));
    try {
      let svc = await startTestService({ dataDir, engine: { walled_teams: false } });
      await plant(svc);
      await asDemo(svc, 'CREATE TABLE service.demo.keyed (id INTEGER PRIMARY KEY, u UNION(uint256 BIGNUM), e ENUM(\'x\', \'y\'))');
      await asDemo(svc, "INSERT INTO service.demo.keyed VALUES (1, uint256(5), 'y')");
      await svc.close();
      svc = await startTestService({ dataDir, engine: { walled_teams: true } });
      try {
        expect(existsSync(join(dataDir, 'engine', 'service.duckdb'))).toBe(false);
        expect(existsSync(join(dataDir, 'engine', 'service.duckdb.split'))).toBe(true);
        const id = await executeSql(svc, 'SELECT (SELECT s FROM service.demo.mine) AS t, (SELECT s FROM service.demo.spyview) AS v, (SELECT s FROM service.demo.dataset_secret) AS u, (SELECT u FROM service.demo.keyed) AS k, (SELECT e FROM service.demo.keyed) AS e', svc.keys.demo.write);
        const s = await waitFor(svc, id, undefined, svc.keys.demo.read);
        expect(s.state, JSON.stringify(s.error)).toBe('QUERY_STATE_COMPLETED');
        const res = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
        expect(res.json.result.rows).toEqual([{ t: `${CANARY}-table`, v: `${CANARY}-viewdef`, u: `${CANARY}-upload`, k: '5', e: 'y' }]);
        expect(res.json.result.metadata.column_types.slice(3)).toEqual(['uint256', 'varchar']);
        // The primary key came along.
        const dup = await executeSql(svc, "INSERT INTO service.demo.keyed VALUES (1, uint256(6), 'x')", svc.keys.demo.write);
        expect((await waitFor(svc, dup, undefined, svc.keys.demo.read)).error?.message).toMatch(/PRIMARY KEY|primary key|Duplicate key/);
        expect(await asOther(svc, 'SELECT n FROM service.demo.dataset_open ORDER BY n', 'on')).toEqual({ rows: [{ n: 1 }, { n: 2 }] });
        expect((await asOther(svc, 'SELECT * FROM service.demo.mine', 'off')).error).toMatch(/does not exist/);
      } finally {
        await svc.close();
      }
      await expect(startTestService({ dataDir, engine: { walled_teams: false } })).rejects.toThrow(/engine.walled_teams is off: turn it on again/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
