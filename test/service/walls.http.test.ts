// Walls around a team's data that do not depend on the SQL sandbox, attacked over HTTP with two
// teams: the data folder's modes, the owner record a borrower trusts, and the links the service
// hands out. Each case was open before: readable folders, any answering URL taken for the owner,
// next_uri pointing wherever a request's Host header said.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startService, type ServiceHandle } from '../../src/service/index.ts';
import { findOwner, OWNER_FILE } from '../../src/service/owner.ts';
import { TEST_KEYS, testSettings } from '../helpers/service.ts';
import { call, executeSql, waitFor } from './api.ts';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-walls-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Every entry under `dir` whose mode has a group or other bit (symlinks aside), as `path mode`. */
async function loose(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const name of await readdir(at)) {
      const path = join(at, name);
      const st = await lstat(path).catch(() => undefined);
      if (st === undefined || st.isSymbolicLink()) continue;
      if ((st.mode & 0o077) !== 0) out.push(`${path.slice(dir.length)} ${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory()) await walk(path);
    }
  };
  await walk(dir);
  return out;
}

async function start(dataDir: string, extra: Parameters<typeof testSettings>[0] = {}, publicUrl?: string): Promise<ServiceHandle> {
  const settings = { ...testSettings(extra), ...(publicUrl === undefined ? {} : { public_url: publicUrl }) };
  return startService({ dataDir, sampleRows: 100, settings });
}

describe('the data folder is owner-only', () => {
  it('is created 0700; records, results and uploads of both teams are out of other accounts\' reach, and 0600/0700 after a restart', async () => {
    const dataDir = join(await tempDir(), 'data');
    let svc = await start(dataDir);
    try {
      expect((await lstat(dataDir)).mode & 0o777).toBe(0o700);
      for (const [team, keys] of Object.entries(TEST_KEYS)) {
        const id = await executeSql({ ...svc, keys: TEST_KEYS, dataDir, close: async () => undefined }, `SELECT '${team}-secret' AS s, range AS n FROM range(3000)`, keys.write);
        expect((await waitFor({ ...svc, keys: TEST_KEYS, dataDir, close: async () => undefined }, id, undefined, keys.read)).state).toBe('QUERY_STATE_COMPLETED');
        const up = await call(svc, 'POST', '/v1/uploads/csv', { key: keys.write, body: { table_name: 'mine', data: 'x\n1\n', is_private: true } });
        expect(up.status).toBe(200);
        const q = await call(svc, 'POST', '/v1/query', { key: keys.write, body: { name: 'q', query_sql: 'SELECT 1' } });
        expect(q.status).toBe(200);
      }
      // What the service wrote itself (records, ledgers) is 0600 from the start.
      const records = (await loose(dataDir)).filter((l) => l.startsWith('/catalog') || l.startsWith('/limits'));
      expect(records).toEqual([]);
    } finally {
      await svc.close();
    }
    svc = await start(dataDir);
    await svc.close();
    expect(await loose(dataDir)).toEqual([]);
  });

  it('a folder found readable by others is tightened at start, with a warning naming it', async () => {
    const dataDir = join(await tempDir(), 'data');
    const svc = await start(dataDir);
    await svc.close();
    await chmod(dataDir, 0o755);
    await chmod(join(dataDir, 'engine'), 0o755);
    const ledger = join(dataDir, 'leftover.json');
    await writeFile(ledger, '{}', { mode: 0o644 });
    await chmod(ledger, 0o644);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const again = await start(dataDir);
      await again.close();
      const warned = warn.mock.calls.map((c) => String(c[0]));
      expect(warned.some((m) => m.includes(dataDir) && m.includes('0755') && m.includes('0700'))).toBe(true);
    } finally {
      warn.mockRestore();
    }
    expect((await lstat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await lstat(ledger)).mode & 0o777).toBe(0o600);
    expect(await loose(dataDir)).toEqual([]);
  });
});

describe('next_uri never follows the Host header', () => {
  let svc: ServiceHandle;
  let pub: ServiceHandle;
  let id: string;
  let pubId: string;
  beforeAll(async () => {
    svc = await start(await tempDir());
    pub = await start(await tempDir(), {}, 'https://sluice.example.test:8443/');
    const run = async (s: ServiceHandle): Promise<string> => {
      const t = { ...s, keys: TEST_KEYS, dataDir: '', close: async () => undefined };
      const e = await executeSql(t, 'SELECT range AS n FROM range(10)', TEST_KEYS.other.write);
      await waitFor(t, e, undefined, TEST_KEYS.other.read);
      return e;
    };
    id = await run(svc);
    pubId = await run(pub);
  });
  afterAll(async () => {
    await svc?.close();
    await pub?.close();
  });

  it('a request naming another host gets a link to the bound address, which another team cannot read', async () => {
    for (const host of ['evil.example.test:80', 'evil.example.test', '[::1]:1']) {
      const r = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: TEST_KEYS.other.read, query: { limit: 3 }, headers: { host } });
      expect(r.status).toBe(200);
      expect(r.json.next_uri).toBe(`${svc.origin}/api/v1/execution/${id}/results?limit=3&offset=3`);
    }
    // demo following other's link gets nothing of it.
    const foreign = await call({ url: '' }, 'GET', `${svc.origin}/api/v1/execution/${id}/results?limit=3&offset=3`, { key: TEST_KEYS.demo.read });
    expect(foreign.status).toBe(404);
  });

  it('public_url is the origin of every link (JSON, CSV and Arrow headers)', async () => {
    const j = await call(pub, 'GET', `/v1/execution/${pubId}/results`, { key: TEST_KEYS.other.read, query: { limit: 3 }, headers: { host: 'evil.example.test' } });
    expect(j.json.next_uri).toBe(`https://sluice.example.test:8443/api/v1/execution/${pubId}/results?limit=3&offset=3`);
    const c = await call(pub, 'GET', `/v1/execution/${pubId}/results/csv`, { key: TEST_KEYS.other.read, query: { limit: 3 } });
    expect(c.headers['x-service-next-uri']).toBe(`https://sluice.example.test:8443/api/v1/execution/${pubId}/results/csv?limit=3&offset=3`);
  });

  it('a public_url that is not an origin is a settings error naming the field and the value', async () => {
    for (const bad of ['ftp://x.test', 'https://x.test/api', 'https://u:p@x.test', 'not a url']) {
      await expect(start(await tempDir(), {}, bad)).rejects.toThrow(new RegExp(`public_url.*${bad.replace(/[/.:]/g, '\\$&')}`));
    }
  });
});

describe('a borrower trusts owner.json only when the owner proves it', () => {
  let child: ChildProcess;
  let fake: Server;
  let fakeUrl: string;
  beforeAll(async () => {
    // A live process that is not this one, for the record's pid.
    child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)'], { stdio: 'ignore' });
    // Whatever listens on a loopback port: it answers every request 200 and records what it got.
    fake = createServer((req, res) => {
      fakeHits.push(String(req.headers['x-service-api-key'] ?? ''));
      res.end('{}');
    });
    await new Promise<void>((ok) => fake.listen(0, '127.0.0.1', ok));
    fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/api`;
  });
  const fakeHits: string[] = [];
  afterAll(async () => {
    child?.kill();
    await new Promise<void>((ok) => fake?.close(() => ok()));
  });
  afterEach(() => {
    fakeHits.length = 0;
  });

  async function record(dataDir: string, fields: Record<string, unknown>, mode = 0o600): Promise<string> {
    const file = join(dataDir, OWNER_FILE);
    await writeFile(file, JSON.stringify({ pid: child.pid, url: fakeUrl, key: 'sk_demo_admin', started_at: new Date().toISOString(), token: 'a'.repeat(24), ...fields }), { mode });
    await chmod(file, mode);
    return file;
  }

  it('a live pid and a URL that answers are not enough: the impostor is stale, removed, and gets no key', async () => {
    const dataDir = await tempDir();
    const file = await record(dataDir, {});
    expect(await findOwner(dataDir)).toBeUndefined();
    expect(existsSync(file)).toBe(false);
    // It was asked a challenge, without the record's key: nothing of value reached it.
    expect(fakeHits.every((k) => k === '' || k === 'sk_demo_admin')).toBe(true);
  });

  it('the real owner answers the challenge; the same record loosened, foreign or off loopback is stale', async () => {
    const dataDir = await tempDir();
    const owner = await startService({ dataDir, sampleRows: 100, settings: testSettings(), advertise: { key: TEST_KEYS.demo.admin } });
    try {
      const advertised = JSON.parse(await readFile(join(dataDir, OWNER_FILE), 'utf8')) as Record<string, unknown>;
      // The record names this process; as seen from another process (the child's pid), it is found.
      const asOther = { ...advertised, pid: child.pid };
      await record(dataDir, asOther);
      expect((await findOwner(dataDir))?.url).toBe(advertised['url']);

      await record(dataDir, asOther, 0o644);
      expect(await findOwner(dataDir)).toBeUndefined();

      await record(dataDir, { ...asOther, token: 'b'.repeat(32) });
      expect(await findOwner(dataDir)).toBeUndefined();

      await record(dataDir, { ...asOther, url: String(advertised['url']).replace('127.0.0.1', 'sluice.example.test') });
      expect(await findOwner(dataDir)).toBeUndefined();

      if (process.getuid?.() === 0) {
        const file = await record(dataDir, asOther);
        await chown(file, 65534, 65534);
        expect(await findOwner(dataDir)).toBeUndefined();
      }
    } finally {
      await owner.close();
    }
  });
});

describe('POST /v1/sql/classify: the sandbox\'s reading of SQL, nothing run', () => {
  let svc: ServiceHandle;
  beforeAll(async () => {
    svc = await start(await tempDir());
  });
  afterAll(() => svc?.close());

  it('says which statements write, and the denial an execution would get, for the caller\'s team; runs none of it', async () => {
    const classify = async (sql: string, key: string = TEST_KEYS.demo.read) => call(svc, 'POST', '/v1/sql/classify', { key, body: { sql } });
    const t = { ...svc, keys: TEST_KEYS, dataDir: '', close: async () => undefined };
    await waitFor(t, await executeSql(t, 'CREATE TABLE service.other.secret_t AS SELECT 42 AS x', TEST_KEYS.other.write), undefined, TEST_KEYS.other.read);

    const select = await classify('SELECT 1 AS x');
    expect(select.status).toBe(200);
    expect(select.json).toEqual({ writes: false, statements: [{ line: 1, column: 1, writes: false }] });
    const mixed = await classify('SELECT 1;\n  CREATE TABLE service.demo.t AS SELECT 2 AS y;\nEXPLAIN ANALYZE INSERT INTO service.demo.t SELECT 3');
    expect(mixed.json).toEqual({
      writes: true,
      statements: [
        { line: 1, column: 1, writes: false },
        { line: 2, column: 3, writes: true },
        { line: 3, column: 1, writes: true },
      ],
    });
    // Nothing ran: the table does not exist.
    const read = await executeSql(t, 'SELECT * FROM service.demo.t', TEST_KEYS.demo.write);
    expect((await waitFor(t, read)).state).toBe('QUERY_STATE_FAILED');

    const denied = await classify('SELECT x FROM service.other.secret_t');
    expect(denied.json.writes).toBe(false);
    expect(denied.json.denial.message).toMatch(/^line 1:15: Not allowed: schema service\.other belongs to another team/);
    // The owner is judged as its own execution would be.
    expect((await classify('SELECT x FROM service.other.secret_t', TEST_KEYS.other.read)).json.denial).toBeUndefined();

    const q = await call(svc, 'POST', '/v1/query', { key: TEST_KEYS.other.write, body: { name: 'w', query_sql: 'DROP TABLE service.other.secret_t', is_private: true } });
    expect((await call(svc, 'POST', `/v1/query/${q.json.query_id}/classify`, { key: TEST_KEYS.other.read, body: {} })).json.writes).toBe(true);
    expect((await call(svc, 'POST', `/v1/query/${q.json.query_id}/classify`, { key: TEST_KEYS.demo.read, body: {} })).status).toBe(404);
    expect((await classify('')).status).toBe(400);
  });
});

describe('every expression the engine evaluates is checked, whoever asks', () => {
  let svc: ServiceHandle;
  let t: Parameters<typeof executeSql>[0];
  beforeAll(async () => {
    const dataDir = await tempDir();
    svc = await start(dataDir);
    t = { ...svc, keys: TEST_KEYS, dataDir, close: async () => undefined };
    await waitFor(t, await executeSql(t, 'CREATE TABLE service.other.private_t AS SELECT 42 AS answer', TEST_KEYS.other.write), undefined, TEST_KEYS.other.read);
  });
  afterAll(() => svc?.close());

  async function run(sql: string, key: string = TEST_KEYS.demo.write): Promise<{ state: string; text: string; error?: string }> {
    const id = await executeSql(t, sql, key);
    const s = await waitFor(t, id, undefined, key);
    const page = s.state === 'QUERY_STATE_COMPLETED' ? (await call(svc, 'GET', `/v1/execution/${id}/results`, { key })).text : '';
    return { state: s.state, text: JSON.stringify(s) + page, ...(s.error === undefined ? {} : { error: s.error.message as string }) };
  }

  const refused = (fn: string) => [
    `CREATE TEMP TABLE t (x VARCHAR DEFAULT ${fn}); INSERT INTO t DEFAULT VALUES; SELECT * FROM t`,
    `CREATE TABLE service.{team}.d (y INT, x VARCHAR DEFAULT ${fn})`,
    `CREATE TEMP TABLE t (y INT, x VARCHAR AS (${fn}))`,
    `CREATE TEMP TABLE t (y INT, x VARCHAR GENERATED ALWAYS AS (${fn}) VIRTUAL)`,
    `CREATE TEMP TABLE t (x VARCHAR CHECK (${fn} IS NOT NULL))`,
    `CREATE TEMP TABLE t (x VARCHAR, CHECK (${fn} IS NOT NULL))`,
    `CREATE TEMP TABLE t (x VARCHAR, CONSTRAINT c CHECK (${fn} IS NOT NULL))`,
    `EXPLAIN CREATE TEMP TABLE t (x VARCHAR DEFAULT ${fn})`,
    `EXPLAIN ANALYZE CREATE TABLE service.{team}.e (x VARCHAR AS (${fn}))`,
    `EXPLAIN (FORMAT ${fn}) SELECT 1`,
    `CREATE TEMP TABLE t (x DECIMAL(${fn}, 2))`,
    `CREATE MACRO m() AS ${fn}`,
    `CREATE TEMP MACRO m() AS TABLE SELECT ${fn} AS x`,
    `PREPARE p AS SELECT ${fn} AS x`,
    `SET VARIABLE v = ${fn}`,
    `COPY (SELECT 1 AS x) TO 'out.csv' (DELIMITER ${fn})`,
    `SELECT * FROM unnest([1], recursive := ${fn} IS NULL)`,
    `SELECT * FROM generate_series(1, 3) WHERE ${fn} IS NULL`,
    `INSERT INTO service.{team}.ok VALUES (1, ${fn}, ['a'], {'a': 1, 'b': 2.5})`,
  ];

  it('a refused function is refused in every position an expression can hide, for both teams, located, nothing run', async () => {
    // One function a team over HTTP (test/service/engine/expressionFuzz.test.ts places every function in every position).
    const attacks = [
      ['demo', TEST_KEYS.demo.write, "json_serialize_plan('SELECT * FROM service.other.private_t')"],
      ['other', TEST_KEYS.other.write, "current_setting('home_directory')"],
    ] as const;
    for (const [team, key, fn] of attacks) {
      const ok = await run(`CREATE TABLE service.${team}.ok (id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, tags VARCHAR[], s STRUCT(a INT, b DECIMAL(10, 2)))`, key);
      expect(ok.state, ok.error).toBe('QUERY_STATE_COMPLETED');
      for (const sql of refused(fn).map((s) => s.replaceAll('{team}', team))) {
        const r = await run(sql, key);
        expect(r.state, sql).toBe('QUERY_STATE_FAILED');
        // Refused by the sandbox, located; or by DuckDB's own parser before anything is bound.
        expect(r.error, sql).toMatch(/^(line \d+:\d+: (Not allowed|access to files is not allowed|syntax error)|Expected a constant as type modifier)/);
        for (const leak of [tmpdir(), 'answer', '"42"']) expect(r.text.includes(leak), `${sql} leaked ${leak}`).toBe(false);
      }
      // A column list without expressions is served as before.
      const filled = await run(`INSERT INTO service.${team}.ok VALUES (1, 'n', ['a'], {'a': 1, 'b': 2.5}); SELECT count(*) AS n FROM service.${team}.ok`, key);
      expect(filled.state, filled.error).toBe('QUERY_STATE_COMPLETED');
    }
  });

  it('foreign keys are refused: an insert would read the referenced table', async () => {
    // Across schemas DuckDB's own parser refuses it; within one, the sandbox does.
    expect((await run('CREATE TABLE service.demo.fk (x INT REFERENCES service.other.private_t(answer))')).state).toBe('QUERY_STATE_FAILED');
    expect((await run('CREATE TABLE service.demo.fk (x INT REFERENCES ok(id))')).error).toMatch(/^line 1:37: Not allowed: foreign keys/);
    expect((await run('CREATE TABLE service.demo.fk2 (x INT, FOREIGN KEY (x) REFERENCES ok(id))')).error).toMatch(/^line 1:39: Not allowed: foreign keys/);
  });
});
