import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JsonStore } from '../../src/service/store.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-store-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('JsonStore.remove', () => {
  it('deletes the record after the writes started before it, and is idempotent', async () => {
    const store = new JsonStore<{ v: number }>(dir);
    await store.init();
    const writes = [store.put('a', { v: 1 }), store.put('a', { v: 2 }), store.put('b', { v: 3 })];
    const removed = store.remove('a');
    await Promise.all([...writes, removed]);
    expect((await readdir(dir)).sort()).toEqual(['b.json']);
    await store.remove('a');
    await store.remove('never');
    const fresh = new JsonStore<{ v: number }>(dir);
    expect([...(await fresh.loadAll((raw) => raw as { v: number })).entries()]).toEqual([['b', { v: 3 }]]);
  });

  it('a write after the remove brings the record back', async () => {
    const store = new JsonStore<{ v: number }>(dir);
    await store.init();
    void store.remove('a');
    await store.put('a', { v: 9 });
    expect(await readdir(dir)).toEqual(['a.json']);
  });
});
