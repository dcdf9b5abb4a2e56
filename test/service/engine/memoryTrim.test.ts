// Giving idle memory back (memoryTrim.ts): a dip of memory_limit evicts the buffer pool, only
// while no other connection of the instance is open, and connections opened meanwhile wait for
// the limit to be back. On the engine: executions and page queries running at once with the trims
// between them never fail from a dip, and the limits end as they were.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { InstanceUse } from '../../../src/service/engine/memory/memoryTrim.ts';
import { openEngine } from '../../../src/service/engine/index.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';

const one = async (conn: DuckDBConnection, sql: string): Promise<string> => String((await conn.runAndReadAll(sql)).getRowsJson()[0]![0]);
const poolBytes = (conn: DuckDBConnection): Promise<number> => one(conn, 'SELECT sum(memory_usage_bytes) FROM duckdb_memory()').then(Number);

describe('InstanceUse', () => {
  test('trims only with no other connection open, evicts the pool, restores the limit; a connection opened during a trim waits for it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-trim-'));
    const instance = await DuckDBInstance.create(join(dir, 'db.duckdb'), { memory_limit: '200MiB', threads: '2' });
    try {
      const use = new InstanceUse(instance, () => '200MiB', undefined);
      const a = await use.connect();
      await a.run('CREATE TABLE t AS SELECT range AS x, repeat(range::VARCHAR, 20) AS s FROM range(1000000)');
      await a.run('CHECKPOINT');
      // A scan keeps the table's blocks in the pool (~75 MB).
      await one(a, 'SELECT sum(length(s)) FROM t');
      const before = await poolBytes(a);
      expect(before).toBeGreaterThan(20 * 1024 * 1024);
      // Another connection is open: no trim (its statements could fail under the dip).
      expect(await use.trim(0)).toBe(false);
      // The caller's own idle connection may be left out of the count.
      const trimming = use.trim(1);
      // Opened during the trim: it waits, and sees the limit restored.
      const b = use.connect();
      expect(await trimming).toBe(true);
      const conn = await b;
      expect(await one(conn, "SELECT current_setting('memory_limit')")).toBe('200.0 MiB');
      expect(await poolBytes(conn)).toBeLessThan(before / 4);
      // The table reads as before after its blocks were evicted.
      expect(await one(conn, 'SELECT sum(length(s)) FROM t')).toBe('117777800');
      use.close(conn);
      use.close(a);
      expect(use.trims).toBe(1);
      await use.stop();
      expect(await use.trim(0)).toBe(false);
    } finally {
      instance.closeSync();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('trims on its own once the instance has been idle, not while a connection is open', async () => {
    const instance = await DuckDBInstance.create(':memory:', { memory_limit: '100MiB' });
    try {
      const use = new InstanceUse(instance, () => '100MiB', 20);
      const a = await use.connect();
      await a.run('SELECT 1');
      await new Promise((r) => setTimeout(r, 100));
      expect(use.trims).toBe(0);
      use.close(a);
      await vi.waitFor(() => expect(use.trims).toBe(1), { timeout: 10_000 });
      await use.stop();
    } finally {
      instance.closeSync();
    }
  });

  test('a dip that DuckDB refuses leaves the limit as it was', async () => {
    const instance = await DuckDBInstance.create(':memory:', { memory_limit: '100MiB' });
    try {
      // The limit restored is the one given, whatever the dip did.
      const use = new InstanceUse(instance, () => '90MiB', undefined);
      const a = await use.connect();
      // An in-memory table with no spill directory cannot be evicted: the dip fails.
      await a.run("SET temp_directory = ''");
      await a.run('CREATE TABLE t AS SELECT range AS x FROM range(3000000)');
      expect(await use.trim(1)).toBe(false);
      expect(await one(a, "SELECT current_setting('memory_limit')")).toBe('90.0 MiB');
      expect(await one(a, 'SELECT count(*) FROM t')).toBe('3000000');
      use.close(a);
      await use.stop();
    } finally {
      instance.closeSync();
    }
  });
});

describe('on the engine', () => {
  test('executions and page queries overlapping the trims all succeed, and the limits end as they were', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-trim-engine-'));
    // A statement failed by a dip in the service's own work (an encoding) is only logged.
    const logged = vi.spyOn(console, 'error');
    const engine = (await openEngine({ dataDir, datasets: ['sample'], sampleRows: 20_000, memoryLimit: '256MiB', defaultThreads: 2, encodeMinBytes: 0, encodeResults: 'at_completion', trim: { afterIdleMs: 20, beforeEncodingBytes: 0 } })) as DuckDbEngine;
    try {
      const limits = async (): Promise<string[]> => [
        await engine.withConnection((c) => one(c, "SELECT current_setting('memory_limit')")),
        await engine.withFilesConnection((c) => one(c, "SELECT current_setting('memory_limit')")),
      ];
      const initial = await limits();
      const run = (id: string, sql: string): Promise<unknown> => engine.execute(sql, { resultId: id, signal: new AbortController().signal });
      await run('base', 'SELECT * FROM sample.events ORDER BY id');
      const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
      for (let round = 0; round < 3; round += 1) {
        const work: Promise<unknown>[] = [];
        for (let i = 0; i < 5; i += 1) {
          // Staggered so that some start during another's trim (before its encoding, or when idle).
          work.push(pause(i * 20 + round * 7).then(() => run(`r${round}_${i}`, `SELECT *, id % ${i + 2} AS k FROM sample.events ORDER BY id DESC`)));
          // Filtered pages are page queries on the files instance, never byte ranges.
          work.push(pause(i * 55).then(() => engine.page('base', { offset: 1000 * i, limit: 5000, filters: `id > ${i * 10}` })));
          work.push(pause(i * 30 + 15).then(() => engine.arrowPage('base', { offset: 0, limit: 20_000, sortBy: 'id desc' })));
        }
        await Promise.all(work);
        // Idle long enough for the trims of idle instances.
        await pause(150 + round * 50);
      }
      expect(logged).not.toHaveBeenCalled();
      // Every result was encoded whole (JSON, CSV and Arrow): no encoding was failed either.
      for (let round = 0; round < 3; round += 1) {
        for (let i = 0; i < 5; i += 1) expect(existsSync(join(dataDir, 'results', `r${round}_${i}.enc`, 'arrow'))).toBe(true);
      }
      const page = await engine.page('r2_2', { offset: 0, limit: 2 });
      expect(page.rowCount).toBe(2);
      expect(await limits()).toEqual(initial);
      const trims = engine.memoryTrims;
      expect(trims.users).toBeGreaterThan(0);
      expect(trims.files).toBeGreaterThan(0);
    } finally {
      logged.mockRestore();
      await engine.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
