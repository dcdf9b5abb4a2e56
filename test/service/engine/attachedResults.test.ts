// The LRU of attached results on its own, with attach / detach that record what happens.
import { describe, expect, test } from 'vitest';
import { AttachedResults } from '../../../src/service/engine/results/attachedResults.ts';

function lru(max: number, idleMs?: number) {
  const log: string[] = [];
  let detachGate: Promise<void> = Promise.resolve();
  const results = new AttachedResults<string>({
    max,
    ...(idleMs === undefined ? {} : { idleMs }),
    attach: async (id) => {
      log.push(`attach ${id}`);
      if (id === 'bad') throw new Error('no such result');
      return `db_${id}`;
    },
    detach: async (open) => {
      await detachGate;
      log.push(`detach ${open}`);
    },
    closed: () => false,
    onDetachError: () => undefined,
  });
  return { results, log, holdDetach: (p: Promise<void>) => (detachGate = p) };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('attached results', () => {
  test('keep at most max idle ones, detaching the least recently used, never one in use', async () => {
    const { results, log } = lru(2);
    const a = await results.acquire('a');
    for (const id of ['b', 'c', 'd']) results.release((await results.acquire(id)).lease);
    await tick();
    // 'a' is in use: the idle least recently used ('b', then 'c') went instead.
    expect(log.filter((l) => l.startsWith('detach'))).toEqual(['detach db_b', 'detach db_c']);
    results.release(a.lease);
    expect((await results.acquire('a')).open).toBe('db_a');
    expect(log.filter((l) => l === 'attach a')).toHaveLength(1);
  });

  test('attaching one again waits for its detach to finish', async () => {
    const { results, log, holdDetach } = lru(0);
    let letGo: () => void = () => undefined;
    holdDetach(new Promise<void>((ok) => (letGo = ok)));
    results.release((await results.acquire('x')).lease);
    const again = results.acquire('x');
    await tick();
    expect(log).toEqual(['attach x']);
    letGo();
    await again;
    expect(log).toEqual(['attach x', 'detach db_x', 'attach x']);
  });

  test('drop waits for the pages using it, detaches, then runs its clean-up', async () => {
    const { results, log } = lru(5);
    const page = await results.acquire('r');
    const dropped = results.drop('r', async () => {
      log.push('files removed');
    });
    await tick();
    expect(log).toEqual(['attach r']);
    results.release(page.lease);
    await dropped;
    expect(log).toEqual(['attach r', 'detach db_r', 'files removed']);
  });

  test('a failed attach is not kept: the next acquire tries again', async () => {
    const { results, log } = lru(5);
    await expect(results.acquire('bad')).rejects.toThrow('no such result');
    await expect(results.acquire('bad')).rejects.toThrow('no such result');
    expect(log).toEqual(['attach bad', 'attach bad']);
  });

  test('one unused for idleMs is detached, one in use or read again is not', async () => {
    const { results, log } = lru(32, 30);
    const a = await results.acquire('a');
    results.release((await results.acquire('b')).lease);
    const c = await results.acquire('c');
    results.release(c.lease);
    await new Promise((r) => setTimeout(r, 15));
    // Read again before its time: the clock starts over.
    results.release((await results.acquire('c')).lease);
    await new Promise((r) => setTimeout(r, 20));
    expect(log.filter((l) => l.startsWith('detach'))).toEqual(['detach db_b']);
    await new Promise((r) => setTimeout(r, 30));
    expect(log.filter((l) => l.startsWith('detach'))).toEqual(['detach db_b', 'detach db_c']);
    results.release(a.lease);
    await new Promise((r) => setTimeout(r, 50));
    expect(log.filter((l) => l.startsWith('detach'))).toEqual(['detach db_b', 'detach db_c', 'detach db_a']);
    // Attached again on the next read.
    expect((await results.acquire('b')).open).toBe('db_b');
  });
});
