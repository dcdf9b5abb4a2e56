import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { compileDecoder } from '../../../src/types/decode.ts';
import { parseType } from '../../../src/types/parse.ts';
import { opts, parseExact, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine();
});
afterAll(async () => {
  await fx.close();
});

async function rowsOf(sql: string): Promise<{ rows: Record<string, unknown>[]; types: string[]; raw: string }> {
  const o = opts();
  const info = await fx.engine.execute(sql, o);
  const page = await fx.engine.page(o.resultId, { offset: 0, limit: 100 });
  expect(page.columnTypes).toEqual(info.columnTypes);
  const rows = parseExact(page.rowsJson);
  if (!Array.isArray(rows)) throw new Error('rowsJson is not an array');
  return { rows: rows as Record<string, unknown>[], types: page.columnTypes, raw: page.rowsJson };
}

describe('sample.all_types: column_types and JSON values', () => {
  test('every protocol type name', async () => {
    const { types } = await rowsOf('SELECT * FROM sample.all_types ORDER BY id');
    expect(types).toEqual([
      'integer', 'boolean', 'tinyint', 'smallint', 'integer', 'bigint', 'uint256', 'int256', 'real',
      'double', 'decimal(38, 10)', 'varchar', 'varbinary', 'json', 'date', 'time(6)', 'timestamp(6)',
      'timestamp(6) with time zone', 'timestamp(3)', 'timestamp(9)', 'interval day to second',
      'interval year to month', 'array(bigint)', 'array(row(a bigint, b varchar))', 'map(varchar, bigint)',
      'row(x integer, nested row(y varchar, z array(double)))', 'uuid', 'int256',
    ]);
  });

  test('row 1: ordinary values of every type', async () => {
    const { rows } = await rowsOf('SELECT * FROM sample.all_types WHERE id = 1');
    expect(rows[0]).toEqual({
      id: 1, c_boolean: true, c_tinyint: 1, c_smallint: 1, c_integer: 1, c_bigint: 9007199254740993n,
      c_uint256: '12345678901234567890', c_int256: '-5', c_real: 1.5, c_double: 0.1,
      c_decimal: '12345678901234567890123456.0123456789', c_varchar: 'héllo, "world"\nline 2',
      c_varbinary: '0xdeadbeef', c_json: '{"a": [1, 2], "b": null}', c_date: '2026-11-20',
      c_time: '10:15:30.123456', c_timestamp: '2026-11-20 10:15:30.123456',
      c_timestamptz: '2026-11-20 10:15:30.123456 UTC', c_timestamp_ms: '2026-11-20 10:15:30.123',
      c_timestamp_ns: '2026-11-20 10:15:30.123456789', c_interval: '1 02:03:04.567000', c_interval_ym: '1-2',
      c_array: [1, 2, null], c_array_rows: [{ a: 1, b: 'x' }], c_map: { k1: 1, k2: null },
      c_row: { x: 1, nested: { y: 'deep', z: [1.5, 2.5] } }, c_uuid: '0f8fad5b-d9cb-469f-a165-70867728950e',
      c_hugeint: '170141183460469231731687303715884105727',
    });
  });

  test('extremes: bigint, 256-bit bounds, NaN and infinities, empty values', async () => {
    const { rows, raw } = await rowsOf('SELECT * FROM sample.all_types WHERE id IN (2, 3) ORDER BY id');
    const [max, min] = rows as [Record<string, unknown>, Record<string, unknown>];
    expect(raw).toContain('"c_bigint":9223372036854775807,');
    expect(raw).toContain('"c_bigint":-9223372036854775808,');
    expect(max['c_bigint']).toBe(9223372036854775807n);
    expect(max['c_uint256']).toBe(((1n << 256n) - 1n).toString());
    expect(max['c_int256']).toBe(((1n << 255n) - 1n).toString());
    expect(min['c_int256']).toBe((-(1n << 255n)).toString());
    expect(min['c_uint256']).toBe('0');
    expect(max['c_real']).toBe('NaN');
    expect(max['c_double']).toBe('Infinity');
    expect(min['c_real']).toBe('-Infinity');
    expect(min['c_double']).toBe(-1e308);
    expect(max['c_varchar']).toBe('');
    expect(max['c_varbinary']).toBe('0x');
    expect(max['c_array']).toEqual([]);
    expect(max['c_map']).toEqual({});
    expect(max['c_row']).toEqual({ x: null, nested: null });
    expect(min['c_varchar']).toBe('😀 ünïcode');
    expect(min['c_interval']).toBe('-1 02:03:04.567000');
    expect(min['c_interval_ym']).toBe('-0-3');
    expect(min['c_array_rows']).toEqual([null, { a: null, b: null }]);
    expect(min['c_map']).toEqual({ '': -1 });
    expect(min['c_decimal']).toBe('-0.0000000001');
  });

  test('row 4: NULL in every column', async () => {
    const { rows } = await rowsOf('SELECT * EXCLUDE (id) FROM sample.all_types WHERE id = 4');
    expect(Object.values(rows[0]!).every((v) => v === null)).toBe(true);
    expect(Object.keys(rows[0]!)).toHaveLength(27);
  });
});

describe('value edges, exact on the wire', () => {
  test('TIME 24:00:00 stays the end of the day; intervals keep microseconds and their months apart', async () => {
    const { rows } = await rowsOf(`SELECT TIME '24:00:00' t, TIME '23:59:59.999999' u,
      INTERVAL '0.000001 second' a, INTERVAL '-1 day -02:03:04.000005' b, INTERVAL '1 day -1 hour' c,
      INTERVAL '14 months 3 days 01:02:03.000004' d, INTERVAL '-1 month 40 days' e, INTERVAL '-1 year -2 months' f`);
    expect(rows[0]).toEqual({
      t: '24:00:00.000000', u: '23:59:59.999999', a: '0 00:00:00.000001', b: '-1 02:03:04.000005', c: '0 23:00:00.000000',
      d: '14 months 3 01:02:03.000004', e: '-1 months 40 00:00:00.000000', f: '-14 months 0 00:00:00.000000',
    });
  });
});

describe('dates and timestamps outside years 1-9999', () => {
  const SQL = `SELECT DATE '0001-12-31 (BC)' d0, DATE '0044-03-15 (BC)' d1, DATE '10000-01-01' d2, DATE '5877642-06-25 (BC)' d3,
    '-0005-03-01 01:02:03.5'::TIMESTAMP t0, '-0005-03-01 01:02:03.5+00'::TIMESTAMPTZ t1, '10000-01-01 00:00:00.25+00'::TIMESTAMPTZ t2,
    '-0005-03-01 01:02:03'::TIMESTAMP_S t3, '12000-01-01 00:00:00.5'::TIMESTAMP_MS t4, DATE '2026-11-25' d4`;

  test('are written with the ISO 8601 year (1 BC is 0000), which DuckDB casts back to the same value and the client decodes', async () => {
    const o = opts();
    await fx.engine.execute(SQL, o);
    const page = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    const row = (parseExact(page.rowsJson) as Record<string, string>[])[0]!;
    expect(row).toEqual({
      d0: '0000-12-31', d1: '-0043-03-15', d2: '10000-01-01', d3: '-5877641-06-25',
      t0: '-0005-03-01 01:02:03.500000', t1: '-0005-03-01 01:02:03.500000 UTC', t2: '10000-01-01 00:00:00.250000 UTC',
      t3: '-0005-03-01 01:02:03', t4: '12000-01-01 00:00:00.500', d4: '2026-11-25',
    });
    // The CSV page carries the same texts; DuckDB reads them back as the values the query made.
    const csv = await fx.engine.csvPage(o.resultId, { offset: 0, limit: 10 });
    expect(csv.csv.split('\n')[1]).toBe(Object.values(row).join(','));
    const casts = Object.entries(row).map(([k, text]) => {
      const type = /^d/.test(k) ? 'DATE' : k === 't1' || k === 't2' ? 'TIMESTAMPTZ' : k === 't3' ? 'TIMESTAMP_S' : k === 't4' ? 'TIMESTAMP_MS' : 'TIMESTAMP';
      return `CAST('${text}' AS ${type}) = q.${k} AS ${k}`;
    });
    const same = Object.values((await rowsOf(`SELECT ${casts.join(', ')} FROM (${SQL}) q`)).rows[0]!);
    expect(same).toEqual(Object.keys(row).map(() => true));
    // The connector's decoders (the same ones the Arrow pages use) read them, seven-digit years included.
    const decode = (text: string, type: string) => compileDecoder(parseType(type), { dates: 'date' })(text);
    expect((decode(row['d0']!, 'date') as Date).toISOString()).toBe('0000-12-31T00:00:00.000Z');
    expect((decode(row['d1']!, 'date') as Date).toISOString()).toBe('-000043-03-15T00:00:00.000Z');
    expect((decode(row['d2']!, 'date') as Date).toISOString()).toBe('+010000-01-01T00:00:00.000Z');
    // Beyond a JS Date, as text: the decoder checks it and keeps it.
    expect(compileDecoder(parseType('date'), { dates: 'string' })(row['d3']!)).toBe('-5877641-06-25');
    expect((decode(row['t1']!, 'timestamp(6) with time zone') as Date).toISOString()).toBe('-000005-03-01T01:02:03.500Z');
    expect((decode(row['t4']!, 'timestamp(3)') as Date).toISOString()).toBe('+012000-01-01T00:00:00.500Z');
  });
});

describe('types beyond the sample', () => {
  test('unsigned, hugeint, bignum, timestamp_s, enum, uuid, blob', async () => {
    const { rows, types } = await rowsOf(`SELECT 255::UTINYINT a, 65535::USMALLINT b, 4294967295::UINTEGER c,
      18446744073709551615::UBIGINT d, 340282366920938463463374607431768211455::UHUGEINT e,
      '${2n ** 300n}'::BIGNUM f, TIMESTAMP_S '2026-11-20 10:15:30' g, 'x'::ENUM('x', 'y') h,
      TIME_NS '01:02:03.123456789' i, [[1, 2], []] j, MAP {1: [true]} k, {'odd name': 1} l`);
    expect(types).toEqual([
      'smallint', 'integer', 'bigint', 'decimal(20, 0)', 'uint256', 'int256', 'timestamp(0)', 'varchar',
      'time(9)', 'array(array(integer))', 'map(integer, array(boolean))', 'row("odd name" integer)',
    ]);
    expect(rows[0]).toEqual({
      a: 255, b: 65535, c: 4294967295, d: '18446744073709551615', e: '340282366920938463463374607431768211455',
      f: (2n ** 300n).toString(), g: '2026-11-20 10:15:30', h: 'x', i: '01:02:03.123456789', j: [[1, 2], []],
      k: { '1': [true] }, l: { 'odd name': 1 },
    });
  });

  test('uint256() and int256() macros check their range', async () => {
    const { rows, types } = await rowsOf("SELECT uint256('123') u, int256(-5) i, uint256(NULL) n");
    expect(types).toEqual(['uint256', 'int256', 'uint256']);
    expect(rows[0]).toEqual({ u: '123', i: '-5', n: null });
    await expect(fx.engine.execute("SELECT uint256('-1')", opts())).rejects.toMatchObject({ message: expect.stringContaining('uint256 out of range') });
    await expect(fx.engine.execute(`SELECT uint256('${1n << 256n}')`, opts())).rejects.toMatchObject({ message: expect.stringContaining('out of range') });
    await expect(fx.engine.execute(`SELECT int256('${1n << 255n}')`, opts())).rejects.toMatchObject({ message: expect.stringContaining('int256 out of range') });
  });

  test('timestamp with time zone is written in UTC whatever the input offset', async () => {
    const { rows } = await rowsOf("SELECT TIMESTAMPTZ '2026-11-20 12:15:30.5+02:00' t");
    expect(rows[0]).toEqual({ t: '2026-11-20 10:15:30.500000 UTC' });
  });

  test('json column is a JSON string holding the JSON text', async () => {
    const { raw } = await rowsOf(`SELECT '{"k": [1, "two"]}'::JSON j`);
    expect(raw).toBe('[{"j":"{\\"k\\": [1, \\"two\\"]}"}]');
  });

  test('duplicate and odd column names survive storage', async () => {
    const o = opts();
    const info = await fx.engine.execute('SELECT 1 AS "a,b", 2 AS "rowid", 3 AS "__rn", 4 AS "x"', o);
    expect(info.columnNames).toEqual(['a,b', 'rowid', '__rn', 'x']);
    const page = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    expect(JSON.parse(page.rowsJson)).toEqual([{ 'a,b': 1, rowid: 2, __rn: 3, x: 4 }]);
  });

  test('duplicate column names are made unique as DuckDB names a table\'s columns, so no JSON key is lost', async () => {
    const o = opts();
    const info = await fx.engine.execute('SELECT 1 AS a, 2 AS a, 3 AS A, 4 AS a_1, 5 AS a', o);
    expect(info.columnNames).toEqual(['a', 'a_1', 'A_2', 'a_1_1', 'a_3']);
    const page = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    expect(page.rowsJson).toBe('[{"a":1,"a_1":2,"A_2":3,"a_1_1":4,"a_3":5}]');
    // The same names DuckDB gives a table created from the query (a view's table gets them too).
    const asTable = await fx.engine.execute('CREATE TEMP TABLE dup AS SELECT 1 AS a, 2 AS a, 3 AS A, 4 AS a_1, 5 AS a; SELECT * FROM dup', opts());
    expect(asTable.columnNames).toEqual(info.columnNames);
    const picked = await fx.engine.page(o.resultId, { offset: 0, limit: 10, columns: ['a_3', 'a'] });
    expect(JSON.parse(picked.rowsJson)).toEqual([{ a_3: 5, a: 1 }]);
  });
});
