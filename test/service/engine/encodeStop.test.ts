import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterEach, expect, test } from 'vitest';
import { writeEncodings } from '../../../src/service/engine/encoding/encodedResult.ts';
import { protocolTypeName } from '../../../src/service/engine/typeNames.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

// A stop during the encoding interrupts its connection while the rendered rows are streamed from
// it (an interrupted stream may just end early): writeEncodings must fail (not publish a short
// encoding, not hang), leave no unhandled
// rejection (one ends the service's thread while DuckDB calls are in flight on other connections,
// and the process aborts), and leave the connection with nothing in flight (the caller closes it).
test('writeEncodings: an interrupt while the rows are streamed fails it, with no unhandled rejection and nothing left in flight', async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-encode-stop-'));
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const rowCount = 130_000;
    await conn.run(`CREATE TABLE result AS SELECT range AS c0, 'row ' || range AS c1 FROM range(${rowCount})`);
    const types = (await conn.runAndReadAll('SELECT * FROM result LIMIT 0')).columnTypes();
    const names = ['a', 'b'];
    const protocolTypes = types.map(protocolTypeName);
    let fetched = 0;
    // The stop lands after the third chunk, as the engine's interrupt does: on the connection.
    const interrupted = {
      stream: async (sql: string) => {
        const rows = await conn.stream(sql);
        return {
          fetchChunk: () => {
            fetched += 1;
            if (fetched === 4) conn.interrupt();
            return rows.fetchChunk();
          },
        };
      },
    } as unknown as DuckDBConnection;
    await expect(
      writeEncodings(interrupted, { table: 'result', names, protocolTypes, types, rowCount }, { columnNames: names, columnTypes: protocolTypes, rowCount, bytes: 0, truncated: false }, dir, () => fetched >= 4),
    ).rejects.toThrow(/stopped|Interrupt/i);
    expect(fetched).toBe(4);
    // Interrupted by something else than a stop of the encoding: the short count fails it.
    fetched = 0;
    await expect(
      writeEncodings(interrupted, { table: 'result', names, protocolTypes, types, rowCount }, { columnNames: names, columnTypes: protocolTypes, rowCount, bytes: 0, truncated: false }, join(dir, 'again')),
    ).rejects.toThrow(/rows rendered, the result has 130000|Interrupt/);
    await new Promise((r) => setTimeout(r, 20));
    expect(unhandled).toEqual([]);
    // Nothing in flight: the connection answers the next statement.
    expect((await conn.runAndReadAll('SELECT 42 AS x')).getRowsJson()).toEqual([[42]]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    conn.closeSync();
    instance.closeSync();
  }
});
