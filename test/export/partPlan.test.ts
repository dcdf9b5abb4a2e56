import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { planParts, resolveOutput, resolveWorkers, serialReason } from '../../src/export/index.ts';

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

describe('which outputs part threads can write', () => {
  const out = (extra: Record<string, unknown>) => resolveOutput({ format: 'parquet', path: '/tmp/x', ...extra }, builtins);
  it('only files rolled by max_rows_per_file alone, on a multi-file destination', () => {
    expect(serialReason(out({ max_rows_per_file: 10 }), true)).toBeUndefined();
    expect(serialReason(out({}), true)).toMatch(/without max_rows_per_file the output is one file/);
    expect(serialReason(out({ max_rows_per_file: 10, partition_by: ['a'] }), true)).toMatch(/partition_by/);
    expect(serialReason(out({ max_rows_per_file: 10, max_bytes_per_file: 1_000_000 }), true)).toMatch(/max_bytes_per_file/);
    expect(serialReason(out({ max_rows_per_file: 10 }), false)).toMatch(/one stream/);
  });

  it("workers: a count, or auto for one per core; anything else is a ConfigError naming it", () => {
    expect(resolveWorkers(undefined)).toBe(1);
    expect(resolveWorkers(3)).toBe(3);
    expect(resolveWorkers('auto')).toBeGreaterThanOrEqual(1);
    expect(() => resolveWorkers(1.5)).toThrow(/workers: expected a positive integer or 'auto'.*\(got 1\.5\)/);
  });
});

describe('table: iceberg with workers', () => {
  it('is written by one thread: its commit converts the rows for its data files', async () => {
    const { openExport } = await import('../../src/export/index.ts');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'sluice-iceberg-workers-'));
    try {
      const opened = await openExport(resolveOutput({ format: 'parquet', table: 'iceberg', path: join(dir, 't'), max_rows_per_file: 10 }, builtins), { executionId: 'e1' }, { workers: 4 });
      expect(opened.workers).toBe(1);
      expect(opened.serialReason).toBe('the iceberg commit converts the rows of its data files');
      await opened.discard();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
