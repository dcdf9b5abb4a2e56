import type { ShardSpec } from '../jobs/shards/plan.ts';
import { UsageError } from './usageError.ts';

export interface ShardArgs {
  /** `--shard i/N` */
  readonly shard?: string | undefined;
  /** `--shards N` (the count, with the index from a launcher variable) */
  readonly shards?: string | undefined;
  /** `--run-id ID` */
  readonly runId?: string | undefined;
}

const MAX_SHARDS = 10_000;

/**
 * The shard of this process, from the command line or the launcher's own variables; undefined when
 * the run is not sharded. Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX` (the count is the
 * Job's `completions`, which the pod does not see: `--shards N`); AWS Batch array jobs set
 * `AWS_BATCH_JOB_ARRAY_INDEX` and `AWS_BATCH_JOB_ARRAY_SIZE`; Cloud Run jobs `CLOUD_RUN_TASK_INDEX`
 * and `CLOUD_RUN_TASK_COUNT`. The run id comes from `--run-id`, `SLUICE_RUN_ID`, the array job's id
 * (AWS Batch) or the job execution (Cloud Run).
 */
export function shardSpec(args: ShardArgs, env: Readonly<Record<string, string | undefined>>): ShardSpec | undefined {
  let index: number;
  let count: number;
  let from: string;
  if (args.shard !== undefined) {
    const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(args.shard);
    if (!match) {
      throw new UsageError(
        `--shard ${JSON.stringify(args.shard)}: expected INDEX/COUNT, e.g. --shard 0/4 for the first of four shards (indexes run from 0 to COUNT-1)` +
          (/^\s*\d+\s*$/.test(args.shard) ? `; the count is missing: --shard ${args.shard.trim()}/N` : ''),
      );
    }
    if (args.shards !== undefined) throw new UsageError(`--shard ${args.shard} gives the count already: leave out --shards ${args.shards}`);
    index = Number(match[1]);
    count = Number(match[2]);
    from = `--shard ${args.shard.trim()}`;
  } else {
    const launcher = fromLauncher(args.shards, env);
    if (launcher === undefined) return undefined;
    ({ index, count, from } = launcher);
  }
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_SHARDS) throw new UsageError(`${from}: the shard count must be between 1 and ${MAX_SHARDS}, got ${count}`);
  if (!Number.isSafeInteger(index) || index >= count) {
    throw new UsageError(`${from}: shard index ${index} is out of range for ${count} shards (indexes run from 0 to ${count - 1})`);
  }
  return { index, count, runId: runIdOf(args.runId, env, from), from };
}

function fromLauncher(shards: string | undefined, env: Readonly<Record<string, string | undefined>>): { index: number; count: number; from: string } | undefined {
  const k8s = env.JOB_COMPLETION_INDEX;
  if (k8s !== undefined && k8s !== '') {
    if (shards === undefined) {
      throw new UsageError(`JOB_COMPLETION_INDEX=${k8s} is set (a Kubernetes Indexed Job) but the shard count is not: pass --shards N with N the Job's completions`);
    }
    return { index: integer(k8s, 'JOB_COMPLETION_INDEX'), count: integer(shards, '--shards'), from: `JOB_COMPLETION_INDEX=${k8s} with --shards ${shards}` };
  }
  const pairs = [
    ['AWS_BATCH_JOB_ARRAY_INDEX', 'AWS_BATCH_JOB_ARRAY_SIZE'],
    ['CLOUD_RUN_TASK_INDEX', 'CLOUD_RUN_TASK_COUNT'],
  ] as const;
  for (const [indexVar, countVar] of pairs) {
    const i = env[indexVar];
    if (i === undefined || i === '') continue;
    const n = shards ?? env[countVar];
    if (n === undefined || n === '') throw new UsageError(`${indexVar}=${i} is set but ${countVar} is not: pass --shards N`);
    return { index: integer(i, indexVar), count: integer(n, shards === undefined ? countVar : '--shards'), from: `${indexVar}=${i} of ${n}` };
  }
  if (shards !== undefined) {
    throw new UsageError(`--shards ${shards} needs the index from a launcher (JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, CLOUD_RUN_TASK_INDEX), or use --shard INDEX/${shards}`);
  }
  return undefined;
}

function integer(text: string, name: string): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`${name}: expected a whole number, got ${JSON.stringify(text)}`);
  return Number(text.trim());
}

function runIdOf(given: string | undefined, env: Readonly<Record<string, string | undefined>>, from: string): string {
  // AWS Batch names an array child `<array job id>:<index>`: the part before the colon is shared.
  const batch = env.AWS_BATCH_JOB_ID?.replace(/:\d+$/, '');
  const id = [given, env.SLUICE_RUN_ID, batch, env.CLOUD_RUN_EXECUTION].find((v) => v !== undefined && v !== '');
  if (id === undefined) {
    throw new UsageError(
      `${from}: the shards of one export need an id they all share, new for each run: pass --run-id ID or set SLUICE_RUN_ID ` +
        '(AWS Batch and Cloud Run provide one; the Kubernetes example in config/kubernetes sets it from the Job\'s uid)',
    );
  }
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(id)) throw new UsageError(`run id ${JSON.stringify(id)}: use 1 to 128 letters, digits, '.', '_', ':' or '-'`);
  return id;
}
