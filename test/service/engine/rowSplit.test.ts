// The JSON and CSV encoders copy DuckDB's rendered rows run by run (rowSplit.ts): rows short
// enough to sit inside DuckDB's string_t between long ones, rows longer than the write buffer, and
// chunk after chunk must give the rows files and indexes that DuckDB's own aggregate of the same
// rendered texts gives.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, expect, test } from 'vitest';
import { writeRowEncodings, type RowEncodingDirs } from '../../../src/service/engine/encoding/encodedResult.ts';
import { renderedRowsSql } from '../../../src/service/engine/pages/pageQuery.ts';
import { protocolTypeName } from '../../../src/service/engine/typeNames.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const hex = (n: number): string => n.toString(16).toUpperCase().padStart(12, '0');

test('the rows files and indexes are the rendered rows, whatever their lengths: inline, long, wider than the write buffer, NULL', async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-row-split-'));
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const conn = await instance.connect();
  try {
    const rowCount = 10_000;
    // Row i: a tiny integer (its CSV line alone fits a string_t), and a text of a length that
    // cycles through 0..40 (NULL every 7th row), five of them 5 MB (beyond the 4 MB buffer).
    await conn.run(`CREATE TABLE result AS SELECT (range % 10)::TINYINT AS c0,
      CASE WHEN range % 7 = 3 THEN NULL WHEN range IN (5, 2047, 2048, 6000, 9999) THEN repeat('w', 5 * 1024 * 1024)
        ELSE repeat(chr(97 + (range % 26)::INT), (range % 41)::INT) || CASE WHEN range % 5 = 0 THEN ',"é' ELSE '' END END AS c1
      FROM range(${rowCount}) ORDER BY range`);
    const types = (await conn.runAndReadAll('SELECT * FROM result LIMIT 0')).columnTypes();
    const names = ['n', 's'];
    const protocolTypes = types.map(protocolTypeName);
    // One tiny column (every row's text inside its string_t), then both.
    for (const cols of [[0], [0, 1]]) {
      {
        const ns = cols.map((c) => names[c]!);
        const view = `v${cols.length}`;
        await conn.run(`CREATE OR REPLACE TABLE ${view} AS SELECT ${cols.map((c, k) => `c${c} AS c${k}`).join(', ')} FROM result ORDER BY rowid`);
        const t = cols.map((c) => types[c]!);
        const stored = { table: view, names: ns, protocolTypes: cols.map((c) => protocolTypes[c]!), types: t, rowCount };
        const info = { columnNames: ns, columnTypes: stored.protocolTypes, rowCount, bytes: 0, truncated: false };
        const rendered = renderedRowsSql(stored, ns.map((_, k) => k), 'true', true);
        const expected = async (text: string): Promise<{ rows: Buffer; index: string }> => {
          const all = (await conn.runAndReadAll(`SELECT string_agg(${text}, '' ORDER BY rn) FROM (${rendered})`)).getRows()[0]![0] as string;
          const ends = (await conn.runAndReadAll(`SELECT strlen(${text})::DOUBLE, b::DOUBLE FROM (${rendered}) ORDER BY rn`)).getRows() as Array<[number, number]>;
          let [start, bytes] = [0, 0];
          const records = [`${hex(0)}${hex(0)}\n`];
          for (const [len, b] of ends) {
            [start, bytes] = [start + len, bytes + b];
            records.push(`${hex(start)}${hex(bytes)}\n`);
          }
          return { rows: Buffer.from(all, 'utf8'), index: records.join('') };
        };
        const json = await expected('j');
        const csv = await expected('c');
        for (const which of [{ json: 'json' }, { csv: 'csv' }, { json: 'json', csv: 'csv' }] as const) {
          const out = join(dir, `${view}-${Object.keys(which).join('-')}`);
          const dirs: RowEncodingDirs = {};
          if ('json' in which) dirs.json = join(out, 'json');
          if ('csv' in which) dirs.csv = join(out, 'csv');
          await writeRowEncodings(conn, stored, info, dirs);
          if (dirs.json !== undefined) {
            expect((await readFile(join(dirs.json, 'rows.json'))).equals(json.rows), `${view} rows.json`).toBe(true);
            expect(await readFile(join(dirs.json, 'index'), 'latin1')).toBe(json.index);
          }
          if (dirs.csv !== undefined) {
            expect((await readFile(join(dirs.csv, 'rows.csv'))).equals(csv.rows), `${view} rows.csv`).toBe(true);
            expect(await readFile(join(dirs.csv, 'index'), 'latin1')).toBe(csv.index);
          }
        }
      }
    }
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 120_000);
