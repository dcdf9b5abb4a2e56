import type { ResolvedOutput } from './outputConfig.ts';

/**
 * The split rule, output side: why an output's rows cannot be split into parts with fixed row
 * ranges, each read on its own. Two ways do that: the native path of one process (`parts`: DuckDB
 * writes each part from the pages of its rows), and shards of one run (`--shard`). Both need files
 * that roll by rows alone; shards also need a destination with a shared area and a manifest commit
 * they can make together. The job side (the job features that read once for all outputs) is in
 * src/jobs; together they are the one list the run, the shard check, `--plan` and the generated
 * docs read.
 */
export type SplitWay = 'parts' | 'shards';

/** What the rule needs of an output's destination, once opened. */
export interface DestinationTraits {
  /** It takes several files (a stream, stdout, takes one). */
  readonly multiFile: boolean;
  /** Shards can share an area there (`Destination.shared`). */
  readonly shared: boolean;
}

/** One reason an output is not split one way. */
export interface SplitBlock {
  /** The setting that prevents it (`outputs[0].partition_by`). */
  readonly path: string;
  readonly message: string;
  readonly value?: unknown;
}

export interface OutputSplitRule {
  readonly way: SplitWay;
  /** The output's setting, as the job file names it. */
  readonly field: string;
  /** The rule in a few words, for the generated docs. */
  readonly doc: string;
  /** Why `output` is not split this way; undefined when this rule allows it. */
  readonly why: (output: ResolvedOutput, destination: DestinationTraits) => string | undefined;
  readonly value?: (output: ResolvedOutput) => unknown;
}

const rollsByValues = (o: ResolvedOutput): boolean => o.partitionBy.length > 0;
const rollsByBytes = (o: ResolvedOutput): boolean => Number.isFinite(o.maxBytesPerFile);

/** Every output-side reason, in the order they are told (the first is the one a warning names). */
export const OUTPUT_SPLIT_RULES: readonly OutputSplitRule[] = [
  { way: 'parts', field: 'path', doc: 'a destination that takes one stream (`-`, stdout)', why: (_o, d) => (d.multiFile ? undefined : 'the destination takes one stream') },
  { way: 'parts', field: 'partition_by', doc: 'set', why: (o) => (rollsByValues(o) ? 'partition_by decides files by values, not row ranges' : undefined) },
  { way: 'parts', field: 'max_bytes_per_file', doc: 'set', why: (o) => (rollsByBytes(o) ? 'max_bytes_per_file ends files by size, not row ranges' : undefined) },
  { way: 'parts', field: 'max_rows_per_file', doc: 'not set (the output is one file)', why: (o) => (Number.isFinite(o.maxRowsPerFile) ? undefined : 'without max_rows_per_file the output is one file') },
  { way: 'parts', field: 'table', doc: '`iceberg` (the commit converts the rows of its data files)', why: (o) => (o.table === 'iceberg' ? 'the iceberg commit converts the rows of its data files' : undefined) },
  { way: 'shards', field: 'mode', doc: '`append`', why: (o) => (o.mode === 'append' ? 'a sharded run replaces the output: drop mode: append or run without shards' : undefined), value: (o) => o.mode },
  { way: 'shards', field: 'table', doc: 'other than `manifest`', why: (o) => (o.table === 'manifest' ? undefined : 'a sharded run commits a manifest: run table outputs without shards'), value: (o) => o.table },
  { way: 'shards', field: 'partition_by', doc: 'set', why: (o) => (rollsByValues(o) ? 'a sharded run writes parts by row ranges: drop partition_by or run without shards' : undefined), value: (o) => o.partitionBy },
  { way: 'shards', field: 'max_bytes_per_file', doc: 'set', why: (o) => (rollsByBytes(o) ? 'a sharded run rolls parts by rows: use max_rows_per_file' : undefined), value: (o) => o.maxBytesPerFile },
  {
    way: 'shards',
    field: 'path',
    doc: 'a destination with no shared area (stdout; a sink that does not declare one)',
    why: (o, d) => (d.multiFile && d.shared ? undefined : `${o.sink.type} destinations cannot be sharded (use a local or shared folder, or S3)`),
    value: (o) => o.path,
  },
];

/** Every reason output `index` of a job is not split `way` (empty: it may be). */
export function outputSplitBlocks(output: ResolvedOutput, index: number, way: SplitWay, destination: DestinationTraits): SplitBlock[] {
  return OUTPUT_SPLIT_RULES.flatMap((rule) => {
    if (rule.way !== way) return [];
    const message = rule.why(output, destination);
    return message === undefined ? [] : [{ path: `outputs[${index}].${rule.field}`, message, ...(rule.value ? { value: rule.value(output) } : {}) }];
  });
}

/**
 * Why this output cannot be written in parts read by row ranges, or undefined when it can (see
 * `OUTPUT_SPLIT_RULES`): such an output is written from the one read. `multiFile`: whether the
 * destination takes several files (by default, as the output's sink declares).
 */
export function serialReason(resolved: ResolvedOutput, multiFile: boolean = resolved.sink.multiFile !== false): string | undefined {
  return outputSplitBlocks(resolved, 0, 'parts', { multiFile, shared: false })[0]?.message;
}
