import { z } from 'zod';
import { ConfigError, type ConfigIssue, type FormatDescriptor, issuesOf, type SinkDescriptor } from '../kit/index.ts';
import { formats as builtinFormats, s3 as s3Sink, sinks as builtinSinks } from '../../connectors/index.ts';
import { s3Options } from '../../connectors/sinks/s3/index.ts';

export interface Registry {
  readonly formats: readonly FormatDescriptor[];
  readonly sinks: readonly SinkDescriptor[];
}

export const builtins: Registry = { formats: builtinFormats, sinks: builtinSinks };

/** Files written at once unless `max_open_files` says otherwise: 16 S3 uploads at the default 4 x 8 MiB buffer about 512 MiB. */
export const DEFAULT_MAX_OPEN_FILES = 16;

const common = {
  path: z
    .string()
    .min(1)
    .describe('Where the export lives: a local directory, s3://bucket/prefix, or "-" for standard output (one file, no markers).'),
  partition_by: z
    .array(z.string().min(1))
    .min(1)
    .refine((cols) => new Set(cols).size === cols.length, 'columns must not repeat')
    .optional()
    .describe(
      'Hive partitioning: one directory level col=value per column, in this order. The columns leave the data files (Hive convention): readers get them back from the path, as text unless told their type (DuckDB hive_types, a Spark schema), or set keep_partition_columns.',
    ),
  keep_partition_columns: z
    .boolean()
    .optional()
    .describe('Also keep the partition_by columns in the data files, with their types (default false: Hive convention, values only in the path).'),
  max_rows_per_file: z.int().min(1).optional().describe('Start a new file after this many rows.'),
  max_bytes_per_file: z
    .int()
    .min(1024)
    .optional()
    .describe(
      'Start a new file once this many bytes are written. Checked between batches, after the encoder emitted them: a file can overshoot by up to one batch (a result page), and a Parquet file by up to one row group, which is written when it fills or the file ends.',
    ),
  max_open_files: z
    .int()
    .min(1)
    .max(1024)
    .optional()
    .describe(
      `Most files written at once (default ${DEFAULT_MAX_OPEN_FILES}); matters with partition_by. Opening one more first finishes the least recently used one, and later rows of that partition go to a new part, so unsorted input with many partitions gives more, smaller files instead of exhausting memory (an S3 file buffers up to queue_size x part_size_mb while open). Sort by the partition columns for one file per partition.`,
    ),
  s3: s3Options.optional().describe('S3 settings; only with an s3:// path.'),
};

/** The output section of a job, one object per format so each format's options are checked. */
export function outputConfigSchema(registry: Registry = builtins) {
  const variants = registry.formats.map((f) =>
    z.strictObject({
      format: z.literal(f.type).describe(f.description),
      format_options: f.config.optional().describe(`Options of the ${f.type} format.`),
      ...common,
    }),
  );
  return z.discriminatedUnion('format', variants as [(typeof variants)[number], ...(typeof variants)[number][]]);
}

export type OutputConfig = {
  format: string;
  format_options?: Record<string, unknown>;
  path: string;
  partition_by?: string[];
  keep_partition_columns?: boolean;
  max_rows_per_file?: number;
  max_bytes_per_file?: number;
  max_open_files?: number;
  s3?: z.input<typeof s3Options>;
};

export interface ResolvedOutput {
  readonly format: FormatDescriptor;
  readonly formatConfig: unknown;
  readonly sink: SinkDescriptor;
  readonly sinkConfig: unknown;
  readonly path: string;
  readonly partitionBy: readonly string[];
  readonly keepPartitionColumns: boolean;
  readonly maxRowsPerFile: number;
  readonly maxBytesPerFile: number;
  readonly maxOpenFiles: number;
}

/** Pure validation: no I/O. Every error names the field (`format_options.compression`) and value. */
export function resolveOutput(input: unknown, registry: Registry = builtins): ResolvedOutput {
  const known = registry.formats.map((f) => f.type);
  const format = isRecord(input) ? registry.formats.find((f) => f.type === input.format) : undefined;
  if (!format) {
    const value = isRecord(input) ? input.format : input;
    throw new ConfigError('output', [{ path: 'format', message: `expected one of ${known.join(', ')}`, value }]);
  }
  const parsed = outputConfigSchema({ formats: [format], sinks: registry.sinks }).safeParse(input);
  if (!parsed.success) throw new ConfigError('output', issuesOf(parsed.error, input));
  const config = parsed.data as OutputConfig;

  const sink = registry.sinks.find((s) => s.accepts(config.path));
  if (!sink) throw new ConfigError('output', [{ path: 'path', message: 'no destination accepts this path', value: config.path }]);
  const issues: ConfigIssue[] = [];
  if (config.s3 !== undefined && sink !== s3Sink) {
    issues.push({ path: 's3', message: 'S3 settings apply only to an s3:// path', value: config.s3 });
  }
  const rawSinkConfig = sink === s3Sink ? { ...(isRecord(input) && isRecord(input.s3) ? input.s3 : {}), url: config.path } : { url: config.path };
  const sinkParsed = sink.config.safeParse(rawSinkConfig);
  if (!sinkParsed.success) {
    // The sink knows its URL as `url`; the user wrote it as `path`, and the rest under `s3:`.
    for (const issue of issuesOf(sinkParsed.error, rawSinkConfig)) {
      issues.push({ ...issue, path: issue.path === 'url' ? 'path' : `s3.${issue.path}` });
    }
  }
  if (sink.type === 'stdout' && (config.partition_by || config.max_rows_per_file || config.max_bytes_per_file)) {
    issues.push({ path: 'path', message: 'standard output takes one stream: drop partition_by and max_*_per_file', value: config.path });
  }
  if (issues.length > 0) throw new ConfigError('output', issues);
  return {
    format,
    formatConfig: format.config.parse(config.format_options ?? {}),
    sink,
    sinkConfig: sinkParsed.data,
    path: config.path,
    partitionBy: config.partition_by ?? [],
    keepPartitionColumns: config.keep_partition_columns ?? false,
    maxRowsPerFile: config.max_rows_per_file ?? Number.POSITIVE_INFINITY,
    maxBytesPerFile: config.max_bytes_per_file ?? Number.POSITIVE_INFINITY,
    maxOpenFiles: config.max_open_files ?? DEFAULT_MAX_OPEN_FILES,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
