import { ExecutionExpiredError, NotFoundError } from '../../client/errors.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import { ConfigError } from '../../errors.ts';
import type { ShardCommitOutcome } from '../../export/shardCommit.ts';
import { type ExecutionStatus, holdsResult } from '../../protocol/index.ts';
import { ShardCommittedError } from '../errors.ts';
import { type OutputSession, OutputSessions } from '../output/outputSession.ts';
import { whyNotSharded } from '../output/splitRule.ts';
import { areaId, type Plan, PLAN_NAME, type ShardSpec } from './plan.ts';
import { committedByThisRun, committedOutput, recordParts, type ShardOutput, tryCommit } from './shardFinish.ts';
import { type Written, writeShardParts } from './shardParts.ts';
import { checkPlan, makePlans, waitForPlan } from './shardStart.ts';
import { shardOutputSpan } from '../../telemetry/shardSpans.ts';

export interface ShardEvents {
  onInfo?(message: string, fields: Record<string, unknown>): void;
}

export interface RunShardOptions {
  readonly client: ServiceClient;
  readonly shard: ShardSpec;
  readonly signal: AbortSignal;
  readonly events?: ShardEvents;
  /** How long a shard other than 0 waits for shard 0's plan (default 30 minutes). */
  readonly planWaitMs?: number;
}

export interface ShardOutputSummary {
  readonly url: string;
  readonly format: string;
  /** Parts this shard owns, written now or kept from a killed attempt. */
  readonly parts: number;
  readonly resumedParts: number;
  readonly rows: number;
  readonly bytes: number;
  /** committed: this shard published the export; committed-by-another: a racing committer did; waiting: shards still to finish. */
  readonly commit: ShardCommitOutcome | 'waiting';
  /** Shards whose record is still missing (when waiting). */
  readonly waitingFor: readonly number[];
}

export interface ShardSummary {
  readonly job: string;
  readonly shard: number;
  readonly shards: number;
  readonly runId: string;
  readonly executionId: string;
  /** This shard made the plan and started the execution (it is charged once, to this shard). */
  readonly startedExecution: boolean;
  readonly credits: number;
  readonly outputs: readonly ShardOutputSummary[];
  readonly durationMs: number;
}

/**
 * One shard of a sharded run of `job`: the phases of a run (see `JobRun`), with a plan shared by the
 * shards between the execution and the writes. Shard 0 makes the plan: it decides what to read as a
 * run does (`decideSource`, the budget), starts (or reuses) the execution once, splits the result
 * into parts with fixed row ranges and writes the plan create-only into each output's shared area;
 * the other shards wait for it. Every shard then writes only its parts (keeping those its journal
 * lists from a killed attempt), records them create-only, and the shard that finds every record
 * present commits: one manifest, published conditionally.
 */
export async function runShard(job: Job, options: RunShardOptions): Promise<ShardSummary> {
  const began = performance.now();
  const { shard, signal } = options;
  const sessions = new OutputSessions(job);
  try {
    checkShardable(job, sessions);
    // Before anything is started or written: a destination that cannot work costs nothing.
    await sessions.check(signal);
    const areas = sessions.all.map((s, i) => s.destination.shared!(areaId(shard.runId, job.name, i)));
    for (const session of sessions.all) await refuseIfCommitted(job, session, shard, signal);
    // Shard 0 plans while any output lacks a plan (a kill can come between two of them).
    const planning = shard.index === 0 && (await Promise.all(areas.map((a) => a.read(PLAN_NAME, signal)))).some((p) => p === undefined);
    const made = planning ? await makePlans(job, options, sessions, areas) : undefined;
    const plans: Plan[] = [];
    for (const [i, area] of areas.entries()) plans.push(checkPlan(job, i, await waitForPlan(area, job, i, options), shard, area));
    const status = await readableExecution(job, options, plans[0]!.execution_id);
    const outputs: ShardOutputSummary[] = [];
    for (const [index, session] of sessions.all.entries()) {
      const out: ShardOutput = { index, session, output: session.output, destination: session.destination, area: areas[index]!, plan: plans[index]! };
      outputs.push(await shardOutputSpan(session.destination.url, session.output.format.type, () => exportOutput(job, options, out, status)));
    }
    return {
      job: job.name,
      shard: shard.index,
      shards: shard.count,
      runId: shard.runId,
      executionId: plans[0]!.execution_id,
      startedExecution: made?.plans[0]?.started_execution ?? false,
      credits: made?.credits ?? 0,
      outputs,
      durationMs: performance.now() - began,
    };
  } finally {
    await sessions.close();
  }
}

/** The plan's execution must still hold its result: a plan made long ago may read one that expired. */
async function readableExecution(job: Job, options: RunShardOptions, executionId: string): Promise<ExecutionStatus> {
  const status = await options.client.getStatus(executionId, { signal: options.signal }).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  if (status !== undefined && holdsResult(status)) return status;
  throw new ExecutionExpiredError(
    `the plan of run ${options.shard.runId} (job ${job.name}) reads execution ${executionId}, which ${status === undefined ? 'the service no longer knows' : `is ${status.state.replace('QUERY_STATE_', '').toLowerCase()}`} and has no result to read; ` +
      `nothing was written. Start a new run with a new run id (--run-id / SLUICE_RUN_ID) so that a new plan is made`,
    { executionId },
  );
}

/** This shard's end of one output: write its parts, record them, and commit when every shard has. */
async function exportOutput(job: Job, options: RunShardOptions, out: ShardOutput, status: ExecutionStatus): Promise<ShardOutputSummary> {
  const { shard, signal } = options;
  let written: Written = { parts: [], resumed: 0, schema: { fields: [], metadata: {} } };
  let found: { commit: ShardCommitOutcome | 'waiting'; waitingFor: number[] };
  try {
    written = await writeShardParts(job, out.output, out.plan, out.area, options);
    const record = await recordParts(out.area, out.plan, shard, written);
    found = await tryCommit(job, out, record, shard, status, signal);
  } catch (error) {
    // A copy of this shard (a launcher started it twice) committed the export and removed the
    // shared area under this one: the work is done.
    if (signal.aborted || !(await committedByThisRun(out, shard, signal))) throw error;
    found = { commit: 'committed-by-another', waitingFor: [] };
  }
  // What this shard wrote after the winner tidied up (a record, a journal) goes too: nothing needs it.
  if (found.commit === 'committed-by-another') await out.area.remove(signal).catch(() => undefined);
  options.events?.onInfo?.(found.commit === 'waiting' ? 'shard done, others still writing' : 'export committed', {
    job: job.name,
    shard: shard.index,
    shards: shard.count,
    output: out.destination.url,
    commit: found.commit,
    ...(found.waitingFor.length > 0 ? { waiting_for: found.waitingFor } : {}),
  });
  return {
    url: out.destination.url,
    format: out.output.format.type,
    parts: written.parts.length,
    resumedParts: written.resumed,
    rows: written.parts.reduce((n, p) => n + p.rows, 0),
    bytes: written.parts.reduce((n, p) => n + p.bytes, 0),
    ...found,
  };
}

/** Sharding needs parts that are a function of row offsets, and a destination with a shared area: the split rule says. */
function checkShardable(job: Job, sessions: OutputSessions): void {
  const issues = whyNotSharded(job, sessions.all.map((s) => s.traits));
  if (issues.length > 0) throw new ConfigError(`job ${job.name}: cannot run sharded`, issues);
}

/** A shard of a run whose export is committed (the manifest names the run id) has nothing to do. */
async function refuseIfCommitted(job: Job, session: OutputSession, shard: ShardSpec, signal: AbortSignal): Promise<void> {
  const commit = await committedOutput(session, signal);
  const { url: destinationUrl, index: i } = session;
  if (commit?.shards?.runId !== shard.runId) return;
  throw new ShardCommittedError(
    `job ${job.name}, shard ${shard.index} of ${shard.count} (${shard.from}), run id ${shard.runId}: the export to ${destinationUrl} (outputs[${i}]) is committed already ` +
      `(execution ${commit.executionId}, ${commit.rows} rows, ${commit.shards.count} shards); this shard wrote nothing. ` +
      'To export again, start a new run with a new run id (--run-id / SLUICE_RUN_ID)',
  );
}
