// Races between cancels and statements, and between readers and the LRU of attached results.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine({ sampleRows: 100 });
});
afterAll(() => fx?.close());

/** Runs ~2 s when nothing stops it; a lost cancel shows as a run of that length. */
// Runs for many seconds if nothing stops it, so the bounds below (a few seconds, room for a loaded
// CI machine) still tell a stopped query from one that ran to its end.
const SECONDS = 'SELECT count(*) FROM range(6000000000) t(i) WHERE i % 7 = 3';

describe('cancel lands between statements', () => {
  test('an abort at any moment of execute stops it promptly (the interrupt is repeated, not lost)', async () => {
    // Abort after 0, 0.1, 0.2, ... ms: some land while no statement of the connection runs (between
    // the access check, the prepare, the file cleanup, the ATTACH and the query itself).
    const slow: string[] = [];
    for (let k = 0; k < 120; k += 1) {
      const ctl = new AbortController();
      const o = opts({ signal: ctl.signal });
      const run = fx.engine.execute(SECONDS, o);
      const t0 = performance.now();
      while (performance.now() - t0 < k * 0.1) await new Promise((r) => setImmediate(r));
      const aborted = performance.now();
      ctl.abort();
      const err = await run.then(() => undefined, (e: unknown) => e);
      const ms = performance.now() - aborted;
      if (ms > 3000) slow.push(`abort after ${(k * 0.1).toFixed(1)} ms took ${Math.round(ms)} ms`);
      expect(err).toMatchObject({ kind: 'canceled' });
      expect(await fx.engine.hasResult(o.resultId)).toBe(false);
    }
    expect(slow).toEqual([]);
  });

  test('a timeout that fires between statements stops it too', async () => {
    for (const ms of [1, 2, 3, 4]) {
      const t0 = performance.now();
      await expect(fx.engine.execute(SECONDS, opts({ timeoutMs: ms }))).rejects.toMatchObject({ kind: 'timeout' });
      expect(performance.now() - t0).toBeLessThan(3000);
    }
  });

  test('close() stops a running execution promptly', async () => {
    const own = await startEngine({ sampleRows: 10 });
    const run = own.engine.execute(SECONDS, opts()).then(() => undefined, (e: unknown) => e);
    await new Promise((r) => setTimeout(r, 1));
    const t0 = performance.now();
    await own.close();
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(await run).toMatchObject({ kind: 'canceled' });
  });
});

describe('many results read at once', () => {
  test('more results than stay attached, read concurrently, never fail (eviction waits for readers)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 34; i += 1) {
      const o = opts();
      await fx.engine.execute(`SELECT ${i} AS n, i FROM range(50) t(i)`, o);
      ids.push(o.resultId);
    }
    // A few more results than stay attached, and many readers each reading random ones one after
    // another: results are evicted and attached again all the time while other readers use them.
    const failures: string[] = [];
    const reader = async (): Promise<void> => {
      for (let j = 0; j < 100; j += 1) {
        const i = Math.floor(Math.random() * ids.length);
        try {
          const page = await fx.engine.page(ids[i]!, { offset: 10, limit: 2 });
          expect(JSON.parse(page.rowsJson)).toEqual([{ n: i, i: 10 }, { n: i, i: 11 }]);
          expect((await fx.engine.resultInfo(ids[i]!)).rowCount).toBe(50);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    };
    await Promise.all(Array.from({ length: 34 }, reader));
    expect(failures).toEqual([]);
  });

  test('dropping a result while it is being read lets the reads finish, then deletes it', async () => {
    const o = opts();
    await fx.engine.execute('SELECT i FROM range(1000) t(i)', o);
    const reads = Array.from({ length: 10 }, () => fx.engine.page(o.resultId, { offset: 0, limit: 1000 }));
    const drop = fx.engine.dropResult(o.resultId);
    const pages = await Promise.allSettled(reads);
    await drop;
    for (const p of pages) if (p.status === 'fulfilled') expect(p.value.rowCount).toBe(1000);
    else expect(p.reason).toMatchObject({ kind: 'not_found' });
    expect(await fx.engine.hasResult(o.resultId)).toBe(false);
    await expect(fx.engine.page(o.resultId, { offset: 0, limit: 1 })).rejects.toMatchObject({ kind: 'not_found' });
  });

  test('a team\'s first executions at once all succeed; results stored meanwhile are complete (their WAL is checkpointed)', async () => {
    // A new team each round: its first executions, all at once, create its schema together.
    // Each execution's access check scans duckdb_schemas(), which opens a transaction on every
    // attached database, the result files being written included: DETACH then skips its
    // checkpoint, and a file renamed without its WAL lacked `meta` or rows.
    for (let round = 0; round < 4; round += 1) {
      const ids = Array.from({ length: 24 }, () => opts({ team: `t${round}` }));
      // Readers attach and detach stored results meanwhile (more catalog activity).
      let writing = true;
      const readers = Array.from({ length: 4 }, async () => {
        while (writing) {
          await fx.engine.resultInfo(ids[0]!.resultId).catch(() => undefined);
          await new Promise((r) => setImmediate(r));
        }
      });
      await Promise.all(ids.map((o, i) => fx.engine.execute(`SELECT ${i} AS n, i FROM range(300) t(i)`, o)));
      writing = false;
      await Promise.all(readers);
      for (const [i, o] of ids.entries()) {
        const page = await fx.engine.page(o.resultId, { offset: 299, limit: 1 });
        expect(JSON.parse(page.rowsJson)).toEqual([{ n: i, i: 299 }]);
      }
    }
  });
});
