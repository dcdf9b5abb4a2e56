import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../../errors.ts';
import type { SharedArea } from '../../export/destination.ts';
import { partFileName } from '../../export/partFileName.ts';
import { PreconditionFailedError } from '../../kit/index.ts';
import { stream } from '../../pipeline/stream.ts';
import { DEFAULT_STATE_DIR, type Job } from '../../config/jobSchema.ts';
import { createFeatures } from '../features.ts';
import type { FeatureRun, JobFeature } from '../run/feature.ts';
import { ShardMismatchError } from '../errors.ts';
import type { OutputSession, OutputSessions } from '../output/outputSession.ts';
import { checkBytes, checkCredits, executionCost } from '../run/budget.ts';
import { readOptions } from '../run/readOptions.ts';
import { decideSource } from '../run/sourceDecision.ts';
import { areaId, decode, encode, EXECUTION_NAME, executionRecordSchema, jobFingerprint, type Plan, PLAN_NAME, planParts, planSchema, rowsPerPart, type ShardSpec } from './plan.ts';
import type { RunShardOptions } from './runShard.ts';

/**
 * The start of a sharded run: shard 0 starts (or reuses) the execution once, checks it as a run's
 * features do before any page, and writes one plan per output create-only; every shard waits for
 * the plans and checks they are this job's.
 */

const PLAN_POLL_MS = 200;
const DEFAULT_PLAN_WAIT_MS = 30 * 60_000;

/** The execution shard 0 reads: started or reused once, as a run decides it. */
interface Execution {
  readonly executionId: string;
  /** Started by this run (now, or by an attempt of shard 0 killed before the plan). */
  readonly started: boolean;
  readonly credits: number;
  readonly totalRows: number;
}

/**
 * Shard 0's execution. It is recorded create-only as soon as it is known, before waiting for it: a
 * shard 0 killed while the query runs finds it again when started again, instead of starting (and
 * paying for) a second one.
 */
async function startExecution(job: Job, options: RunShardOptions, sessions: OutputSessions, area: SharedArea): Promise<Execution> {
  const { shard, signal, client } = options;
  const known = await area.read(EXECUTION_NAME, signal);
  const earlier = known === undefined ? undefined : decode(executionRecordSchema, known, `${area.url}/${EXECUTION_NAME}`);
  const decision = earlier === undefined ? await decideSource(job, { client, signal }) : undefined;
  if (decision?.action === 'execute') checkCredits(job, 0);
  let recording: Promise<void> | undefined;
  // Never cancel on a stop: a restarted shard 0 picks the execution up again.
  const result = stream(client, decision?.source ?? { executionId: earlier!.execution_id, started: earlier!.started }, {
    ...readOptions(job),
    signal,
    cancelOnAbort: false,
    onExecution: (executionId, { started }) => {
      if (earlier !== undefined) return;
      recording = area.create(EXECUTION_NAME, encode({ execution_id: executionId, started }), signal).catch((error: unknown) => {
        if (!(error instanceof PreconditionFailedError)) throw error;
      });
    },
  });
  const ready = await result.ready().finally(() => recording?.catch(() => undefined));
  await recording;
  if (earlier !== undefined) options.events?.onInfo?.('execution of an earlier attempt picked up', { job: job.name, execution_id: earlier.execution_id, run_id: shard.runId });
  options.events?.onInfo?.(ready.started ? 'execution started' : 'stored result reused', { job: job.name, execution_id: ready.executionId, run_id: shard.runId });
  const overBytes = checkBytes(job, ready.status);
  if (overBytes) throw overBytes;
  // The features' checks on the metadata, as a run's (the contract's columns and row count: shards
  // have no result.filters, so the count is known here; drift's evolve and fail: freeze is refused).
  for (const feature of shardFeatures(job, options, sessions)) await feature.beforeFetch?.(ready.status);
  const started = ready.started && earlier === undefined;
  return {
    executionId: ready.executionId,
    started,
    // Charged to the attempt that started it: an attempt that picked it up pays nothing.
    credits: started ? (ready.status.execution_cost_credits ?? executionCost(job)) : 0,
    totalRows: ready.status.result_metadata?.total_row_count ?? (await result.info()).totalRows,
  };
}

/** Shard 0: the execution, started or reused once, and one plan per output, written create-only. */
export async function makePlans(job: Job, options: RunShardOptions, sessions: OutputSessions, areas: SharedArea[]): Promise<{ plans: Plan[]; credits: number }> {
  const { shard, signal } = options;
  const execution = await startExecution(job, options, sessions, areas[0]!);
  const plans: Plan[] = [];
  for (const [i, session] of sessions.all.entries()) {
    const plan = await planOutput(job, options, session, execution);
    try {
      await areas[i]!.create(PLAN_NAME, encode(plan), signal);
    } catch (error) {
      // Another shard 0 (a duplicate pod) planned first: its plan is the one every shard follows.
      if (!(error instanceof PreconditionFailedError)) throw error;
    }
    plans.push(plan);
  }
  options.events?.onInfo?.('plan written', { job: job.name, run_id: shard.runId, execution_id: execution.executionId, total_rows: execution.totalRows, parts: plans[0]!.parts.length, shards: shard.count });
  return { plans, credits: execution.credits };
}

/** The plan of one output: which rows go in which part, and which shard writes it. */
async function planOutput(job: Job, options: RunShardOptions, session: OutputSession, execution: Execution): Promise<Plan> {
  const { shard, signal } = options;
  const { executionId, totalRows } = execution;
  const { output, destination, index: i } = session;
  const previous = await session.committed(signal);
  const extension = output.format.create(output.formatConfig).extension;
  // Re-exporting the execution the output holds: other names, so no committed part is overwritten.
  const stem = previous?.executionId === executionId ? `${executionId}-${areaId(shard.runId, job.name, i).slice(0, 8)}` : executionId;
  const perPart = rowsPerPart(output, totalRows, shard.count)!;
  return {
    version: 1,
    run_id: shard.runId,
    job: job.name,
    job_fingerprint: jobFingerprint(job, i),
    shard_count: shard.count,
    execution_id: executionId,
    started_execution: execution.started,
    credits: execution.credits,
    created_at: new Date().toISOString(),
    total_rows: totalRows,
    rows_per_part: perPart,
    output: { url: destination.url, fingerprint: session.fingerprint },
    replaces: previous === undefined ? null : { execution_id: previous.executionId, version: previous.version ?? null },
    parts: planParts(totalRows, perPart, shard.count, (k) => partFileName(stem, k, extension)),
  };
}

export async function waitForPlan(area: SharedArea, job: Job, i: number, options: RunShardOptions): Promise<Plan> {
  const deadline = Date.now() + (options.planWaitMs ?? DEFAULT_PLAN_WAIT_MS);
  let told = false;
  for (;;) {
    const body = await area.read(PLAN_NAME, options.signal);
    if (body !== undefined) {
      try {
        return decode(planSchema, body, `${area.url}/${PLAN_NAME}`);
      } catch (error) {
        throw new ConfigError(`job ${job.name}: ${(error as Error).message}; remove ${area.url} and start a new run`, { cause: error });
      }
    }
    if (Date.now() > deadline) {
      throw new ShardMismatchError(
        `job ${job.name}, shard ${options.shard.index} of ${options.shard.count}, run id ${options.shard.runId}: no plan at ${area.url} after ${Math.round((options.planWaitMs ?? DEFAULT_PLAN_WAIT_MS) / 1000)} s (outputs[${i}]); ` +
          'shard 0 makes it: check that shard 0 runs with the same run id and job file',
      );
    }
    if (!told) options.events?.onInfo?.('waiting for the plan of shard 0', { job: job.name, area: area.url, run_id: options.shard.runId });
    told = true;
    await sleep(PLAN_POLL_MS, undefined, { signal: options.signal });
  }
}

/** The plan must be this job's, for this many shards. */
export function checkPlan(job: Job, i: number, plan: Plan, shard: ShardSpec, area: SharedArea): Plan {
  const mine = jobFingerprint(job, i);
  const where = `job ${job.name}, shard ${shard.index} of ${shard.count} (${shard.from}), run id ${shard.runId}`;
  if (plan.shard_count !== shard.count) {
    throw new ShardMismatchError(
      `${where}: the plan at ${area.url} was made for ${plan.shard_count} shards, this shard was started for ${shard.count}; nothing was written. ` +
        `Start every shard of a run with the same count (--shard i/${plan.shard_count}), or start a new run with a new run id`,
    );
  }
  if (plan.job !== job.name || plan.job_fingerprint !== mine) {
    throw new ShardMismatchError(
      `${where}: the plan at ${area.url} was made from another job file (job ${plan.job}, fingerprint ${plan.job_fingerprint}; this shard's job file gives ${job.name}, ${mine}); nothing was written. ` +
        'Start every shard of a run with the same job file, or start a new run with a new run id',
    );
  }
  return plan;
}

/** The job's features as a shard runs them: their checks before any page (the split rule refuses the others). */
function shardFeatures(job: Job, options: RunShardOptions, sessions: OutputSessions): JobFeature[] {
  const info = options.events?.onInfo;
  const run: FeatureRun = {
    job,
    outputs: sessions,
    client: options.client,
    signal: options.signal,
    tally: { startedAt: new Date(), began: performance.now(), credits: 0, attempts: 1 },
    events: { onWarning: info, onDrift: (d) => info?.('schema drift', { job: job.name, ...d }) },
    resume: false,
    executionId: undefined,
    stateDir: DEFAULT_STATE_DIR,
  };
  return createFeatures(run);
}
