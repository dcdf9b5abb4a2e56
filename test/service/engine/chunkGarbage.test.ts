// The collector runs after every 100 chunks fetched, without Node started with --expose-gc: an
// object nothing references is gone right after the 100th, not at some later collection.
import { expect, test } from 'vitest';
import { chunkFetched } from '../../../src/service/engine/memory/chunkGarbage.ts';

test('every 100th chunk fetched runs the collector', async () => {
  expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
  const drop = (): WeakRef<object> => new WeakRef({ rows: new Array(10_000).fill(1) });
  const ref = drop();
  // A WeakRef keeps its target until the current job ends.
  await new Promise((r) => setTimeout(r, 0));
  for (let i = 0; i < 99; i += 1) chunkFetched();
  expect(ref.deref()).toBeDefined();
  // deref() kept it for this job too.
  await new Promise((r) => setTimeout(r, 0));
  chunkFetched();
  expect(ref.deref()).toBeUndefined();
});
