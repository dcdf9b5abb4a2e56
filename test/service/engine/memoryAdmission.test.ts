// 'reserve' admission: an execution starts only when its tier's bounds fit beside those of the
// executions running, so none can be failed by a neighbour's use of the shared pool. Checked on
// ResourceBounds (order, waiting, cancel) and on a real engine (a second execution waits for the
// first, and runs once it is cancelled).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ResourceBounds, SERVICE_RESERVE_BYTES, type ExecutionBounds } from '../../../src/service/engine/memory/resourceBounds.ts';
import { EngineError, openEngine } from '../../../src/service/engine/index.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';

const MiB = 1024 * 1024;
const medium = (mib: number): ExecutionBounds => ({ memoryBytes: mib * MiB, tempBytes: 0, tier: 'medium' });

function bounds(admission: 'share' | 'reserve', ceilingMiB = 264): { rb: ResourceBounds; sets: string[] } {
  const sets: string[] = [];
  const rb = new ResourceBounds({ memoryLimit: `${ceilingMiB}.0 MiB`, maxTempDirectorySize: '1.0 GiB', admission }, async (sql) => void sets.push(sql));
  return { rb, sets };
}

/** Whether `p` has settled once the microtasks queued so far have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, 0));
  return done;
}

describe('ResourceBounds', () => {
  test("'share' starts everything at once (the default, as before)", async () => {
    const { rb } = bounds('share');
    const a = await rb.enter(medium(200));
    const b = rb.enter(medium(200));
    expect(await settled(b)).toBe(true);
    await (await b)();
    await a();
  });

  test("'reserve' starts one only when its bound fits beside the running ones', in arrival order", async () => {
    const { rb, sets } = bounds('reserve'); // 264 MiB: the service's 64 + 200 for executions
    const a = await rb.enter(medium(100));
    const b = await rb.enter(medium(100));
    expect(sets.at(-2)).toBe(`SET GLOBAL memory_limit = '${SERVICE_RESERVE_BYTES + 200 * MiB}B'`);
    const c = rb.enter(medium(150));
    const d = rb.enter(medium(10)); // would fit, but does not overtake c
    expect(await settled(c)).toBe(false);
    expect(await settled(d)).toBe(false);
    expect(rb.waiting).toBe(2);
    await a();
    expect(await settled(c)).toBe(false); // 100 + 150 > 200
    await b();
    expect(await settled(c)).toBe(true);
    expect(await settled(d)).toBe(true); // 150 + 10 fit
    await (await c)();
    await (await d)();
    expect(sets.at(-2)).toBe("SET GLOBAL memory_limit = '264.0 MiB'");
  });

  test('a bound larger than the engine is reserved as the engine: it runs alone, never for ever waiting', async () => {
    const { rb } = bounds('reserve');
    const a = await rb.enter(medium(4096));
    const b = rb.enter(medium(1));
    expect(await settled(b)).toBe(false);
    await a();
    await (await b)();
  });

  test('a cancelled wait leaves the line at once, and the next in line may then start', async () => {
    const { rb } = bounds('reserve');
    const a = await rb.enter(medium(150));
    const stop = new AbortController();
    const big = rb.enter(medium(150), stop.signal);
    const small = rb.enter(medium(50));
    expect(await settled(small)).toBe(false);
    stop.abort(new Error('canceled while waiting'));
    await expect(big).rejects.toThrow('canceled while waiting');
    expect(await settled(small)).toBe(true);
    expect(rb.waiting).toBe(0);
    await (await small)();
    await a();
  });
});

describe('on the engine', () => {
  test('a second execution waits for the first, starts once it is cancelled, and a close ends waits', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-admission-'));
    // 256 MiB: 192 for users' SQL (engine/index.ts); two bounds of 100 MiB do not fit beside the reserve.
    const engine = (await openEngine({ dataDir, memoryLimit: '256MiB', defaultThreads: 1, memoryAdmission: 'reserve' })) as DuckDbEngine;
    try {
      const limit = async (): Promise<string> => String((await engine.withConnection((c) => c.runAndReadAll("SELECT current_setting('memory_limit')"))).getRowsJson()[0]![0]);
      const events: string[] = [];
      const stopA = new AbortController();
      const a = engine
        .execute('SELECT count(*) FROM range(100000000000)', { resultId: 'a', signal: stopA.signal, bounds: medium(100) })
        .then(
          () => events.push('a finished'),
          (err: unknown) => events.push(`a ${err instanceof EngineError ? err.kind : 'error'}`),
        );
      while ((await limit()) !== '164.0 MiB') await new Promise((r) => setTimeout(r, 20));
      const b = engine.execute('SELECT 42 AS x', { resultId: 'b', signal: new AbortController().signal, bounds: medium(100) }).then(() => events.push('b finished'));
      // b waits however long a runs: give it time it would need to finish if it did not.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(events).toEqual([]);
      stopA.abort();
      await Promise.all([a, b]);
      expect(events).toEqual(['a canceled', 'b finished']);
      expect((await engine.page('b', { offset: 0, limit: 1 })).rowsJson).toBe('[{"x":42}]');

      // Waiting when the engine closes: the wait ends as a cancel, the close completes.
      const stopC = new AbortController();
      const c = engine.execute('SELECT count(*) FROM range(100000000000)', { resultId: 'c', signal: stopC.signal, bounds: medium(100) }).catch((e: unknown) => e);
      while ((await limit()) !== '164.0 MiB') await new Promise((r) => setTimeout(r, 20));
      const d = engine.execute('SELECT 1', { resultId: 'd', signal: new AbortController().signal, bounds: medium(100) }).catch((e: unknown) => e);
      await engine.close();
      expect(await d).toMatchObject({ kind: 'canceled' });
      expect(await c).toMatchObject({ kind: 'canceled' });
    } finally {
      await engine.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
