// Encoding at completion (engine.encode_results: at_completion) stops at a size: a larger result (in result_set_bytes or in rows)
// completes without its encodings (its first pages are page queries) and is encoded in the
// background once the engine is idle; a smaller one is encoded before it completes, as always.
// A large one encoded at completion takes two passes with a trim between them: same files.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect, test, vi } from 'vitest';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { openEngine } from '../../../src/service/engine/index.ts';

test.each([
  { by: 'bytes', max: { bytes: 10_000 } },
  { by: 'rows', max: { rows: 100 } },
])('a result above encodeAtCompletionMax ($by) is encoded when idle, one below it at completion', async ({ max }) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-encode-large-'));
  const engine = await openEngine({ dataDir, datasets: ['sample'], sampleRows: 2_000, defaultThreads: 1, encodeMinBytes: 0, encodeAtCompletionMax: max, encodeResults: 'at_completion' });
  try {
    const run = (id: string, sql: string) => engine.execute(sql, { resultId: id, signal: new AbortController().signal });
    const small = await run('small', 'SELECT * FROM sample.events ORDER BY id LIMIT 20');
    expect(small.bytes).toBeLessThan(10_000);
    expect(existsSync(join(dataDir, 'results', 'small.enc'))).toBe(true);

    const large = await run('large', 'SELECT * FROM sample.events ORDER BY id');
    expect(large.bytes).toBeGreaterThan(10_000);
    expect(existsSync(join(dataDir, 'results', 'large.enc'))).toBe(false);
    const first = await engine.page('large', { offset: 0, limit: 2_000 });
    expect(first.rowCount).toBe(2_000);
    await vi.waitFor(() => expect(existsSync(join(dataDir, 'results', 'large.enc', 'json', 'info.json'))).toBe(true), { timeout: 30_000, interval: 100 });
    expect((await engine.page('large', { offset: 0, limit: 2_000 })).rowsJson).toBe(first.rowsJson);
  } finally {
    await engine.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);

test('a result encoded in two passes (JSON/CSV, a trim, then Arrow) gets the same files as one encoded in both at once', async () => {
  const dirs = [await mkdtemp(join(tmpdir(), 'sluice-encode-apart-')), await mkdtemp(join(tmpdir(), 'sluice-encode-together-'))];
  // No trim before the encoding nor when idle: the only trim is the one between the two passes.
  const trim = { beforeEncodingBytes: Number.MAX_SAFE_INTEGER, afterIdleMs: 600_000 };
  const [apart, together] = (await Promise.all([
    openEngine({ dataDir: dirs[0]!, datasets: [], memoryLimit: '256MiB', defaultThreads: 1, encodeMinBytes: 0, encodeResults: 'at_completion', trim: { ...trim, encodeApartBytes: 0 } }),
    openEngine({ dataDir: dirs[1]!, datasets: [], memoryLimit: '256MiB', defaultThreads: 1, encodeMinBytes: 0, encodeResults: 'at_completion', trim: { ...trim, encodeApartBytes: Number.MAX_SAFE_INTEGER } }),
  ])) as DuckDbEngine[];
  try {
    const sql = "SELECT i AS id, 'row ' || i AS name, i * 0.5 AS half, CASE WHEN i % 7 = 0 THEN NULL ELSE DATE '2024-01-01' + (i % 400)::INTEGER END AS day FROM range(70000) t(i) ORDER BY i";
    for (const engine of [apart!, together!]) await engine.execute(sql, { resultId: 'r', signal: new AbortController().signal });
    expect(apart!.memoryTrims.files).toBe(1);
    expect(together!.memoryTrims.files).toBe(0);
    const files = async (dir: string): Promise<Map<string, string>> => {
      const base = join(dir, 'results', 'r.enc');
      const names = (await readdir(base, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => relative(base, join(e.parentPath, e.name)));
      return new Map(await Promise.all(names.map(async (n) => [n, createHash('sha256').update(await readFile(join(base, n))).digest('hex')] as const)));
    };
    const [a, b] = await Promise.all([files(dirs[0]!), files(dirs[1]!)]);
    expect([...a.keys()].some((n) => n.startsWith('arrow'))).toBe(true);
    expect(a).toEqual(b);
    expect((await apart!.page('r', { offset: 69_990, limit: 20 })).rowsJson).toBe((await together!.page('r', { offset: 69_990, limit: 20 })).rowsJson);
  } finally {
    await Promise.all([apart!.close(), together!.close()]);
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  }
}, 60_000);
