// Encoding at completion stops at a size: a larger result (in result_set_bytes or in rows)
// completes without its encodings (its first pages are page queries) and is encoded in the
// background once the engine is idle; a smaller one is encoded before it completes, as always.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, vi } from 'vitest';
import { openEngine } from '../../../src/service/engine/index.ts';

test.each([
  { by: 'bytes', max: { bytes: 10_000 } },
  { by: 'rows', max: { rows: 100 } },
])('a result above encodeAtCompletionMax ($by) is encoded when idle, one below it at completion', async ({ max }) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-encode-large-'));
  const engine = await openEngine({ dataDir, datasets: ['sample'], sampleRows: 2_000, defaultThreads: 1, encodeMinBytes: 0, encodeAtCompletionMax: max });
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
    await vi.waitFor(() => expect(existsSync(join(dataDir, 'results', 'large.enc', 'info.json'))).toBe(true), { timeout: 30_000, interval: 100 });
    expect((await engine.page('large', { offset: 0, limit: 2_000 })).rowsJson).toBe(first.rowsJson);
  } finally {
    await engine.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 60_000);
