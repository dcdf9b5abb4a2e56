import { describe, expect, it } from 'vitest';
import { createBatchBuilder } from '../../src/types/batch.ts';
import { POLARS_MISSING_MESSAGE, PolarsMissingError, toDataFrame } from '../../src/pipeline/dataFrame.ts';

const columns = [
  { name: 'id', type: 'bigint' },
  { name: 'name', type: 'varchar' },
];

async function* batchesOf(rows: Record<string, unknown>[], size: number) {
  const builder = createBatchBuilder(columns);
  for (const row of rows) {
    builder.append(row);
    if (builder.length === size) yield builder.flush();
  }
  if (builder.length > 0) yield builder.flush();
}

describe('toDataFrame', () => {
  it('reads several batches through one IPC stream', async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ id: BigInt(i) * 10n ** 15n, name: i % 3 === 0 ? null : `n${i}` }));
    const schema = createBatchBuilder(columns).schema;
    const df = await toDataFrame(schema, batchesOf(rows, 4));
    expect(df.height).toBe(10);
    expect(df.getColumn('name').toArray()).toEqual(rows.map((r) => r.name));
    expect(df.getColumn('id').toArray().map((v: unknown) => BigInt(v as bigint))).toEqual(rows.map((r) => r.id));
  });

  it('without nodejs-polars installed: a clear error telling how to install it', async () => {
    const missing = Object.assign(new Error("Cannot find package 'nodejs-polars'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const schema = createBatchBuilder(columns).schema;
    const error = await toDataFrame(schema, batchesOf([], 1), () => Promise.reject(missing)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolarsMissingError);
    expect((error as Error).message).toContain(POLARS_MISSING_MESSAGE);
    expect(POLARS_MISSING_MESSAGE).toBe('nodejs-polars is not installed: npm install nodejs-polars');
    expect((error as Error).cause).toBe(missing);
  });

  it('a module that is not polars is reported, not called', async () => {
    const schema = createBatchBuilder(columns).schema;
    await expect(toDataFrame(schema, batchesOf([], 1), () => Promise.resolve({ default: {} }))).rejects.toThrow('has no readIPCStream');
  });

  it('other load failures pass through unchanged', async () => {
    const schema = createBatchBuilder(columns).schema;
    const boom = new Error('native binding crashed');
    await expect(toDataFrame(schema, batchesOf([], 1), () => Promise.reject(boom))).rejects.toBe(boom);
  });
});
