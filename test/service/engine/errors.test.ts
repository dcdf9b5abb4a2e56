import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EngineError } from '../../../src/service/engine/index.ts';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine();
});
afterAll(async () => {
  await fx.close();
});

async function failure(sql: string): Promise<EngineError> {
  try {
    await fx.engine.execute(sql, opts());
  } catch (err) {
    if (err instanceof EngineError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(sql)} to fail`);
}

describe('parser and binder errors point at line:column of the submitted SQL', () => {
  test.each([
    ['binder, one line', 'SELECT zz FROM range(3)', 'semantic', 1, 8, 'Referenced column "zz" not found in FROM clause!'],
    ['binder, second line', 'SELECT 1,\n     zz FROM range(3)', 'semantic', 2, 6, 'Referenced column "zz" not found'],
    ['catalog', 'SELECT *\nFROM\n  no_such_table', 'semantic', 3, 3, 'Table with name no_such_table does not exist'],
    ['parser', 'SELECT 1 FROM ) x', 'syntax', 1, 15, 'syntax error at or near ")"'],
    ['parser after non-ASCII and emoji', "SELECT 'é😀', 1 FROM )", 'syntax', 1, 21, 'syntax error'],
    ['binder after non-ASCII and emoji', "SELECT 'é😀ü', zz FROM range(1)", 'semantic', 1, 15, 'zz'],
    ['catalog after emoji on an earlier CRLF line', "SELECT '😀😀' AS a,\r\n  1 FROM nope", 'semantic', 2, 10, 'nope'],
    ['parser with CRLF', 'SELECT 1,\r\n2 FROM )', 'syntax', 2, 8, 'syntax error'],
    ['second statement', 'SELECT 1; SELECT 2 FROM nope', 'semantic', 1, 25, 'nope'],
    ['statement after a comment with a semicolon', "-- a; b\nSELECT ';' AS s,\n zz", 'semantic', 3, 2, 'zz'],
  ])('%s', async (_name, sql, kind, line, column, text) => {
    const err = await failure(sql);
    expect(err.kind).toBe(kind);
    expect({ line: err.line, column: err.column }).toEqual({ line, column });
    expect(err.message.startsWith(`line ${line}:${column}: `)).toBe(true);
    expect(err.message).toContain(text);
    expect(err.message).not.toContain('exception_type');
  });

  test('the position names the actual token', async () => {
    const sql = 'SELECT a,\n  b, ünknown_col FROM (SELECT 1 a, 2 b)';
    const err = await failure(sql);
    const lines = sql.split('\n');
    const at = [...lines[err.line! - 1]!].slice(err.column! - 1).join('');
    expect(at.startsWith('ünknown_col')).toBe(true);
  });

  test('conversion errors are internal, with the DuckDB message', async () => {
    const err = await failure("SELECT 'abc'::INTEGER");
    expect(err.kind).toBe('internal');
    expect(err.message).toContain('Could not convert string');
  });

  test('empty SQL is a syntax error', async () => {
    const err = await failure('  -- nothing\n ; ');
    expect(err.kind).toBe('syntax');
    expect(err.line).toBe(1);
  });

  test('the engine stays usable after errors', async () => {
    const o = opts();
    const info = await fx.engine.execute('SELECT 42 AS answer', o);
    expect(info.rowCount).toBe(1);
  });

  test('a failed execution leaves no stored result', async () => {
    const o = opts();
    await expect(fx.engine.execute('SELECT nope', o)).rejects.toBeInstanceOf(EngineError);
    expect(await fx.engine.hasResult(o.resultId)).toBe(false);
  });
});
