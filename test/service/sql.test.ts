import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlIdent, sqlString } from '../../src/service/sql.ts';

// Round trips through a real DuckDB: what the helper writes must come back as exactly the text it was given.
let instance: DuckDBInstance;
let conn: DuckDBConnection;
beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
});
afterAll(() => {
  conn.closeSync();
  instance.closeSync();
});

const TEXTS = ["it's", "''", "'; DROP TABLE t; --", 'back\\slash', "\\'", 'end\\', 'a"b', 'ünïcødé 😀 日本', '', ' ', 'line\nbreak\ttab\r'];

describe('sqlString', () => {
  it('doubles single quotes and nothing else', () => {
    expect(sqlString("it's")).toBe("'it''s'");
    expect(sqlString('back\\slash')).toBe("'back\\slash'");
    expect(sqlString('a"b')).toBe(`'a"b'`);
    expect(sqlString('ü😀')).toBe("'ü😀'");
  });

  it.each(TEXTS)('round-trips %j through DuckDB', async (text) => {
    const rows = (await conn.runAndReadAll(`SELECT ${sqlString(text)} AS v, length(${sqlString(text)}) AS n`)).getRowObjectsJS();
    expect(rows).toEqual([{ v: text, n: BigInt([...text].length) }]);
  });

  it('a NUL character makes DuckDB refuse the whole statement: nothing after it runs', async () => {
    expect(sqlString('a\0b')).toBe("'a\0b'");
    await expect(conn.run(`CREATE TABLE smuggled AS SELECT ${sqlString("a\0'; CREATE TABLE t2 AS SELECT 1; --")} AS v`)).rejects.toThrow(/unterminated quoted string/);
    const tables = (await conn.runAndReadAll('SELECT table_name FROM duckdb_tables()')).getRows();
    expect(tables).toEqual([]);
  });
});

describe('sqlIdent', () => {
  it('doubles double quotes and nothing else', () => {
    expect(sqlIdent('a"b')).toBe('"a""b"');
    expect(sqlIdent("it's")).toBe(`"it's"`);
    expect(sqlIdent('back\\slash')).toBe('"back\\slash"');
  });

  it.each(TEXTS.filter((t) => t !== ''))('round-trips %j as a column name through DuckDB', async (name) => {
    const reader = await conn.runAndReadAll(`SELECT 1 AS ${sqlIdent(name)}`);
    expect(reader.columnNames()).toEqual([name]);
  });

  it('a NUL character makes DuckDB refuse the whole statement', async () => {
    await expect(conn.run(`CREATE TABLE ${sqlIdent('a\0"; CREATE TABLE t3 (x INT); --')} (x INT)`)).rejects.toThrow(/unterminated quoted identifier/);
    expect((await conn.runAndReadAll('SELECT table_name FROM duckdb_tables()')).getRows()).toEqual([]);
  });
});
