import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionExpiredError, NotFoundError } from '../../client/errors.ts';
import type { ServiceClient } from '../../client/service-client.ts';
import { ConfigError } from '../../errors.ts';
import type { Job } from '../../config/jobSchema.ts';
import { RowCountMismatchError } from '../../export/errors.ts';
import { buildManifest, type Manifest } from '../../export/manifest.ts';
import type { Commit } from '../../export/commit.ts';
import { type OutputSession, OutputSessions } from '../output/outputSession.ts';
import { whyNotSharded } from '../output/splitRule.ts';
import { ManifestInvalidError } from '../../export/errors.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { Workers } from '../../export/partPlan.ts';
import { partFileName } from '../../export/partFileName.ts';
import { commitShards, sameExport, type ShardCommitOutcome } from '../../export/shardCommit.ts';
import { PreconditionFailedError } from '../../kit/index.ts';
import type { Destination, SharedArea } from '../../export/destination.ts';
import { stream } from '../../pipeline/stream.ts';
import { type ExecutionStatus, holdsResult } from '../../protocol/index.ts';
import { checkBytes, checkCredits, executionCost } from '../run/budget.ts';
import { RunContract } from '../contracts/contract.ts';
import { RunDrift, watchesDrift } from '../drift/drift.ts';
import { ShardCommittedError, ShardMismatchError } from '../errors.ts';
import { sourceInfo } from '../run/jobSource.ts';
import { readOptions } from '../run/readOptions.ts';
import { decideSource } from '../run/sourceDecision.ts';
import {
  areaId,
  decode,
  encode,
  jobFingerprint,
  type Plan,
  EXECUTION_NAME,
  executionRecordSchema,
  PLAN_NAME,
  planParts,
  planSchema,
  RECORD_PREFIX,
  recordName,
  recordSchema,
  rowsPerPart,
  type ShardRecord,
  type ShardSpec,
} from './plan.ts';
import { type Written, writeShardParts } from './shardParts.ts';

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
  /** Threads writing this shard's parts side by side; overrides the job's `workers` (`--workers`). */
  readonly workers?: Workers;
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

const PLAN_POLL_MS = 200;
const DEFAULT_PLAN_WAIT_MS = 30 * 60_000;

/** One output of this shard: where it goes, its shared area, the plan every shard follows. */
interface ShardOutput {
  readonly index: number;
  readonly session: OutputSession;
  readonly output: ResolvedOutput;
  readonly destination: Destination;
  readonly area: SharedArea;
  readonly plan: Plan;
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
      outputs.push(await exportOutput(job, options, { index, session, output: session.output, destination: session.destination, area: areas[index]!, plan: plans[index]! }, status));
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

/** The committed output (read once, or `now`: again), as its commit reads it; undefined when none (or unreadable: the commit says what is wrong). */
async function committedOutput(session: OutputSession, signal: AbortSignal, now = false): Promise<Commit | undefined> {
  return (now ? session.readNow(signal) : session.committed(signal)).catch((error: unknown) => {
    if (error instanceof ManifestInvalidError) return undefined;
    throw error;
  });
}

/** Whether the output holds this run's export (its execution, its options, its run id). */
async function committedByThisRun(out: Pick<ShardOutput, 'session' | 'plan'>, shard: ShardSpec, signal: AbortSignal): Promise<boolean> {
  const commit = await committedOutput(out.session, signal, true).catch(() => undefined);
  return commit !== undefined && commit.executionId === out.plan.execution_id && commit.fingerprint === out.plan.output.fingerprint && commit.shards?.runId === shard.runId;
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
  // The contract's columns and row count, from the metadata: shards have no result.filters, so the count is known here.
  if (job.expect !== undefined) new RunContract(job, options.events?.onInfo).beforeFetch(ready.status);
  // Schema drift too (evolve and fail; freeze is refused, each shard writes its own rows).
  if (watchesDrift(job)) await new RunDrift(job, (d) => options.events?.onInfo?.('schema drift', { job: job.name, ...d })).beforeFetch(ready.status, (i) => sessions.at(i).committed(signal));
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
async function makePlans(job: Job, options: RunShardOptions, sessions: OutputSessions, areas: SharedArea[]): Promise<{ plans: Plan[]; credits: number }> {
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

async function waitForPlan(area: SharedArea, job: Job, i: number, options: RunShardOptions): Promise<Plan> {
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
function checkPlan(job: Job, i: number, plan: Plan, shard: ShardSpec, area: SharedArea): Plan {
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

/** This shard's record, created once; a retried shard that recorded already finds the same parts. */
async function recordParts(area: SharedArea, plan: Plan, shard: ShardSpec, written: Written): Promise<ShardRecord> {
  const record: ShardRecord = { version: 1, shard: shard.index, shard_count: shard.count, execution_id: plan.execution_id, files: written.parts, schema: written.schema };
  const name = recordName(shard.index, shard.count);
  try {
    await area.create(name, encode(record));
    return record;
  } catch (error) {
    if (!(error instanceof PreconditionFailedError)) throw error;
    const body = await area.read(name);
    // Gone again: the commit removed it (the caller finds the export committed).
    if (body === undefined) return record;
    const existing = decode(recordSchema, body, `${area.url}/${name}`);
    const same = existing.files.length === record.files.length && existing.files.every((f, k) => f.path === record.files[k]!.path && f.sha256 === record.files[k]!.sha256);
    if (!same) throw new ShardMismatchError(`shard ${shard.index} of ${shard.count}, run id ${shard.runId}: ${area.url}/${name} records other parts than this attempt wrote; start a new run with a new run id`);
    return existing;
  }
}

/** Commits when every shard has recorded its parts (any shard may be the one that sees that). */
async function tryCommit(
  job: Job,
  out: ShardOutput,
  own: ShardRecord,
  shard: ShardSpec,
  status: ExecutionStatus,
  signal: AbortSignal,
): Promise<{ commit: ShardCommitOutcome | 'waiting'; waitingFor: number[] }> {
  const { area, plan, destination, output } = out;
  const names = new Set(await area.list(RECORD_PREFIX, signal));
  const waitingFor = Array.from({ length: shard.count }, (_, s) => s).filter((s) => !names.has(recordName(s, shard.count)));
  if (waitingFor.length > 0) {
    // Records gone: a committer (a copy of this shard, started twice) may have published and removed them.
    if (await committedByThisRun(out, shard, signal)) return { commit: 'committed-by-another', waitingFor: [] };
    return { commit: 'waiting', waitingFor };
  }
  const records = await readRecords(out, own, shard, signal);
  // Gone: the winner of a commit removed the area; the manifest says whether it was this export.
  if (records === undefined) return { commit: await committedElsewhere(out, signal), waitingFor: [] };
  const manifest = shardManifest(job, out, records, shard, status);
  let outcome: ShardCommitOutcome;
  try {
    outcome = await commitShards(destination, area, manifest, plan.replaces?.version ?? null, output.commit, signal);
  } catch (error) {
    // A committer that lost the race can fail on the way (the winner removed the area under it).
    const now = await out.session.readNow(signal).catch(() => undefined);
    if (now !== undefined && sameExport(now, manifest)) return { commit: 'committed-by-another', waitingFor: [] };
    throw error;
  }
  // Only the winner tidies up: the plan, the records and journals go; the parts are the output now.
  if (outcome === 'committed') await area.remove(signal);
  return { commit: outcome, waitingFor: [] };
}

/** Every shard's record (this shard's own as it made it); undefined when one is gone again. */
async function readRecords(out: ShardOutput, own: ShardRecord, shard: ShardSpec, signal: AbortSignal): Promise<ShardRecord[] | undefined> {
  const records: ShardRecord[] = [];
  for (let s = 0; s < shard.count; s++) {
    if (s === shard.index) {
      records.push(own);
      continue;
    }
    const body = await out.area.read(recordName(s, shard.count), signal);
    if (body === undefined) return undefined;
    records.push(decode(recordSchema, body, `${out.area.url}/${recordName(s, shard.count)}`));
  }
  return records;
}

/** The manifest of the shards' parts, once they add up to the plan. */
function shardManifest(job: Job, out: ShardOutput, records: readonly ShardRecord[], shard: ShardSpec, status: ExecutionStatus): Manifest {
  const { plan, area, output } = out;
  const files = records.flatMap((r) => r.files).sort((a, b) => a.first_row - b.first_row);
  const planned = plan.parts.map((p) => p.path).join('\n');
  if (files.map((f) => f.path).join('\n') !== planned || records.some((r) => r.execution_id !== plan.execution_id)) {
    throw new ShardMismatchError(`job ${job.name}, run id ${shard.runId}: the shards' records at ${area.url} do not add up to the plan's ${plan.parts.length} parts; start a new run with a new run id`);
  }
  const rows = files.reduce((n, f) => n + f.rows, 0);
  if (rows !== plan.total_rows) throw new RowCountMismatchError(plan.execution_id, plan.total_rows, rows);
  const meta = {
    executionId: plan.execution_id,
    queryId: status.query_id,
    parameters: sourceInfo(job).parameters,
    endedAt: status.execution_ended_at,
    fingerprint: plan.output.fingerprint,
    job: job.name,
  };
  const entries = files.map((f) => ({ path: f.path, rows: f.rows, bytes: f.bytes, sha256: f.sha256, partition: {} }));
  return buildManifest(meta, { mode: 'replace', format: output.format.type, partitionBy: [] }, entries, records[0]!.schema as Manifest['schema'], { run_id: shard.runId, count: shard.count });
}

async function committedElsewhere(out: ShardOutput, signal: AbortSignal): Promise<ShardCommitOutcome> {
  const now = await out.session.readNow(signal);
  if (now !== undefined && now.executionId === out.plan.execution_id && now.fingerprint === out.plan.output.fingerprint) return 'committed-by-another';
  throw new ShardMismatchError(`the records of the run at ${out.destination.url} disappeared before it was committed (another run removed them?); start a new run with a new run id`);
}
