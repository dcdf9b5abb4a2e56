// Attacks on the sandbox by class, as a hostile team would try them against a service shared
// with another team. Each case got through the sandbox as it was when it denied what it knew
// to be dangerous and let the rest through; now every function, table function, setting,
// pragma and catalog object a statement names must be on the service's lists.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EngineError, type ExecuteOptions } from '../../../src/service/engine/index.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
/** Whether team `other` shares `service.other.shared` (it makes it private half-way). */
let shared = true;
const canRead = (owner: string, name: string): boolean => owner === 'other' && name === 'shared' && shared;
/** Stands for another team's stored rows inside the directory the engine reads results from. */
const CANARY = 'TOPSECRET-ROW-7f3a';
let canaryPath = '';

beforeAll(async () => {
  fx = await startEngine({ sampleRows: 100 });
  await fx.engine.execute('CREATE TABLE service.other.secret AS SELECT 42 AS x', opts({ team: 'other' }));
  await fx.engine.execute('CREATE TABLE service.other.shared AS SELECT 1 AS x', opts({ team: 'other' }));
  const dir = join(fx.dataDir, 'results', 'res_other.enc');
  mkdirSync(dir, { recursive: true });
  canaryPath = join(dir, 'rows.csv');
  writeFileSync(canaryPath, `name,value\nheader,1\n${CANARY},2\n`);
});
afterAll(async () => {
  await fx.close();
});

const demo: Partial<ExecuteOptions> = { team: 'demo', canRead };

async function denied(sql: string, extra: Partial<ExecuteOptions> = demo): Promise<EngineError> {
  const o = opts(extra);
  try {
    await fx.engine.execute(sql, o);
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
    return err;
  }
  const page = await fx.engine.page(o.resultId, { offset: 0, limit: 5 });
  throw new Error(`expected ${JSON.stringify(sql)} to be denied; it answered ${page.rowsJson.slice(0, 300)}`);
}

async function rows(sql: string, extra: Partial<ExecuteOptions> = demo): Promise<unknown[]> {
  const o = opts(extra);
  await fx.engine.execute(sql, o);
  return JSON.parse((await fx.engine.page(o.resultId, { offset: 0, limit: 100 })).rowsJson) as unknown[];
}

function expectRefused(err: EngineError, text: string): void {
  expect(err.kind).toBe('semantic');
  expect(err.message).toMatch(/^line \d+:\d+: Not allowed: /);
  expect(err.message).toContain(text);
  expect(err.message).not.toContain(CANARY);
  expect(err.message).not.toContain(fx.dataDir);
}

const q = (s: string): string => s.replaceAll("'", "''");

describe('functions that take SQL text, a path or a setting name', () => {
  test.each([
    ['json_serialize_plan binding read_csv over a stored result', () => `SELECT json_serialize_plan('${q(`SELECT * FROM read_csv('${canaryPath}', skip = 2)`)}') AS p`, 'json_serialize_plan'],
    ['json_serialize_plan over another team\'s table', () => "SELECT json_serialize_plan('SELECT * FROM service.other.secret') AS p", 'json_serialize_plan'],
    ['json_serialize_plan nested in an argument', () => `SELECT length(json_serialize_plan('${q(`FROM read_text('${canaryPath}')`)}')) AS n`, 'json_serialize_plan'],
    ['json_serialize_plan in a WHERE clause', () => "SELECT 1 AS a WHERE json_serialize_plan('SELECT 1') IS NOT NULL", 'json_serialize_plan'],
    ['json_serialize_sql (parses text the sandbox never saw)', () => "SELECT json_serialize_sql('SELECT 1') AS s", 'json_serialize_sql'],
    ['json_deserialize_sql', () => "SELECT json_deserialize_sql(json('{}')) AS s", 'json_deserialize_sql'],
    ['pg_get_viewdef (a macro over duckdb_views)', () => 'SELECT pg_get_viewdef(0) AS d', 'pg_get_viewdef'],
    ['format_type (a macro over duckdb_types)', () => 'SELECT format_type(0, 0) AS t', 'format_type'],
    ['get_block_size (a macro over pragma_database_size)', () => "SELECT get_block_size('service') AS b", 'get_block_size'],
    ['pg_get_constraintdef (a macro over duckdb_constraints)', () => 'SELECT pg_get_constraintdef(0) AS c', 'pg_get_constraintdef'],
    ['nextval of a named sequence', () => "SELECT nextval('service.other.seq') AS n", 'nextval'],
    ['getvariable', () => "SELECT getvariable('x') AS v", 'getvariable'],
    ['a function written with a catalog', () => "SELECT system.main.json_serialize_plan('SELECT 1') AS p", 'json_serialize_plan'],
    ['a scalar called by a schema-qualified name', () => "SELECT main.json_serialize_plan('SELECT 1') AS p", 'json_serialize_plan'],
  ])('%s', async (_name, sql, fn) => {
    expectRefused(await denied(sql()), fn);
  });

  test('the canary file is never read into a result or an error', async () => {
    for (const sql of [
      `SELECT json_serialize_plan('${q(`SELECT * FROM read_csv('${canaryPath}', skip = 2, header = true)`)}') AS p`,
      `SELECT json_serialize_plan('${q(`SELECT * FROM read_text('${canaryPath}')`)}') AS p`,
    ]) {
      const err = await denied(sql);
      expect(err.message).not.toContain(CANARY);
    }
  });
});

describe('settings', () => {
  test.each(['allowed_directories', 'temp_directory', 'home_directory', 'extension_directory', 'secret_directory', 'file_search_path', 'allowed_paths', 'profile_output', 'log_query_path'])(
    'current_setting(%s) is refused',
    async (name) => {
      expectRefused(await denied(`SELECT current_setting('${name}') AS v`), `current_setting('${name}')`);
    },
  );

  test('current_setting of a name computed at run time is refused', async () => {
    expectRefused(await denied("SELECT current_setting('allowed_' || 'directories') AS v"), 'current_setting');
  });

  test('harmless settings can still be read', async () => {
    expect(await rows("SELECT current_setting('TimeZone') AS tz, current_setting('threads') AS t")).toEqual([{ tz: 'UTC', t: 2 }]);
  });
});

describe('quoting and name-splitting', () => {
  test.each([
    'PRAGMA table_info("service.other.secret")',
    'PRAGMA table_info("service.OTHER.secret")',
  ])('%s', async (sql) => {
    expectRefused(await denied(sql), 'service.other belongs to another team');
  });

  test('the own table under the quoted form still works', async () => {
    await rows('CREATE OR REPLACE TABLE service.demo.mine AS SELECT 1 AS a');
    expect(await rows('PRAGMA table_info("service.demo.mine")')).toMatchObject([{ name: 'a' }]);
  });
});

describe('views and privacy changes: privacy is checked when a view is read', () => {
  test('a view over a shared table stops answering once the table is private', async () => {
    shared = true;
    await rows('CREATE OR REPLACE VIEW service.demo.spy AS SELECT * FROM service.other.shared');
    expect(await rows('SELECT x FROM service.demo.spy')).toEqual([{ x: 1 }]);
    shared = false;
    try {
      expectRefused(await denied('SELECT x FROM service.demo.spy'), 'service.other belongs to another team');
      // Through a view over the view, a CTE, a subquery, DESCRIBE and a new table made from it.
      expectRefused(await denied('SELECT * FROM (SELECT * FROM service.demo.spy)'), 'service.other');
      expectRefused(await denied('WITH s AS (FROM service.demo.spy) SELECT * FROM s'), 'service.other');
      expectRefused(await denied('CREATE TABLE service.demo.copy AS SELECT * FROM service.demo.spy'), 'service.other');
      expectRefused(await denied('SUMMARIZE service.demo.spy'), 'service.other');
    } finally {
      shared = true;
    }
  });

  test('a view over a view over a shared table', async () => {
    shared = true;
    await rows('CREATE OR REPLACE VIEW service.demo.spy1 AS SELECT * FROM service.other.shared');
    await rows('CREATE OR REPLACE VIEW service.demo.spy2 AS SELECT x + 1 AS y FROM service.demo.spy1');
    shared = false;
    try {
      expectRefused(await denied('SELECT * FROM service.demo.spy2'), 'service.other belongs to another team');
    } finally {
      shared = true;
    }
  });

  test('a view created before the allowlist with a function now refused is refused when read', async () => {
    // The service's own connection stands for a view that an older sandbox let through.
    await (fx.engine as DuckDbEngine).withConnection(async (conn) => {
      await conn.run("CREATE OR REPLACE VIEW service.demo.old AS SELECT json_serialize_plan('SELECT 1') AS p");
    });
    expectRefused(await denied('SELECT * FROM service.demo.old'), 'json_serialize_plan');
  });
});
