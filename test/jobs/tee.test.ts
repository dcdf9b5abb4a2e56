import { describe, expect, it } from 'vitest';
import { tee } from '../../src/jobs/run/tee.ts';

async function* counted(n: number, state: { produced: number; returned: boolean }, failAt?: number): AsyncGenerator<number> {
  try {
    for (let i = 0; i < n; i++) {
      if (i === failAt) throw new Error(`source failed at ${i}`);
      state.produced += 1;
      yield i;
    }
  } finally {
    state.returned = true;
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('tee', () => {
  it('gives every consumer every item in order', async () => {
    const state = { produced: 0, returned: false };
    const [a, b, c] = tee(counted(50, state), 3);
    const read = async (it: AsyncIterable<number>) => {
      const out: number[] = [];
      for await (const v of it) {
        out.push(v);
        if (v % 7 === 0) await tick();
      }
      return out;
    };
    const results = await Promise.all([read(a!), read(b!), read(c!)]);
    const expected = Array.from({ length: 50 }, (_, i) => i);
    expect(results).toEqual([expected, expected, expected]);
    expect(state.produced).toBe(50);
  });

  it('reads ahead of the slowest consumer by at most the high-water mark', async () => {
    const state = { produced: 0, returned: false };
    const [fast, slow] = tee(counted(100, state), 2, 2);
    let fastSeen = 0;
    const fastDone = (async () => {
      for await (const _ of fast!) fastSeen += 1;
    })();
    await tick();
    await tick();
    // The slow consumer has taken nothing: the source may be at most 2 items ahead of it.
    expect(state.produced).toBeLessThanOrEqual(2);
    expect(fastSeen).toBeLessThanOrEqual(2);
    const it = slow![Symbol.asyncIterator]();
    for (let i = 0; i < 10; i++) {
      expect((await it.next()).value).toBe(i);
      await tick();
      expect(state.produced - (i + 1)).toBeLessThanOrEqual(2);
    }
    for (let r = await it.next(); !r.done; r = await it.next());
    await fastDone;
    expect(fastSeen).toBe(100);
  });

  it('a source error reaches every consumer', async () => {
    const state = { produced: 0, returned: false };
    const [a, b] = tee(counted(10, state, 5), 2);
    const drain = async (it: AsyncIterable<number>) => {
      for await (const _ of it);
    };
    const results = await Promise.allSettled([drain(a!), drain(b!)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/source failed at 5/);
  });

  it('a consumer that stops no longer holds the others back; when all stop the source is returned', async () => {
    const state = { produced: 0, returned: false };
    const [a, b] = tee(counted(1000, state), 2, 1);
    const seen: number[] = [];
    await Promise.all([
      (async () => {
        for await (const v of a!) if (v === 3) break;
      })(),
      (async () => {
        for await (const v of b!) {
          seen.push(v);
          await tick();
          if (v === 20) break;
        }
      })(),
    ]);
    expect(seen).toEqual(Array.from({ length: 21 }, (_, i) => i));
    expect(state.returned).toBe(true);
    expect(state.produced).toBeLessThan(30);
  });
});

describe('tee abort', () => {
  it('an abort releases a consumer parked behind a branch nobody reads, and returns the source', async () => {
    const state = { produced: 0, returned: false };
    const controller = new AbortController();
    const [read, ignored] = tee(counted(1000, state), 2, 1, controller.signal);
    void ignored;
    const seen: number[] = [];
    const reading = (async () => {
      for await (const v of read!) seen.push(v);
    })();
    await tick();
    await tick();
    expect(seen.length).toBeLessThanOrEqual(2);
    controller.abort(new Error('output failed'));
    await expect(reading).rejects.toThrow('output failed');
    await tick();
    expect(state.returned).toBe(true);
  });
});
