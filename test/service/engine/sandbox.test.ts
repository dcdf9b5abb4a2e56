// User SQL is sandboxed: each attack below is refused before it runs, with a located
// 'semantic' error, and legitimate SQL keeps working.
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EngineError, type ExecuteOptions } from '../../../src/service/engine/index.ts';
import { Sandbox } from '../../../src/service/engine/sandbox/sandbox.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine({ sampleRows: 100 });
  await fx.engine.execute('CREATE TABLE service.other.secret AS SELECT 42 AS x', opts({ team: 'other' }));
});
afterAll(async () => {
  await fx.close();
});

async function denied(sql: string, extra: Partial<ExecuteOptions> = { team: 'demo' }): Promise<EngineError> {
  const o = opts(extra);
  try {
    await fx.engine.execute(sql, o);
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
    expect(await fx.engine.hasResult(o.resultId)).toBe(false);
    return err;
  }
  throw new Error(`expected ${JSON.stringify(sql)} to be denied`);
}

async function rows(sql: string, extra: Partial<ExecuteOptions> = { team: 'demo' }): Promise<unknown[]> {
  const o = opts(extra);
  await fx.engine.execute(sql, o);
  return JSON.parse((await fx.engine.page(o.resultId, { offset: 0, limit: 100 })).rowsJson) as unknown[];
}

function expectDenial(err: EngineError, text: string): void {
  expect(err.kind).toBe('semantic');
  expect(err.message).toMatch(/^line \d+:\d+: /);
  expect(err.message).toContain(text);
  expect(err.line).toBeGreaterThan(0);
  expect(err.column).toBeGreaterThan(0);
}

const FILES = 'access to files is not allowed';
const SETTINGS = 'engine settings cannot be changed';
const OTHER = 'Not allowed: schema service.other belongs to another team';

describe('files on the host', () => {
  test('read_csv names the call and points at it', async () => {
    const err = await denied("SELECT * FROM read_csv('/etc/passwd')");
    expect(err.message).toBe("line 1:15: access to files is not allowed: read_csv('/etc/passwd')");
    expect({ line: err.line, column: err.column }).toEqual({ line: 1, column: 15 });
  });

  test.each([
    ["SELECT * FROM read_text('/etc/passwd')", "read_text('/etc/passwd')"],
    ["SELECT * FROM read_blob('/etc/passwd')", "read_blob('/etc/passwd')"],
    ["SELECT * FROM read_parquet('/tmp/x.parquet')", 'read_parquet'],
    ["SELECT * FROM read_json_auto('/etc/x.json')", 'read_json_auto'],
    ["SELECT * FROM read_csv_auto(['/etc/passwd', '/etc/group'])", 'read_csv_auto'],
    ["SELECT * FROM glob('/etc/*')", "glob('/etc/*')"],
    ["SELECT * FROM sniff_csv('/etc/passwd')", 'sniff_csv'],
    ["SELECT * FROM parquet_metadata('/tmp/x.parquet')", 'parquet_metadata'],
    ["SELECT * FROM '/etc/passwd'", "'/etc/passwd'"],
    ['SELECT * FROM "secrets.csv"', "'secrets.csv'"],
    ["FROM 'https://example.com/x.csv'", "'https://example.com/x.csv'"],
    ["SELECT (SELECT count(*) FROM read_text('/etc/passwd')) AS n", 'read_text'],
    ["SELECT 1 WHERE EXISTS (SELECT 1 FROM read_text('/etc/hosts'))", 'read_text'],
    ["WITH f AS (SELECT * FROM read_text('/etc/passwd')) SELECT * FROM f", 'read_text'],
    ["SELECT * FROM sample.events e JOIN read_text('/etc/passwd') t ON true", 'read_text'],
    ["SELECT * FROM range(3) UNION ALL SELECT * FROM read_csv('/etc/passwd')", 'read_csv'],
    ["CREATE TEMP TABLE t AS SELECT * FROM read_text('/etc/passwd')", 'read_text'],
    ["CREATE TEMP VIEW v AS SELECT * FROM read_text('/etc/passwd')", 'read_text'],
    ["CREATE TEMP TABLE t (c VARCHAR); INSERT INTO t SELECT content FROM read_text('/etc/passwd')", 'read_text'],
    ["EXPLAIN ANALYZE SELECT * FROM read_text('/etc/passwd')", 'read_text'],
    ["DESCRIBE SELECT * FROM read_csv('/etc/passwd')", 'read_csv'],
    ["EXPLAIN (ANALYZE, FORMAT json) SELECT * FROM read_text('/etc/passwd')", 'read_text'],
    ["COPY (SELECT 1) TO '/tmp/sluice-sandbox-copy.csv'", 'COPY'],
    ["COPY sample.events TO '/tmp/sluice-sandbox-copy.csv'", 'COPY'],
    ["EXPORT DATABASE '/tmp/sluice-sandbox-export'", 'EXPORT'],
    ["IMPORT DATABASE '/tmp/sluice-sandbox-export'", 'IMPORT'],
  ])('%s', async (sql, text) => {
    const err = await denied(sql);
    expectDenial(err, FILES);
    expect(err.message).toContain(text);
  });

  test('nothing was written to the host', () => {
    expect(existsSync('/tmp/sluice-sandbox-copy.csv')).toBe(false);
    expect(existsSync(join(tmpdir(), 'sluice-sandbox-export'))).toBe(false);
  });

  test("stored results (other teams' included) cannot be read as files, even inside the data directory", async () => {
    const o = opts({ team: 'other' });
    await fx.engine.execute('SELECT 42 AS secret', o);
    const file = join(fx.dataDir, 'results', `${o.resultId}.duckdb`);
    expectDenial(await denied(`SELECT * FROM read_blob('${file}')`), FILES);
    expectDenial(await denied(`ATTACH '${file}' AS stolen (READ_ONLY)`), 'cannot be attached');
    expectDenial(await denied(`COPY (SELECT 1) TO '${join(fx.dataDir, 'results', 'x.csv')}'`), FILES);
  });
});

describe('databases, extensions and settings', () => {
  test.each([
    ["ATTACH '/tmp/sluice-evil.duckdb' AS evil", 'ATTACH'],
    ["ATTACH ':memory:' AS m", 'ATTACH'],
    ['DETACH service', 'DETACH'],
    ['DETACH DATABASE IF EXISTS service', 'DETACH'],
    ['USE service.other', 'USE'],
  ])('%s', async (sql, text) => {
    expectDenial(await denied(sql), `Not allowed: ${text}: the databases of the service cannot be attached`);
  });

  test.each(['INSTALL httpfs', 'LOAD httpfs', "LOAD '/tmp/evil.duckdb_extension'", 'FORCE INSTALL httpfs', 'UPDATE EXTENSIONS'])('%s', async (sql) => {
    expectDenial(await denied(sql), 'extensions cannot be installed or loaded');
  });

  test.each([
    'SET threads = 1',
    'SET GLOBAL threads = 1',
    "SET memory_limit = '1MB'",
    'SET errors_as_json = false',
    'RESET errors_as_json',
    'SET GLOBAL lock_configuration = false',
    'SET enable_external_access = true',
    "SET search_path = 'service.other'",
    "SET schema = 'other'",
    "SET VARIABLE x = 1",
    'PRAGMA threads = 1',
    'PRAGMA enable_profiling',
    "PRAGMA memory_limit = '1MB'",
  ])('%s', async (sql) => {
    expectDenial(await denied(sql), SETTINGS);
  });

  test('CALL, ALTER, CREATE MACRO/SCHEMA/SECRET, UPDATE and transactions are refused', async () => {
    expectDenial(await denied("CALL pragma_table_info('sample.events')"), 'Not allowed: CALL');
    expectDenial(await denied('ALTER TABLE sample.events RENAME TO gone'), 'Not allowed: ALTER');
    expectDenial(await denied('CREATE MACRO uint256(v) AS 0'), 'Not allowed: CREATE MACRO');
    expectDenial(await denied('CREATE OR REPLACE TEMP MACRO m() AS TABLE SELECT 1'), 'Not allowed: CREATE TEMP MACRO');
    expectDenial(await denied('CREATE SCHEMA service.mine'), 'Not allowed: CREATE SCHEMA');
    expectDenial(await denied("CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')"), 'Not allowed: CREATE SECRET');
    expectDenial(await denied('UPDATE sample.events SET id = 0'), 'Not allowed: UPDATE');
    expectDenial(await denied('DELETE FROM sample.events'), 'Not allowed: DELETE');
    expectDenial(await denied('CHECKPOINT'), 'Not allowed: CHECKPOINT');
    expectDenial(await denied('BEGIN TRANSACTION'), 'Not allowed: BEGIN');
  });

  test('shared data cannot be written: only temporary tables and the own schema', async () => {
    expectDenial(await denied('CREATE TABLE t AS SELECT 1 AS a'), 'create TEMP t or service.demo.t');
    expectDenial(await denied('CREATE OR REPLACE TABLE sample.events AS SELECT 1 AS a'), 'Not allowed: writing sample.events');
    expectDenial(await denied('INSERT INTO sample.events (id) VALUES (1)'), 'Not allowed: writing sample.events');
    expectDenial(await denied('DROP TABLE sample.events'), 'Not allowed: writing sample.events');
    expectDenial(await denied('DROP TABLE IF EXISTS engine.sample.all_types'), 'Not allowed: writing engine.sample.all_types');
    expect(await rows('SELECT count(*)::INTEGER AS n FROM sample.events')).toEqual([{ n: 100 }]);
  });

  test("a statement after an E-string with an escaped quote is split off and judged on its own", async () => {
    // The splitter reads E'it\'s' as one string (it shares the sandbox's tokenizer), so the
    // ATTACH is a statement of its own, denied at its position.
    const err = await denied("SELECT E'it\\'s'; ATTACH ':memory:' AS m");
    expectDenial(err, 'ATTACH');
    expect(err).toMatchObject({ line: 1, column: 18 });
  });

  test('text that holds two statements is refused whole, should a splitter ever hand it over', async () => {
    // The backstop behind the splitter: DuckDB's own statement count, asked by the sandbox.
    const denial = await (fx.engine as DuckDbEngine).withConnection((conn) =>
      new Sandbox(conn, { team: 'demo', mainCatalog: 'engine', readableSchemas: new Set(['main', 'sample']), systemViews: new Set() }).check("SELECT 1; ATTACH ':memory:' AS m"),
    );
    expect(denial?.message).toContain('one statement expected');
  });

  test('query forms the parser cannot hand over are refused, not guessed', async () => {
    expectDenial(await denied('PIVOT sample.events ON flag USING count(*)'), 'this form of query cannot be checked');
  });

  test('after every attempt the settings are intact and errors are still located', async () => {
    const err = await denied('SELECT 1,\n  nope FROM range(1)');
    expect(err).toMatchObject({ kind: 'semantic', line: 2, column: 3 });
    const o = opts();
    await fx.engine.execute("SELECT current_setting('threads') AS t, current_setting('enable_external_access') AS e, current_setting('lock_configuration') AS l", o);
    expect(JSON.parse((await fx.engine.page(o.resultId, { offset: 0, limit: 1 })).rowsJson)).toEqual([{ t: 2, e: false, l: true }]);
  });
});

describe("another team's schema is invisible", () => {
  test.each([
    ['SELECT * FROM service.other.secret', 1, 15],
    ['SELECT * FROM "service"."OTHER"."secret"', 1, 15],
    ['SELECT 1 AS a,\n  (SELECT max(x) FROM service.other.secret) AS b', 2, 23],
    ['SELECT * FROM sample.events e JOIN service.other.secret s ON e.id = s.x', 1, 36],
    ['WITH s AS (SELECT * FROM service.other.secret) SELECT * FROM s', 1, 26],
    ['DESCRIBE service.other.secret', 1, 10],
    ['SUMMARIZE service.other.secret', 1, 11],
    ["SELECT * FROM pragma_table_info('service.other.secret')", 1, 15],
    ["PRAGMA table_info('service.other.secret')", 1, 19],
    ['CREATE TEMP TABLE t AS SELECT * FROM service.other.secret', 1, 38],
    ['INSERT INTO service.other.secret VALUES (1)', 1, 13],
    ['DROP TABLE service.other.secret', 1, 12],
    ['CREATE TABLE service.other.mine AS SELECT 1 AS a', 1, 14],
    ['EXPLAIN (ANALYZE) CREATE TABLE service.other.mine AS SELECT 1 AS a', 1, 32],
  ])('%s', async (sql, line, column) => {
    const err = await denied(sql);
    expectDenial(err, OTHER);
    expect({ line: err.line, column: err.column }).toEqual({ line, column });
  });

  test('text-driven SQL cannot reach it either: query, query_table, json_execute_serialized_sql', async () => {
    expectDenial(await denied("SELECT * FROM query_table('service.other.secret')"), 'Not allowed: table function query_table');
    expectDenial(await denied("SELECT * FROM query('SELECT * FROM service.other.secret')"), 'Not allowed: table function query');
    expectDenial(
      await denied("SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT * FROM service.other.secret'))"),
      'Not allowed: table function json_execute_serialized_sql',
    );
  });

  test('search_path and USE tricks are refused', async () => {
    expectDenial(await denied("SET search_path = 'service.other'; SELECT * FROM secret"), SETTINGS);
    expectDenial(await denied("SET SESSION search_path = 'service.other,main'"), SETTINGS);
    expectDenial(await denied('USE service.other; SELECT * FROM secret'), 'Not allowed: USE');
    // Without them an unqualified name never reaches service.other.
    const err = await denied('SELECT * FROM secret');
    expect(err.message).toContain('secret does not exist');
  });

  test('catalog listings that would show every team are refused', async () => {
    for (const sql of [
      'SELECT * FROM duckdb_tables()',
      'SELECT * FROM duckdb_tables',
      'SELECT * FROM main.duckdb_columns',
      'SELECT * FROM duckdb_schemas()',
      'SELECT * FROM duckdb_databases()',
      'SELECT * FROM information_schema.tables',
      'SELECT * FROM pg_catalog.pg_class',
      'SELECT * FROM pg_namespace',
      'SELECT * FROM sqlite_master',
      'SELECT * FROM system.main.duckdb_tables',
      'SHOW ALL TABLES',
      'SHOW DATABASES',
      'SHOW TABLES',
    ]) {
      expect((await denied(sql)).message, sql).toMatch(/Not allowed/);
    }
  });

  test("databases the engine attaches for paging (other teams' results) are refused", async () => {
    const o = opts({ team: 'other' });
    await fx.engine.execute('SELECT 42 AS secret', o);
    await fx.engine.page(o.resultId, { offset: 0, limit: 1 }); // attaches it as r_<id>
    expectDenial(await denied(`SELECT * FROM "r_${o.resultId}".main.result`), 'only sample.*, temporary tables');
    expectDenial(await denied(`SELECT * FROM "r_${o.resultId}".result`), 'only sample.*, temporary tables');
  });

  test('error hints do not name tables of other teams, but still name readable ones', async () => {
    const hidden = await denied('SELECT * FROM secre');
    expect(hidden.message).toContain('Table with name secre does not exist');
    expect(hidden.message).not.toContain('service.other');
    expect((await denied('SELECT * FROM sample.event')).message).toContain('Did you mean "events"?');
  });

  test('column defaults, checks and generated columns are refused before DuckDB binds them, located', async () => {
    const err = await denied('CREATE TEMP TABLE t (a INTEGER DEFAULT (SELECT max(x) FROM service.other.secret))');
    expect(err.message).toMatch(/^line 1:32: Not allowed: DEFAULT in a column definition/);
  });

  test('the secret is still there for its owner', async () => {
    expect(await rows('SELECT x FROM service.other.secret', { team: 'other' })).toEqual([{ x: 42 }]);
  });

  test('without a team no service schema is visible', async () => {
    expectDenial(await denied('SELECT * FROM service.demo.anything', {}), 'Not allowed: schema service.demo belongs to another team');
  });

  test('canRead lets a team read what another shares, and nothing more', async () => {
    const asked: string[] = [];
    const canRead = (owner: string, name: string): boolean => {
      asked.push(`${owner}.${name}`);
      return owner === 'other' && name === 'secret';
    };
    expect(await rows('SELECT x FROM "Service".Other.SECRET', { team: 'demo', canRead })).toEqual([{ x: 42 }]);
    expect(asked).toEqual(['other.secret']);
    expectDenial(await denied('SELECT * FROM service.other.hidden', { team: 'demo', canRead }), OTHER);
    expectDenial(await denied('INSERT INTO service.other.secret VALUES (1)', { team: 'demo', canRead }), OTHER);
    expectDenial(await denied('DROP TABLE service.other.secret', { team: 'demo', canRead }), OTHER);
  });
});

describe('legitimate SQL still works', () => {
  test('sample tables, CTEs, subqueries, joins, set operations', async () => {
    expect(
      await rows(`WITH big AS (SELECT id FROM sample.events WHERE id >= 97)
        SELECT b.id, (SELECT count(*) FROM sample.all_types)::INTEGER AS n
        FROM big b JOIN sample.events e USING (id) WHERE EXISTS (SELECT 1 FROM range(1))
        UNION ALL SELECT 1000, 0 ORDER BY 1`),
    ).toEqual([{ id: 97, n: 4 }, { id: 98, n: 4 }, { id: 99, n: 4 }, { id: 1000, n: 0 }]);
    expect(await rows('FROM engine.sample.events SELECT id ORDER BY id LIMIT 1')).toEqual([{ id: 0 }]);
  });

  test('uint256 / int256 macros, struct fields, table functions, strings that mention files', async () => {
    expect(
      await rows(`SELECT uint256('123') AS u, int256(-5) AS i, c_row.nested.y AS y, 'read_csv(''/etc/passwd'')' AS s
        FROM sample.all_types WHERE id = 1`),
    ).toEqual([{ u: '123', i: '-5', y: 'deep', s: "read_csv('/etc/passwd')" }]);
    expect(await rows('SELECT count(*)::INTEGER AS n FROM generate_series(1, 5), unnest([1, 2]) AS t(v)')).toEqual([{ n: 10 }]);
    expect(await rows("SELECT current_setting('TimeZone') AS tz")).toEqual([{ tz: 'UTC' }]);
  });

  test('the own schema: create, insert, read, drop', async () => {
    await fx.engine.execute('CREATE OR REPLACE TABLE service.demo.mine AS SELECT 1 AS a', opts({ team: 'demo' }));
    await fx.engine.execute('INSERT INTO service.demo.mine VALUES (2)', opts({ team: 'demo' }));
    expect(await rows('SELECT sum(a)::INTEGER AS s FROM service.demo.mine')).toEqual([{ s: 3 }]);
    await fx.engine.execute('DROP TABLE service.demo.mine', opts({ team: 'demo' }));
    expect((await denied('SELECT * FROM service.demo.mine')).message).toContain('does not exist');
  });

  test('result_* and dataset_* in the own schema are the service\'s: read-only for user SQL', async () => {
    // What a view refresh or an upload leaves there (written by trusted code, not user SQL).
    await fx.engine.tables.ingestCsv('demo', 'result_totals', 'n\n7\n', ['n']);
    expect(await rows('SELECT n FROM service.demo.result_totals')).toEqual([{ n: 7 }]);
    for (const sql of [
      'CREATE OR REPLACE TABLE service.demo.result_totals AS SELECT 1 AS n',
      'CREATE TABLE service.demo.RESULT_new AS SELECT 1 AS n',
      'CREATE VIEW service.demo.result_v AS SELECT 1 AS n',
      'INSERT INTO service.demo.result_totals VALUES (8)',
      'DROP TABLE service.demo.result_totals',
      'DROP VIEW IF EXISTS "service"."demo"."result_totals"',
      'CREATE TABLE service.demo.dataset_prices AS SELECT 1 AS px',
      'DROP TABLE IF EXISTS service.demo.dataset_prices',
      'CREATE TABLE service.demo.__staging_result_x_0a1b2c3d AS SELECT 1 AS n',
      'CREATE TABLE service.demo.__upload_raw_0a1b2c3d AS SELECT 1 AS n',
    ]) {
      const err = await denied(sql);
      expectDenial(err, 'in your team\'s schema are');
    }
    expectDenial(await denied('INSERT INTO service.demo.dataset_x VALUES (1)'), 'uploaded datasets');
    expectDenial(await denied('DROP TABLE service.demo.result_totals'), 'materialized views');
    // The service's work tables: dropped at start as crash leftovers, so no user table may look like one.
    expectDenial(await denied('CREATE TABLE service.demo.__upload_prices_0a1b2c3d (a INT)'), 'staging tables of uploads');
    expectDenial(await denied('CREATE TABLE service.demo.__STAGING_result_x_1 (a INT)'), 'staging tables of view refreshes');
    expect(await rows('SELECT n FROM service.demo.result_totals')).toEqual([{ n: 7 }]);
    // Other names in the own schema, and temporary tables of those names, stay writable.
    expect(await rows('CREATE TEMP TABLE result_x AS SELECT 1 AS a; CREATE TABLE service.demo.my_result AS SELECT 2 AS a; SELECT (SELECT a FROM result_x) + (SELECT a FROM service.demo.my_result) AS s')).toEqual([{ s: 3 }]);
    await fx.engine.execute('DROP TABLE service.demo.my_result', opts({ team: 'demo' }));
  });

  test('temporary tables and views, INSERT, EXPLAIN, DESCRIBE, SUMMARIZE, PRAGMA table_info', async () => {
    expect(
      await rows(`CREATE TEMP TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2); INSERT INTO t BY NAME SELECT 3 AS a;
        CREATE TEMP VIEW v AS SELECT a * 10 AS b FROM t; DROP TABLE IF EXISTS nothing_here; SELECT sum(b)::INTEGER AS s FROM v`),
    ).toEqual([{ s: 60 }]);
    expect((await rows('EXPLAIN SELECT * FROM sample.events')).length).toBeGreaterThan(0);
    expect((await rows('EXPLAIN (FORMAT json) SELECT * FROM sample.events')).length).toBeGreaterThan(0);
    expect((await rows('DESCRIBE sample.events')).length).toBe(8);
    expect((await rows('SUMMARIZE SELECT id FROM sample.events')).length).toBe(1);
    expect((await rows("PRAGMA table_info('sample.all_types')")).length).toBe(28);
  });

  test('a denied statement stops the whole SQL before its first statement runs', async () => {
    const err = await denied("CREATE TABLE service.demo.early AS SELECT 1 AS a;\nSELECT 'é😀', * FROM read_text('/etc/passwd')");
    expect({ line: err.line, column: err.column }).toEqual({ line: 2, column: 21 });
    expect((await denied('SELECT * FROM service.demo.early')).message).toContain('does not exist');
  });

  test('syntax errors are still syntax errors, located', async () => {
    const err = await denied('SELECT * FROM read_csv(');
    expect(err.kind).toBe('syntax');
    expect(err.line).toBe(1);
  });

  test('no stray files are left in the results directory', () => {
    expect(readdirSync(join(fx.dataDir, 'results')).filter((n) => n.includes('.tmp.'))).toEqual([]);
  });
});
