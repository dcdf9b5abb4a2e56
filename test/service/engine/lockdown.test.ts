// The engine-wide wall under the sandbox, checked on its own: DuckDB itself refuses what
// lockdown.ts says it refuses, lets the files instance attach result files, and lets the
// instance of users' SQL open no directory at all.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { lockDown } from '../../../src/service/engine/sandbox/lockdown.ts';

let dir: string;
let instance: DuckDBInstance;
let conn: DuckDBConnection;
/** Locked as the instance of users' SQL: no readable directory. */
let users: DuckDBInstance;
let usersConn: DuckDBConnection;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-lockdown-test-'));
  await mkdir(join(dir, 'results'));
  instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  conn = await instance.connect();
  await lockDown(conn, join(dir, 'results'));
  users = await DuckDBInstance.create(join(dir, 'engine.duckdb'), { threads: '2', temp_directory: join(dir, 'tmp') });
  usersConn = await users.connect();
  await usersConn.run(`ATTACH '${join(dir, 'service.duckdb')}' AS service`);
  await lockDown(usersConn);
});
afterAll(async () => {
  conn.closeSync();
  instance.closeSync();
  usersConn.closeSync();
  users.closeSync();
  await rm(dir, { recursive: true, force: true });
});

async function failure(sql: string, on: DuckDBConnection = conn): Promise<string> {
  try {
    await on.run(sql);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error(`expected ${sql} to fail`);
}

test('files outside the results directory are refused by DuckDB', async () => {
  for (const sql of [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    `COPY (SELECT 1) TO '${join(dir, 'out.csv')}'`,
    "ATTACH '/tmp/sluice-lockdown-evil.duckdb' AS evil",
    `EXPORT DATABASE '${join(dir, 'export')}'`,
  ]) {
    expect(await failure(sql), sql).toContain('file system operations are disabled by configuration');
  }
});

test('extensions cannot be installed or loaded', async () => {
  expect(await failure('INSTALL httpfs')).toContain('Permission Error');
  expect(await failure('LOAD httpfs')).toContain('Loading external extensions is disabled');
});

test('the configuration is locked, the lock included', async () => {
  for (const sql of ['SET threads = 1', 'SET errors_as_json = true', 'RESET temp_directory', 'PRAGMA threads = 1', 'SET GLOBAL lock_configuration = false', "SET GLOBAL allowed_configs = ['threads']"]) {
    expect(await failure(sql), sql).toContain('the configuration has been locked');
  }
  // Only the limits the engine sets per running execution (resourceBounds.ts) and the session's
  // integer division (the SQL dialect's, dialect/index.ts) stay changeable under the lock; user
  // SQL cannot issue SET (the sandbox refuses it).
  const allowed = await conn.runAndReadAll("SELECT current_setting('allowed_configs')");
  expect(String(allowed.getRowsJson()[0]![0]).split(',').sort()).toEqual(['integer_division', 'max_memory', 'max_temp_directory_size']);
  const threads = await conn.runAndReadAll("SELECT current_setting('threads')");
  expect(Number(threads.getRowsJson()[0]![0])).toBe(2);
});

test('the engine can still write and attach result files', async () => {
  const file = join(dir, 'results', 'r1.duckdb');
  await conn.run(`ATTACH '${file}' AS w1`);
  await conn.run('CREATE TABLE w1.main.result AS SELECT 7 AS v');
  await conn.run('DETACH w1');
  await conn.run(`ATTACH '${file}' AS r1 (READ_ONLY)`);
  expect((await conn.runAndReadAll('SELECT v FROM r1.main.result')).getRowsJson()).toEqual([[7]]);
});

test('the instance of users\' SQL opens no file but its own catalogs, and still writes them', async () => {
  const file = join(dir, 'results', 'r1.duckdb');
  for (const sql of [
    `SELECT * FROM read_text('${file}')`,
    `SELECT * FROM glob('${join(dir, 'results')}/*')`,
    `ATTACH '${file}' AS r1 (READ_ONLY)`,
    `COPY (SELECT 1) TO '${join(dir, 'results', 'x.csv')}'`,
  ]) {
    expect(await failure(sql, usersConn), sql).toContain('file system operations are disabled by configuration');
  }
  // DuckDB keeps what its storage needs (lockdown.ts) and the lists cannot change any more.
  expect(await failure(`SET GLOBAL allowed_directories = ['${dir}/']`, usersConn)).toMatch(/configuration has been locked|Cannot change allowed_directories/);
  await usersConn.run('CREATE TABLE service.main.t AS SELECT 1 AS v');
  await usersConn.run('CHECKPOINT service');
  expect((await usersConn.runAndReadAll('SELECT v FROM service.main.t')).getRowsJson()).toEqual([[1]]);
});
