import { RecordBatch, type Schema, Table, tableToIPC } from 'apache-arrow';
import type * as Wasm from 'parquet-wasm';
import { z } from 'zod';
import { defineFormat, emptyBatch, FormatError, messageOf } from '../../../src/kit/index.ts';

// parquet-wasm is loaded by the first encode: validating a job or listing formats never pays for it.
const CODECS = { snappy: 'SNAPPY', zstd: 'ZSTD', gzip: 'GZIP', none: 'UNCOMPRESSED' } as const satisfies Record<string, keyof typeof Wasm.Compression>;

export const parquetConfig = z.strictObject({
  compression: z
    .enum(['snappy', 'zstd', 'gzip', 'none'])
    .default('snappy')
    .describe('Page compression codec: snappy (fast, the usual default), zstd (smaller), gzip, or none.'),
  row_group_size: z
    .int()
    .min(1)
    .max(10_000_000)
    .default(122_880)
    .describe('Maximum rows per row group. Bigger groups compress better; each is held in memory while written.'),
  dictionary: z.boolean().default(true).describe('Dictionary-encode columns where it pays off.'),
});
export type ParquetConfig = z.output<typeof parquetConfig>;

export const parquet = defineFormat({
  type: 'parquet',
  description: 'Apache Parquet via parquet-wasm, written row group by row group; the Arrow schema is embedded (ARROW:schema).',
  config: parquetConfig,
  create: (config: ParquetConfig) => ({
    extension: 'parquet',
    contentType: 'application/vnd.apache.parquet',
    encode: (schema, batches, signal) => encodeParquet(schema, batches, config, signal),
  }),
});

async function* encodeParquet(
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  config: ParquetConfig,
  signal?: AbortSignal,
): AsyncIterable<Uint8Array> {
  const wasm = await import('parquet-wasm');
  const iterator = batches[Symbol.asyncIterator]();
  let sawBatch = false;
  let sourceError: unknown;
  // highWaterMark 0: the wasm writer pulls one batch at a time, when it wants one, so the
  // source is never read ahead of the encoder.
  const input = new ReadableStream<Wasm.RecordBatch>(
    {
      async pull(controller) {
        try {
          signal?.throwIfAborted();
          const next = await iterator.next();
          if (next.done) {
            // Zero rows still makes a file with the schema, so readers see the columns.
            if (!sawBatch) for (const b of toWasm(wasm, schema, emptyBatch(schema))) controller.enqueue(b);
            controller.close();
            return;
          }
          sawBatch = true;
          if (next.value.numRows === 0) return;
          for (const b of toWasm(wasm, schema, next.value)) controller.enqueue(b);
        } catch (error) {
          sourceError = error;
          controller.error(error);
        }
      },
      async cancel(reason) {
        await iterator.return?.(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const props = new wasm.WriterPropertiesBuilder()
    .setCompression(wasm.Compression[CODECS[config.compression]])
    .setMaxRowGroupSize(config.row_group_size)
    .setDictionaryEnabled(config.dictionary)
    .setCreatedBy('sluice')
    .build();
  let output: ReadableStream<Uint8Array>;
  try {
    output = (await wasm.transformParquetStream(input, props)) as ReadableStream<Uint8Array>;
  } catch (error) {
    throw sourceError ?? new FormatError('parquet', 'cannot start the writer', error);
  }
  try {
    for await (const chunk of output) yield chunk;
  } catch (error) {
    // The wasm side reports the source's error as its own; hand back the original.
    if (sourceError !== undefined) throw sourceError;
    throw new FormatError('parquet', messageOf(error), error);
  }
  if (sourceError !== undefined) throw sourceError;
}

/** Moves one JS batch into wasm memory: IPC bytes in, wasm record batches out. */
function toWasm(wasm: typeof Wasm, schema: Schema, batch: RecordBatch): Wasm.RecordBatch[] {
  // Re-wrapping with the export schema keeps its metadata (execution id, service.type) in ARROW:schema.
  const ipc = tableToIPC(new Table([new RecordBatch(schema, batch.data)]), 'stream');
  const table = wasm.Table.fromIPCStream(ipc);
  try {
    return table.recordBatches();
  } finally {
    table.free();
  }
}
