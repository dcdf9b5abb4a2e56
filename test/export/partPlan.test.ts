import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { availableParallelism } from 'node:os';
import { MIN_ROWS_PER_THREAD, partThreadCount, planParts, resolveOutput, resolveWorkers, serialReason } from '../../src/export/index.ts';

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

describe('partThreadCount', () => {
  it('a count asked for is kept, but never more threads than parts', () => {
    expect(partThreadCount(4, 1_000_000, 250_000, 'json')).toBe(4);
    expect(partThreadCount(4, 1_000_000, 500_000, 'json')).toBe(2);
    expect(partThreadCount(3, 10, 250_000, 'arrow')).toBe(1);
    expect(partThreadCount(2, 0, 250_000, 'json')).toBe(1);
    expect(partThreadCount(undefined, 1_000_000, 1, 'json')).toBe(1);
  });

  it('auto: one per core at most, one per part at most, and only as many as have enough rows on the wire to pay for their start', () => {
    const cores = availableParallelism();
    const plenty = 100 * cores * MIN_ROWS_PER_THREAD.arrow;
    expect(partThreadCount('auto', plenty, 1_000, 'json')).toBe(cores);
    expect(partThreadCount('auto', plenty, 1_000, 'arrow')).toBe(cores);
    expect(partThreadCount('auto', plenty, plenty, 'json')).toBe(1);
    // Two threads' worth of rows over JSON is one thread's worth over Arrow (cheaper rows: a thread's start weighs more).
    const two = 2 * MIN_ROWS_PER_THREAD.json;
    expect(partThreadCount('auto', two, 1_000, 'json')).toBe(Math.min(cores, 2));
    expect(partThreadCount('auto', two, 1_000, 'arrow')).toBe(1);
    expect(partThreadCount('auto', MIN_ROWS_PER_THREAD.json - 1, 1_000, 'json')).toBe(1);
    // The wire not known yet: the JSON threshold (the one that starts more threads).
    expect(partThreadCount('auto', two, 1_000, undefined)).toBe(Math.min(cores, 2));
  });
});

describe('which outputs part threads can write', () => {
  const out = (extra: Record<string, unknown>) => resolveOutput({ format: 'parquet', path: 'out/x', ...extra }, builtins);
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
