import { RecordBatch, type Schema, Table, tableToIPC } from 'apache-arrow';
import type * as Wasm from 'parquet-wasm';
import { z } from 'zod';
import { defineFormat, emptyBatch, FormatError, messageOf } from '../../../src/kit/index.ts';
import { ALLOWED, applyChoice, chooseEncodings, ENCODINGS, physicalOf, WASM_ENCODING } from './encodings.ts';

// parquet-wasm is loaded by the first encode: validating a job or listing formats never pays for it.
const CODECS = { snappy: 'SNAPPY', zstd: 'ZSTD', gzip: 'GZIP', none: 'UNCOMPRESSED' } as const satisfies Record<string, keyof typeof Wasm.Compression>;
const STATISTICS = { page: 'Page', chunk: 'Chunk', none: 'None' } as const satisfies Record<string, keyof typeof Wasm.EnabledStatistics>;

/** Leading rows of each file, written once per candidate encoding to choose each column's ("auto"). */
export const SAMPLE_ROWS = 16_384;

const statistics = z
  .enum(['page', 'chunk', 'none'])
  .describe('Min/max and null-count statistics: page (per row group and per page, so engines can skip both), chunk (per row group only), or none.');

const columnOptions = z
  .strictObject({
    dictionary: z.boolean().optional().describe('true: dictionary-encode this column (plain when the dictionary overflows); false: never.'),
    encoding: z
      .enum(ENCODINGS)
      .optional()
      .describe(
        'The column\'s encoding (the fallback when dictionary is true): plain; delta_binary_packed (integers, dates, times, timestamps, decimals up to 18 digits); ' +
          'delta_length_byte_array or delta_byte_array (strings, binary); byte_stream_split (floats). Unset: chosen from the data.',
      ),
    statistics: statistics.optional(),
  })
  .describe('Settings for one top-level column; they override the file-wide ones and the automatic choice.');

export const parquetConfig = z.strictObject({
  compression: z
    .enum(['zstd', 'snappy', 'gzip', 'none'])
    .default('zstd')
    .describe('Page compression codec: zstd (small and fast, the default), snappy, gzip, or none. Each at its library default level.'),
  row_group_size: z
    .int()
    .min(1)
    .max(10_000_000)
    .default(122_880)
    .describe('Maximum rows per row group. Bigger groups compress better; each is held in memory while written.'),
  row_group_bytes: z
    .int()
    .min(1_024)
    .max(2 ** 31)
    .optional()
    .describe('Maximum bytes per row group (estimated before compression); a group ends at whichever of this and row_group_size comes first.'),
  data_page_size: z
    .int()
    .min(1_024)
    .max(2 ** 30)
    .default(1_048_576)
    .describe('Target bytes per data page (before compression). Smaller pages let engines skip more with page statistics; larger ones compress a little better.'),
  dictionary: z
    .union([z.literal('auto'), z.boolean()])
    .default('auto')
    .describe(
      'auto: each column gets the encoding that makes it smallest (dictionary, plain or a delta encoding), measured on each file\'s first rows; ' +
        'true: a dictionary for every column (plain when it overflows); false: no dictionaries.',
    ),
  statistics: statistics.default('page'),
  auto_encodings: z
    .array(z.enum(ENCODINGS))
    .min(1)
    .optional()
    .describe(
      'The encodings dictionary: auto may choose besides a dictionary (default: every one). An Iceberg table output leaves out delta_byte_array unless this is set: ' +
        'hyparquet and icebird, JavaScript readers of such tables, cannot read it in the data pages this writer makes. Plain is always allowed.',
    ),
  columns: z
    .record(z.string().min(1), columnOptions)
    .default({})
    .describe('Per-column settings by top-level column name, e.g. { id: { encoding: delta_binary_packed }, name: { dictionary: true } }.'),
});
export type ParquetConfig = z.output<typeof parquetConfig>;

export const parquet = defineFormat({
  type: 'parquet',
  description: 'Apache Parquet via parquet-wasm, written row group by row group; the Arrow schema is embedded (ARROW:schema).',
  config: parquetConfig,
  addsColumns: true,
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
  checkColumns(schema, config);
  const wasm = await import('parquet-wasm');
  const iterator = batches[Symbol.asyncIterator]();
  // The leading rows decide the encodings; they are then written first, like any other batch.
  const head: RecordBatch[] = [];
  let headRows = 0;
  let ended = false;
  try {
    while (headRows < SAMPLE_ROWS) {
      signal?.throwIfAborted();
      const next = await iterator.next();
      if (next.done) {
        ended = true;
        break;
      }
      if (next.value.numRows === 0) continue;
      head.push(next.value);
      headRows += next.value.numRows;
    }
  } catch (error) {
    await iterator.return?.(error);
    throw error;
  }
  let props: Wasm.WriterProperties;
  try {
    props = await writerProperties(wasm, schema, config, head);
  } catch (error) {
    await iterator.return?.(error);
    throw error instanceof FormatError ? error : new FormatError('parquet', 'cannot choose the column encodings', error);
  }

  let sawBatch = head.length > 0;
  let sourceError: unknown;
  // highWaterMark 0: the wasm writer pulls one batch at a time, when it wants one, so the
  // source is never read ahead of the encoder.
  const input = new ReadableStream<Wasm.RecordBatch>(
    {
      async pull(controller) {
        try {
          signal?.throwIfAborted();
          const held = head.shift();
          if (held) {
            for (const b of toWasm(wasm, schema, held)) controller.enqueue(b);
            return;
          }
          const next = ended ? { done: true as const, value: undefined } : await iterator.next();
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

/** Per-column settings must name a top-level column whose type takes the encoding asked for. */
function checkColumns(schema: Schema, config: ParquetConfig): void {
  for (const [name, options] of Object.entries(config.columns)) {
    const field = schema.fields.find((f) => f.name === name);
    const where = `format_options.columns.${name}`;
    if (!field) {
      throw new FormatError('parquet', `${where}: no such column; the columns are ${schema.fields.map((f) => f.name).join(', ')}`);
    }
    const physical = physicalOf(field.type);
    if (physical === 'nested') {
      throw new FormatError('parquet', `${where}: ${name} is a nested column (${field.type}); per-column settings apply to top-level columns of simple types`);
    }
    if (options.encoding !== undefined && !ALLOWED[physical].includes(options.encoding)) {
      throw new FormatError(
        'parquet',
        `${where}.encoding: ${options.encoding} cannot encode ${name} (${field.type}); use one of ${ALLOWED[physical].join(', ')}`,
      );
    }
  }
}

async function writerProperties(wasm: typeof Wasm, schema: Schema, config: ParquetConfig, head: RecordBatch[]): Promise<Wasm.WriterProperties> {
  let builder = new wasm.WriterPropertiesBuilder()
    .setCompression(wasm.Compression[CODECS[config.compression]])
    .setMaxRowGroupSize(config.row_group_size)
    .setDataPageSizeLimit(config.data_page_size)
    .setStatisticsEnabled(wasm.EnabledStatistics[STATISTICS[config.statistics]])
    // Nested leaves cannot be addressed one by one: they follow this global switch.
    .setDictionaryEnabled(config.dictionary !== false)
    .setCreatedBy('sluice');
  if (config.row_group_bytes !== undefined) builder = builder.setMaxRowGroupBytes(config.row_group_bytes);
  const simple = schema.fields.filter((f) => physicalOf(f.type) !== 'nested').map((f) => f.name);
  if (config.dictionary === 'auto') {
    const open = simple.filter((name) => config.columns[name]?.dictionary === undefined && config.columns[name]?.encoding === undefined);
    // Each file decides from its own first rows, so a file's bytes depend on its rows only (a
    // resumed export writes the same files as an uninterrupted one).
    const allowed = new Set<string>(['dictionary', 'plain', ...(config.auto_encodings ?? ENCODINGS)]);
    for (const [name, choice] of await chooseEncodings(wasm, schema, leading(head, SAMPLE_ROWS), open, wasm.Compression[CODECS[config.compression]], config.row_group_size, allowed)) {
      builder = applyChoice(wasm, builder, name, choice);
    }
  } else {
    for (const name of simple) builder = builder.setColumnDictionaryEnabled(name, config.dictionary);
  }
  for (const [name, options] of Object.entries(config.columns)) {
    if (options.dictionary !== undefined) builder = builder.setColumnDictionaryEnabled(name, options.dictionary);
    else if (options.encoding !== undefined) builder = builder.setColumnDictionaryEnabled(name, false);
    if (options.encoding !== undefined) builder = builder.setColumnEncoding(name, wasm.Encoding[WASM_ENCODING[options.encoding]]);
    if (options.statistics !== undefined) builder = builder.setColumnStatisticsEnabled(name, wasm.EnabledStatistics[STATISTICS[options.statistics]]);
  }
  return builder.build();
}

/** The first `rows` rows of `batches`: a source's batches can be far longer than the sample (65,536 rows and more). */
function leading(batches: readonly RecordBatch[], rows: number): RecordBatch[] {
  const out: RecordBatch[] = [];
  let left = rows;
  for (const batch of batches) {
    if (left <= 0) break;
    out.push(batch.numRows <= left ? batch : batch.slice(0, left));
    left -= batch.numRows;
  }
  return out;
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
