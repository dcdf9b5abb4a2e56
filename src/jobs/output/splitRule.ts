import type { Job } from '../../config/jobSchema.ts';
import { type DestinationTraits, OUTPUT_SPLIT_RULES, outputSplitBlocks, type SplitBlock, type SplitWay } from '../../export/splitRule.ts';
import { driftPolicyOf } from '../drift/drift.ts';

/**
 * The split rule: why a job's rows cannot be split over part threads (`workers`) or shards
 * (`--shard`). The job side is here: settings that make a run read once for all its outputs (a
 * filter the service does not count, a cursor, chunks, checks that see every row); the output side
 * (how files roll, the destination, the commit) is in src/export (`OUTPUT_SPLIT_RULES`). The run
 * (`whyOneThread`), the shard check (`whyNotSharded`), `--plan` and the generated docs
 * (`splitRuleReference`) all read these lists.
 */
export interface JobSplitRule {
  /** The setting, as the job file names it (`outputs[].expect.checks` for an output's). */
  readonly field: string;
  /** When it blocks, for the docs (default: when it is set). */
  readonly when?: string;
  /** Why part threads cannot write the job's outputs (undefined: this setting does not stop them). */
  readonly threads?: string;
  /** Why shards cannot (undefined: this setting does not stop them). */
  readonly shards?: string;
  /** Where the job sets it: each setting's path and value (empty: not set). */
  readonly found: (job: Job) => readonly { readonly path: string; readonly value: unknown }[];
}

const set = (path: string, value: unknown): { path: string; value: unknown }[] => (value === undefined ? [] : [{ path, value }]);
const perOutput = (job: Job, field: string, value: (o: Job['outputs'][number]) => unknown): { path: string; value: unknown }[] =>
  job.outputs.flatMap((o, i) => set(`outputs[${i}].${field}`, value(o)));

export const JOB_SPLIT_RULES: readonly JobSplitRule[] = [
  {
    field: 'result.filters',
    threads: 'parts need row offsets, and the service does not count the rows a filter keeps',
    shards: 'a sharded run splits the result by row offsets, and the service does not count filtered rows up front: filter in the SQL instead',
    found: (job) => set('result.filters', job.result?.filters),
  },
  {
    field: 'incremental',
    threads: 'each drops the rows it holds already, from the one read',
    shards: 'a sharded run replaces its outputs with one result: run incremental jobs without shards',
    found: (job) => set('incremental', job.incremental?.cursor),
  },
  {
    field: 'backfill',
    threads: 'the rows come from one execution per chunk, read in chunk order',
    shards: 'a backfill reads one execution per chunk and commits them once: run it without shards (backfill.concurrency runs chunks side by side)',
    found: (job) => set('backfill', job.backfill?.chunk),
  },
  {
    field: 'expect.checks',
    threads: 'every row passes the column checks on its way from the one read',
    shards:
      'not supported on sharded runs yet (each shard reads only its rows, so unique could not see them all): run without shards, or keep expect.columns and expect.rows, which shard 0 checks before any page is fetched',
    found: (job) => set('expect.checks', job.expect?.checks === undefined ? undefined : Object.keys(job.expect.checks)),
  },
  {
    field: 'outputs[].expect.checks',
    threads: 'every row passes the column checks on its way to the output',
    found: (job) => perOutput(job, 'expect.checks', (o) => (o.expect?.checks === undefined ? undefined : Object.keys(o.expect.checks))),
  },
  {
    field: 'outputs[].expect',
    shards: "not supported on sharded runs yet: move the output's columns and rows to the job's expect (shard 0 checks them before any page is fetched), or run without shards",
    found: (job) => perOutput(job, 'expect', (o) => (o.expect === undefined ? undefined : Object.keys(o.expect))),
  },
  {
    field: 'outputs[].schema_drift',
    when: 'is `freeze` (its own, or the job\'s)',
    // Part threads: only once a frozen output is found to have drifted (its rows are reshaped from the one read): the run decides then.
    shards: 'freeze reshapes the rows of the one read, and each shard reads its own: use fail or evolve, or run without shards',
    found: (job) => perOutput(job, 'schema_drift', (o) => (driftPolicyOf(job, o) === 'freeze' ? 'freeze' : undefined)),
  },
];

/** Every job-side reason the job's rows are not split `way`. */
export function jobSplitBlocks(job: Job, way: SplitWay): SplitBlock[] {
  return JOB_SPLIT_RULES.flatMap((rule) => {
    const why = rule[way];
    return why === undefined ? [] : rule.found(job).map(({ path, value }) => ({ path, message: why, value }));
  });
}

/**
 * Why a run's outputs are all written by one thread from one read, whatever was asked (undefined:
 * part threads may write them): said as a warning when more were asked.
 */
export function whyOneThread(job: Job): string | undefined {
  const block = jobSplitBlocks(job, 'threads')[0];
  return block === undefined ? undefined : `${block.path}: the outputs are written by one thread (${block.message})`;
}

/** Every reason the job cannot run sharded, job side then each output's (`destinations`: the outputs' opened destinations, by index). */
export function whyNotSharded(job: Job, destinations: readonly DestinationTraits[]): SplitBlock[] {
  return [...jobSplitBlocks(job, 'shards'), ...job.outputs.flatMap((output, i) => outputSplitBlocks(output, i, 'shards', destinations[i]!))];
}

/** The split rule as the generated job file reference lists it. */
export function splitRuleReference(): string {
  const lines = (way: SplitWay): string[] => [
    ...JOB_SPLIT_RULES.flatMap((rule) => (rule[way] === undefined ? [] : [`- \`${rule.field}\` ${rule.when ?? 'set'}: ${rule[way]}`])),
    ...OUTPUT_SPLIT_RULES.flatMap((rule) => (rule.way === way ? [`- an output's \`${rule.field}\`: ${rule.doc}`] : [])),
  ];
  return [
    '## Outputs written by one thread, and jobs that cannot be sharded',
    '',
    'Part threads (`workers`) and shards (`--shard`) split an output into parts with fixed row ranges.',
    'Generated from the split rule the run, the shard check and `--plan` read.',
    '',
    'An output is written by one thread, whatever `workers` asks, when:',
    '',
    ...lines('threads'),
    "- an output's `schema_drift: freeze` once the output is found to have drifted (its rows are reshaped from the one read)",
    '',
    'A job cannot run sharded when:',
    '',
    ...lines('shards'),
    '',
  ].join('\n');
}
