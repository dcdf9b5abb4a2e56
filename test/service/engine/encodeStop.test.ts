import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterEach, expect, test } from 'vitest';
import { writeEncodings } from '../../../src/service/engine/encodedResult.ts';
import { protocolTypeName } from '../../../src/service/engine/typeNames.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

// A stop during the encoding interrupts the COPY of the next slice while the previous one is being
// split: its rejection must be handled (an unhandled rejection ends the service's thread while
// DuckDB calls are in flight on other connections, and the process aborts), and writeEncodings
// must settle only once that COPY has.
test('writeEncodings: a COPY failing while the previous slice is split is no unhandled rejection, and is waited for', async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-encode-stop-'));
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const rowCount = 130_000; // two slices (SLICE_ROWS is a row group, 122,880)
    await conn.run(`CREATE TABLE result AS SELECT range AS c0, 'row ' || range AS c1 FROM range(${rowCount})`);
    const types = (await conn.runAndReadAll('SELECT * FROM result LIMIT 0')).columnTypes();
    const names = ['a', 'b'];
    const protocolTypes = types.map(protocolTypeName);
    let copies = 0;
    let secondSettled = false;
    const failing = {
      run: (sql: string) => {
        copies += 1;
        if (copies === 1) return conn.run(sql);
        // The second COPY is interrupted at once, long before the first slice is split.
        return new Promise((_, reject) => setTimeout(() => ((secondSettled = true), reject(new Error('Interrupted!'))), 1));
      },
    } as unknown as DuckDBConnection;
    await expect(
      writeEncodings(failing, { table: 'result', names, protocolTypes, types, rowCount }, { columnNames: names, columnTypes: protocolTypes, rowCount, bytes: 0, truncated: false }, dir),
    ).rejects.toThrow('Interrupted!');
    expect(secondSettled).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    conn.closeSync();
    instance.closeSync();
  }
});
