import type { Job } from '../../config/jobSchema.ts';
import { type DestinationTraits, OUTPUT_SPLIT_RULES, outputSplitBlocks, type SplitBlock, type SplitWay } from '../../export/splitRule.ts';
import { FEATURES } from '../features.ts';

/**
 * The split rule: why a job's rows cannot be split into parts read by row ranges (the native
 * path's) or over shards (`--shard`). The job side is here: settings that make a run read once for
 * all its outputs (a filter the service does not count, and each job feature's: a cursor, chunks,
 * checks that see every row, a frozen schema); the output side (how files roll, the destination,
 * the commit) is in src/export (`OUTPUT_SPLIT_RULES`). The run (`whyOneRead`), the shard check
 * (`whyNotSharded`), `--plan` and the generated docs (`splitRuleReference`) all read these lists.
 */
export interface JobSplitRule {
  /** The setting, as the job file names it (`outputs[].expect.checks` for an output's). */
  readonly field: string;
  /** When it blocks, for the docs (default: when it is set). */
  readonly when?: string;
  /** Why the job's outputs cannot be written in parts read by row ranges (undefined: this setting does not stop it). */
  readonly parts?: string;
  /** Why shards cannot (undefined: this setting does not stop them). */
  readonly shards?: string;
  /** Where the job sets it: each setting's path and value (empty: not set). */
  readonly found: (job: Job) => readonly { readonly path: string; readonly value: unknown }[];
}

/** The run's own rule (a filter the service does not count), then each feature's (see `JobFeatureKind.split`). */
export function jobSplitRules(): readonly JobSplitRule[] {
  return [FILTERS_RULE, ...FEATURES.flatMap((f) => f.split)];
}

const FILTERS_RULE: JobSplitRule = {
  field: 'result.filters',
  parts: 'parts need row offsets, and the service does not count the rows a filter keeps',
  shards: 'a sharded run splits the result by row offsets, and the service does not count filtered rows up front: filter in the SQL instead',
  found: (job) => (job.result?.filters === undefined ? [] : [{ path: 'result.filters', value: job.result.filters }]),
};

/** Every job-side reason the job's rows are not split `way`. */
export function jobSplitBlocks(job: Job, way: SplitWay): SplitBlock[] {
  return jobSplitRules().flatMap((rule) => {
    const why = rule[way];
    return why === undefined ? [] : rule.found(job).map(({ path, value }) => ({ path, message: why, value }));
  });
}

/**
 * Why a run's outputs are all written from its one read (undefined: an output may read its parts
 * by row ranges itself, as the native path does).
 */
export function whyOneRead(job: Job): string | undefined {
  const block = jobSplitBlocks(job, 'parts')[0];
  return block === undefined ? undefined : `${block.path}: the outputs are written from the one read (${block.message})`;
}

/** Every reason the job cannot run sharded, job side then each output's (`destinations`: the outputs' opened destinations, by index). */
export function whyNotSharded(job: Job, destinations: readonly DestinationTraits[]): SplitBlock[] {
  return [...jobSplitBlocks(job, 'shards'), ...job.outputs.flatMap((output, i) => outputSplitBlocks(output, i, 'shards', destinations[i]!))];
}

/** The split rule as the generated job file reference lists it. */
export function splitRuleReference(): string {
  const lines = (way: SplitWay): string[] => [
    ...jobSplitRules().flatMap((rule) => (rule[way] === undefined ? [] : [`- \`${rule.field}\` ${rule.when ?? 'set'}: ${rule[way]}`])),
    ...OUTPUT_SPLIT_RULES.flatMap((rule) => (rule.way === way ? [`- an output's \`${rule.field}\`: ${rule.doc}`] : [])),
  ];
  return [
    '## Outputs written from the one read, and jobs that cannot be sharded',
    '',
    'The native path (a Parquet output over JSON pages) and shards (`--shard`) split an output into',
    'parts with fixed row ranges, each read on its own. Generated from the split rule the run, the',
    'shard check and `--plan` read.',
    '',
    'An output is written from the one read of the run (never natively) when:',
    '',
    ...lines('parts'),
    "- an output's `schema_drift: freeze` once the output is found to have drifted (its rows are reshaped from the one read)",
    '',
    'A job cannot run sharded when:',
    '',
    ...lines('shards'),
    '',
  ].join('\n');
}
