// The chunks an Arrow encoder keeps in memory for the readers of a first read (recentChunks.ts):
// bounded in bytes, the oldest dropped first; a page is taken from it only when every chunk of it
// is still kept (else the reader reads rows.arrow).
import { expect, test } from 'vitest';
import { RecentChunks, RECENT_CHUNK_BYTES } from '../../../src/service/engine/encoding/recentChunks.ts';

const MiB = 1024 * 1024;
const chunk = (k: number, bytes: number): Uint8Array[] => [new Uint8Array(16).fill(k), new Uint8Array(bytes - 16).fill(k)];

test('keeps the last chunks within its bound, oldest dropped first, and takes a page only when all its chunks are kept', () => {
  const recent = new RecentChunks(8 * MiB);
  for (let k = 0; k < 10; k++) {
    recent.add(k, chunk(k, 3 * MiB), 3 * MiB);
    expect(recent.bytes).toBeLessThanOrEqual(8 * MiB);
  }
  expect(recent.size).toBe(2);
  expect(recent.take(7, 8)).toBeUndefined();
  const page = recent.take(8, 10)!;
  expect(page.map((p) => p[0])).toEqual([8, 8, 9, 9]);
  expect(page.reduce((n, p) => n + p.byteLength, 0)).toBe(6 * MiB);
  // Larger than the bound on its own: not kept, and nothing else dropped for it.
  recent.add(10, chunk(10, 9 * MiB), 9 * MiB);
  expect(recent.take(10, 11)).toBeUndefined();
  expect(recent.size).toBe(2);
  recent.clear();
  expect([recent.size, recent.bytes]).toEqual([0, 0]);
  expect(RECENT_CHUNK_BYTES).toBeLessThanOrEqual(16 * MiB);
});
