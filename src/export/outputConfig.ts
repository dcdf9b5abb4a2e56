import { z } from 'zod';
import { type CatalogConfig, catalogConfigSchema } from './iceberg/catalog/catalogConfig.ts';
import { ConfigError, type ConfigIssue, type FormatDescriptor, issuesOf, redact, type Registry, type SinkDescriptor } from '../kit/index.ts';

/** How an output is committed: `manifest` (files, `_manifest.json`, `_SUCCESS`) or an Iceberg table. */
export const TABLES = ['manifest', 'iceberg'] as const;
export type Table = (typeof TABLES)[number];
export type OutputMode = 'replace' | 'append';

/** Files written at once unless `max_open_files` says otherwise: 16 object-store uploads at their default 4 x 8 MiB buffers hold about 512 MiB. */
export const DEFAULT_MAX_OPEN_FILES = 16;

const common = {
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
  max_rows_per_file: z.int().min(1).optional().describe('Start a new file after this many rows (default: no limit, one file, per partition with partition_by). Also what makes an output a set of parts with fixed row ranges (shards, the native path).'),
  max_bytes_per_file: z
    .int()
    .min(1024)
    .optional()
    .describe(
      'Start a new file once this many bytes are written. Checked between batches, after the encoder emitted them: a file can overshoot by up to one batch (a result page), and a Parquet file by up to one row group, which is written when it fills or the file ends.',
    ),
  commit: z
    .enum(['conditional', 'unconditional'])
    .optional()
    .describe(
      'How the manifest is published (default conditional): create-only, or replace only the version the run started from (If-None-Match / If-Match on an object store, an exclusive create on disk), so of two committers exactly one wins. unconditional is for object stores without conditional writes: the last writer wins.',
    ),
  max_open_files: z
    .int()
    .min(1)
    .max(1024)
    .optional()
    .describe(
      `Most files written at once (default ${DEFAULT_MAX_OPEN_FILES}); matters with partition_by. Opening one more first finishes the least recently used one, and later rows of that partition go to a new part, so unsorted input with many partitions gives more, smaller files instead of exhausting memory (a sink may buffer each open file: an object store up to queue_size x part_size_mb). Sort by the partition columns for one file per partition.`,
    ),
  table: z
    .enum(TABLES)
    .optional()
    .describe(
      'How the output is committed. manifest (default): the data files, then _manifest.json and _SUCCESS; each run replaces the output. iceberg: an Apache Iceberg table (format v2) at the path, each run a snapshot: Parquet data files under data/ (partition_by an identity partition spec, the columns kept in the files), metadata under metadata/, committed by creating metadata/v<N>.metadata.json only if absent. Parquet outputs only, at a directory or object prefix (not a single stream).',
    ),
  catalog: catalogConfigSchema
    .optional()
    .describe(
      'With table: iceberg, where the table is committed. type: path (default): the table is its path, committed by creating metadata/v<N>.metadata.json only if absent. type: rest: through an Iceberg REST catalog (uri, warehouse, namespace, table, auth), which engines then find the table in; the data files and manifests go to the output path, which must be the table\'s location in the catalog. See docs/iceberg-catalogs.md.',
    ),
  mode: z
    .enum(['replace', 'append'])
    .optional()
    .describe(
      'replace (default): each run replaces the output (with table: iceberg, an overwrite snapshot; older snapshots stay for time travel). append: each run adds its rows: a manifest output keeps the committed parts and adds the run\'s (named after its execution) under a manifest listing all of them; with table: iceberg, an append snapshot. A run with no rows commits nothing; re-running an execution already committed with the same options commits nothing. Appending to a manifest output needs the same job, format and partition_by as the committed one; a column whose type changed fails, a new column or a wider type (integer to bigint, real to double, a decimal with more digits) is taken only where the format can hold it (parquet, ndjson).',
    ),
};

/**
 * The Parquet encodings an Iceberg output's automatic choice may take: all but DELTA_BYTE_ARRAY,
 * which hyparquet and icebird (the JavaScript readers of such tables) cannot read in version 1 data
 * pages. The format's `auto_encodings` option given in format_options wins.
 */
const TABLE_ENCODINGS = ['plain', 'delta_binary_packed', 'delta_length_byte_array', 'byte_stream_split'];

/**
 * The output section of a job, one object per format so each format's options are checked. Each
 * sink with an options block adds it under its key; which block goes with which path is checked
 * by `resolveOutput`.
 */
export function outputConfigSchema(registry: Registry) {
  const path = z
    .string()
    .min(1)
    .describe(`Where the export lives: ${registry.sinks.map((sink) => sink.paths).join('; ')}.`);
  const blocks = Object.fromEntries(
    registry.sinks.flatMap((sink) => (sink.options ? [[sink.options.key, sink.options.schema.optional().describe(`${sink.description} Only with ${sink.paths}.`)]] : [])),
  );
  const variants = registry.formats.map((f) =>
    z.strictObject({
      format: z.literal(f.type).describe(f.description),
      format_options: f.config.optional().describe(`Options of the ${f.type} format.`),
      path,
      ...common,
      ...blocks,
    }),
  );
  return z.discriminatedUnion('format', variants as [(typeof variants)[number], ...(typeof variants)[number][]]);
}

/** One output as a job file or a library caller writes it, before `resolveOutput`. */
export interface OutputConfig {
  readonly format: string;
  readonly format_options?: Record<string, unknown>;
  readonly path: string;
  readonly partition_by?: readonly string[];
  readonly keep_partition_columns?: boolean;
  readonly max_rows_per_file?: number;
  readonly max_bytes_per_file?: number;
  readonly max_open_files?: number;
  readonly table?: Table;
  readonly mode?: OutputMode;
  readonly commit?: 'conditional' | 'unconditional';
  readonly catalog?: CatalogConfig;
  /** A sink's options block under its key (see `SinkDescriptor.options`). */
  readonly [block: string]: unknown;
}

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
  /** How it is committed (see `commitFor`). */
  readonly table: Table;
  /** replace: a commit replaces the output; append: a commit adds its files (or snapshot) to the committed ones. */
  readonly mode: OutputMode;
  /** How the manifest is published: conditionally (default) or last writer wins. */
  readonly commit: 'conditional' | 'unconditional';
  /** An Iceberg output's catalog (undefined: the path commit). */
  readonly catalog?: CatalogConfig | undefined;
}

/** Pure validation: no I/O. Every error names the field (`format_options.compression`) and value. */
export function resolveOutput(input: unknown, registry: Registry): ResolvedOutput {
  const format = formatOf(input, registry);
  const parsed = outputConfigSchema({ formats: [format], sinks: registry.sinks }).safeParse(input);
  if (!parsed.success) throw new ConfigError('output', issuesOf(parsed.error, input));
  const config = parsed.data as OutputConfig;
  const sink = registry.sinks.find((s) => s.accepts(config.path));
  if (!sink) {
    const choices = registry.sinks.map((s) => s.paths).join('; ');
    throw new ConfigError('output', [{ path: 'path', message: `no destination accepts this path (expected ${choices})`, value: config.path }]);
  }
  const table = config.table ?? 'manifest';
  const sinkConfig = sinkConfigOf(input, config, sink, registry);
  const issues = [...sinkConfig.issues, ...streamIssues(config, sink), ...(table === 'iceberg' ? icebergIssues(config, format, sink, registry) : [])];
  if (config.catalog !== undefined && table !== 'iceberg') {
    issues.push({ path: 'catalog', message: 'a catalog commits an Iceberg table: set table: iceberg, or drop catalog', value: config.catalog.type });
  }
  if (issues.length > 0) throw new ConfigError('output', issues);
  return {
    format,
    formatConfig: format.config.parse(table === 'iceberg' ? { auto_encodings: TABLE_ENCODINGS, ...config.format_options } : (config.format_options ?? {})),
    sink,
    sinkConfig: sinkConfig.value,
    path: config.path,
    partitionBy: config.partition_by ?? [],
    keepPartitionColumns: config.keep_partition_columns ?? table === 'iceberg',
    maxRowsPerFile: config.max_rows_per_file ?? Number.POSITIVE_INFINITY,
    maxBytesPerFile: config.max_bytes_per_file ?? Number.POSITIVE_INFINITY,
    maxOpenFiles: config.max_open_files ?? DEFAULT_MAX_OPEN_FILES,
    table,
    mode: config.mode ?? 'replace',
    commit: config.commit ?? 'conditional',
    ...(config.catalog === undefined || config.catalog.type === 'path' ? {} : { catalog: config.catalog }),
  };
}

type Sink = Registry['sinks'][number];
type FormatOf = Registry['formats'][number];

/** The output's format, from the registry: the one thing checked before the schema that depends on it. */
function formatOf(input: unknown, registry: Registry): FormatOf {
  const format = isRecord(input) ? registry.formats.find((f) => f.type === input.format) : undefined;
  if (format) return format;
  const value = isRecord(input) ? input.format : input;
  throw new ConfigError('output', [{ path: 'format', message: `expected one of ${registry.formats.map((f) => f.type).join(', ')}`, value }]);
}

/** The sink's settings (its block under its key, and the path as its URL), and what is wrong with them or with another sink's block. */
function sinkConfigOf(input: unknown, config: OutputConfig, sink: Sink, registry: Registry): { value: unknown; issues: ConfigIssue[] } {
  const issues: ConfigIssue[] = [];
  for (const other of registry.sinks) {
    const key = other.options?.key;
    if (key !== undefined && other !== sink && config[key] !== undefined) {
      issues.push({ path: key, message: `${key} settings apply only to ${other.paths}, not to this path`, value: isRecord(input) ? input[key] : undefined });
    }
  }
  const key = sink.options?.key;
  const block = key !== undefined && isRecord(input) && isRecord(input[key]) ? input[key] : {};
  const rawSinkConfig = { ...block, url: config.path };
  const sinkParsed = sink.config.safeParse(rawSinkConfig);
  if (!sinkParsed.success) {
    // The sink knows its URL as `url`; the user wrote it as `path`, and the rest under the sink's key.
    for (const issue of issuesOf(sinkParsed.error, rawSinkConfig)) {
      issues.push({ ...issue, path: issue.path === 'url' ? 'path' : `${key ?? sink.type}.${issue.path}` });
    }
  }
  return { value: sinkParsed.data, issues };
}

/** What a destination that takes one stream cannot do. */
function streamIssues(config: OutputConfig, sink: Sink): ConfigIssue[] {
  if (sink.multiFile !== false) return [];
  const issues: ConfigIssue[] = [];
  if (config.partition_by || config.max_rows_per_file || config.max_bytes_per_file) {
    issues.push({ path: 'path', message: `${sink.paths} takes one stream: drop partition_by and max_*_per_file`, value: config.path });
  }
  if (config.mode === 'append') {
    issues.push({ path: 'mode', message: `${sink.paths} takes one stream and keeps no commit to append to: use a directory or bucket path`, value: config.mode });
  }
  return issues;
}

/** What an Iceberg table output cannot be given. */
function icebergIssues(config: OutputConfig, format: FormatOf, sink: Sink, registry: Registry): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (format.type !== 'parquet') {
    issues.push({ path: 'format', message: 'table: iceberg writes Parquet data files: set format: parquet, or drop table: iceberg', value: format.type });
  }
  if (sink.multiFile === false) {
    const choices = registry.sinks.filter((s) => s.multiFile !== false).map((s) => s.paths).join('; ');
    issues.push({ path: 'path', message: `table: iceberg needs a place for a table (${choices}), not ${sink.paths}`, value: config.path });
  }
  if (config.keep_partition_columns === false) {
    issues.push({ path: 'keep_partition_columns', message: 'an Iceberg table keeps the partition columns in its data files (engines read them there): drop keep_partition_columns', value: false });
  }
  if (config.commit === 'unconditional') {
    issues.push({ path: 'commit', message: 'an Iceberg table is committed by creating its next metadata file only if absent: drop commit: unconditional', value: 'unconditional' });
  }
  return issues;
}

/**
 * The resolved output as plain data, every default filled in and credentials redacted: what
 * fingerprints hash (two spellings of one output hash alike; a rotated key re-exports nothing)
 * and what may be shown to a person.
 */
export function describeOutput(resolved: ResolvedOutput): Record<string, unknown> {
  return {
    format: resolved.format.type,
    format_options: resolved.formatConfig,
    sink: resolved.sink.type,
    sink_options: redact(resolved.sinkConfig),
    path: resolved.path,
    partition_by: resolved.partitionBy,
    keep_partition_columns: resolved.keepPartitionColumns,
    max_rows_per_file: Number.isFinite(resolved.maxRowsPerFile) ? resolved.maxRowsPerFile : null,
    max_bytes_per_file: Number.isFinite(resolved.maxBytesPerFile) ? resolved.maxBytesPerFile : null,
    max_open_files: resolved.maxOpenFiles,
    table: resolved.table,
    mode: resolved.mode,
    // Only when set: the fingerprints of outputs without one stay as they were.
    ...(resolved.catalog === undefined ? {} : { catalog: redact(resolved.catalog) }),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
