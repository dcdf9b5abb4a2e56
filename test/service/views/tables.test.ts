import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ViewTables } from '../../../src/service/views/tables.ts';
import { startDuck, type DuckFixture } from './duckFixture.ts';

let duck: DuckFixture;
let tables: ViewTables;
beforeAll(async () => {
  duck = await startDuck();
  tables = new ViewTables(duck.tables);
});
afterAll(() => duck?.close());

describe('view tables', () => {
  it('creates service.<team>.result_<x> from a stored result, keeping names, types and row order', async () => {
    const names = await duck.storeResult('r1', "SELECT i AS id, 'n' || i AS name, i * 1.5 AS v, i AS id FROM range(5) t(i) ORDER BY i DESC");
    await tables.replaceFromResult('demo', 'result_a', 'r1', names);
    expect(await duck.rows('SELECT * FROM service.demo.result_a')).toEqual([
      ['4', 'n4', '6.0', '4'],
      ['3', 'n3', '4.5', '3'],
      ['2', 'n2', '3.0', '2'],
      ['1', 'n1', '1.5', '1'],
      ['0', 'n0', '0.0', '0'],
    ]);
    // A duplicate column name becomes id_1, as DuckDB itself would name it.
    expect(await duck.rows("SELECT column_name FROM duckdb_columns() WHERE database_name='service' AND table_name='result_a' ORDER BY column_index")).toEqual([['id'], ['name'], ['v'], ['id_1']]);
  });

  it('swaps atomically: readers see the old table or the new one, never a mix or nothing', async () => {
    for (let v = 0; v < 4; v += 1) await duck.storeResult(`gen${v}`, `SELECT ${v} AS v FROM range(${(v + 1) * 20000})`);
    await tables.replaceFromResult('demo', 'result_swap', 'gen0', ['v']);

    // A reader inside a transaction that began before the swap keeps the old rows to its end.
    const snapshot = await duck.instance.connect();
    await snapshot.run('BEGIN TRANSACTION');
    expect((await snapshot.runAndReadAll('SELECT count(*) FROM service.demo.result_swap')).getRowsJson()).toEqual([['20000']]);

    let stop = false;
    const seen = new Set<string>();
    const reader = (async () => {
      const conn = await duck.instance.connect();
      try {
        while (!stop) {
          const [row] = (await conn.runAndReadAll('SELECT count(*), min(v), max(v) FROM service.demo.result_swap')).getRowsJson();
          const [n, lo, hi] = row as [string, number, number];
          // One version only: all rows alike, and exactly that version's row count.
          expect(lo).toBe(hi);
          expect(Number(n)).toBe((lo + 1) * 20000);
          seen.add(String(lo));
        }
      } finally {
        conn.closeSync();
      }
    })();
    for (let v = 1; v < 4; v += 1) {
      await tables.replaceFromResult('demo', 'result_swap', `gen${v}`, ['v']);
      await new Promise((r) => setTimeout(r, 20));
    }
    stop = true;
    await reader;
    expect(seen.size).toBeGreaterThan(1);
    expect((await snapshot.runAndReadAll('SELECT count(*), max(v) FROM service.demo.result_swap')).getRowsJson()).toEqual([['20000', 0]]);
    await snapshot.run('COMMIT');
    snapshot.closeSync();
    expect(await duck.rows('SELECT count(*), max(v) FROM service.demo.result_swap')).toEqual([['80000', 3]]);
    // No staging tables are left behind.
    expect(await duck.rows("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__staging%'")).toEqual([['0']]);
  });

  it('keeps the old table when the new result cannot be read', async () => {
    await duck.storeResult('keep', 'SELECT 42 AS answer');
    await tables.replaceFromResult('demo', 'result_keep', 'keep', ['answer']);
    await expect(tables.replaceFromResult('demo', 'result_keep', 'no_such_result', ['answer'])).rejects.toThrow();
    expect(await duck.rows('SELECT * FROM service.demo.result_keep')).toEqual([[42]]);
  });

  it('serialises concurrent refreshes of one view', async () => {
    await duck.storeResult('c1', 'SELECT 1 AS v FROM range(30000)');
    await duck.storeResult('c2', 'SELECT 2 AS v FROM range(10)');
    await Promise.all([tables.replaceFromResult('demo', 'result_c', 'c1', ['v']), tables.replaceFromResult('demo', 'result_c', 'c2', ['v'])]);
    expect(await duck.rows('SELECT count(*), max(v) FROM service.demo.result_c')).toEqual([['10', 2]]);
  });

  it('renames and drops', async () => {
    await duck.storeResult('d1', 'SELECT 1 AS v');
    await tables.replaceFromResult('other', 'result_d', 'd1', ['v']);
    await tables.rename('other', 'result_d', 'result_e');
    expect(await tables.exists('other', 'result_d')).toBe(false);
    expect(await tables.exists('other', 'result_e')).toBe(true);
    await tables.drop('other', 'result_e');
    expect(await tables.exists('other', 'result_e')).toBe(false);
    await tables.drop('other', 'result_e'); // idempotent
  });

  it('refuses a result without columns', async () => {
    await expect(tables.replaceFromResult('demo', 'result_none', 'x', [])).rejects.toThrow(/no columns/);
  });
});
