import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openExport, planParts, resolveOutput, serialReason } from '../../src/export/index.ts';

describe('planParts', () => {
  it('part k holds rows [k*R, min((k+1)*R, total)); kept parts are left out; an empty result is one empty part', () => {
    expect(planParts(1000, 300)).toEqual([
      { index: 0, firstRow: 0, rows: 300 },
      { index: 1, firstRow: 300, rows: 300 },
      { index: 2, firstRow: 600, rows: 300 },
      { index: 3, firstRow: 900, rows: 100 },
    ]);
    expect(planParts(900, 300).map((p) => p.rows)).toEqual([300, 300, 300]);
    expect(planParts(1000, 300, new Set([0, 2])).map((p) => p.index)).toEqual([1, 3]);
    expect(planParts(0, 300)).toEqual([{ index: 0, firstRow: 0, rows: 0 }]);
    expect(() => planParts(10, 0)).toThrow('rowsPerPart must be a positive integer, got 0');
  });
});

describe('which outputs can be written in parts read by row ranges (the native path, shards)', () => {
  const out = (extra: Record<string, unknown>) => resolveOutput({ format: 'parquet', path: 'out/x', ...extra }, builtins);
  it('only files rolled by max_rows_per_file alone, on a multi-file destination', () => {
    expect(serialReason(out({ max_rows_per_file: 10 }), true)).toBeUndefined();
    expect(serialReason(out({}), true)).toMatch(/without max_rows_per_file the output is one file/);
    expect(serialReason(out({ max_rows_per_file: 10, partition_by: ['a'] }), true)).toMatch(/partition_by/);
    expect(serialReason(out({ max_rows_per_file: 10, max_bytes_per_file: 1_000_000 }), true)).toMatch(/max_bytes_per_file/);
    expect(serialReason(out({ max_rows_per_file: 10 }), false)).toMatch(/one stream/);
    expect(serialReason(out({ max_rows_per_file: 10, table: 'iceberg' }), true)).toMatch(/iceberg commit converts the rows/);
  });
});

describe('the removed part threads', () => {
  it('workers is accepted and ignored with one DeprecationWarning per process that says why and what to do; nothing is left staged', async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    const dir = await mkdtemp(join(tmpdir(), 'sluice-workers-ignored-'));
    try {
      const output = resolveOutput({ format: 'parquet', path: join(dir, 't'), max_rows_per_file: 10 }, builtins);
      for (const workers of [4, 'auto'] as const) {
        const opened = await openExport(output, { executionId: 'e1' }, { workers });
        expect(opened.startRow).toBe(0);
        await opened.discard();
      }
      await new Promise((r) => setImmediate(r));
      expect(warnings.map((w) => [w.name, (w as Error & { code?: string }).code, w.message])).toEqual([
        ['DeprecationWarning', 'SLUICE_WORKERS', expect.stringMatching(/^export option workers is ignored: part threads were removed.*Remove the setting; to use more cores, run the job sharded/)],
      ]);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      process.off('warning', listen);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
