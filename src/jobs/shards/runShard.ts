import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordBatch, Schema } from 'apache-arrow';
import { ExecutionExpiredError, NotFoundError } from '../../client/errors.ts';
import type { ServiceClient } from '../../client/service-client.ts';
import { ConfigError, type ConfigIssue } from '../../errors.ts';
import type { Job } from '../../config/jobSchema.ts';
import { RowCountMismatchError } from '../../export/errors.ts';
import { checkOutputs } from '../../export/checkOutputs.ts';
import { describeSchema, type Manifest } from '../../export/manifest.ts';
import type { Commit } from '../../export/commit.ts';
import { ManifestInvalidError } from '../../export/errors.ts';
import { manifestCommit } from '../../export/manifestCommit.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import { PartFile } from '../../export/partFile.ts';
import { knownWire, partFormatOf, partThreadCount, type Workers } from '../../export/partPlan.ts';
import { startPartThreads, writeParts as writePartsInThreads } from '../../export/partWorkers.ts';
import { partFileName } from '../../export/partFileName.ts';
import { commitShards, sameExport, type ShardCommitOutcome } from '../../export/shardCommit.ts';
import { PreconditionFailedError } from '../../kit/index.ts';
import { type Destination, type SharedArea } from '../../export/destination.ts';
import { stream, type StreamOptions } from '../../pipeline/stream.ts';
import { holdsResult } from '../../protocol/index.ts';
import { checkBytes, creditsAllowed, TIER_COST } from '../budget.ts';
import { outputFingerprint } from '../committedOutput.ts';
import { BudgetExceededError, ShardCommittedError, ShardMismatchError } from '../errors.ts';
import { jobSource } from '../jobSource.ts';
import {
  areaId,
  decode,
  encode,
  jobFingerprint,
  journalName,
  journalSchema,
  type Plan,
  EXECUTION_NAME,
  executionRecordSchema,
  PLAN_NAME,
  planParts,
  planSchema,
  RECORD_PREFIX,
  recordName,
  recordSchema,
  type ShardRecord,
  type ShardSpec,
  type WrittenPart,
} from './plan.ts';
import { openDestination } from '../../export/storage/openDestination.ts';

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

/**
 * One shard of a sharded run of `job`. Shard 0 makes the plan: it starts (or reuses) the execution
 * once, splits the result into parts with fixed row ranges and writes the plan create-only into
 * each output's shared area; the other shards wait for it. Every shard then writes only its parts
 * (keeping those its journal lists from a killed attempt), records them create-only, and the shard
 * that finds every record present commits: one manifest, published conditionally.
 */
export async function runShard(job: Job, options: RunShardOptions): Promise<ShardSummary> {
  const began = performance.now();
  const { shard, signal } = options;
  checkShardable(job);
  // Before anything is started or written: a destination that cannot work costs nothing.
  await checkOutputs(job.outputs, signal);
  const destinations = job.outputs.map((o) => openDestination(o));
  try {
    const areas = destinations.map((d, i) => d.shared!(areaId(shard.runId, job.name, i)));
    for (const [i, destination] of destinations.entries()) await refuseIfCommitted(job, i, destination, shard, signal);

    let made: { plans: Plan[]; credits: number } | undefined;
    // Shard 0 plans while any output lacks a plan (a kill can come between two of them).
    if (shard.index === 0 && (await Promise.all(areas.map((a) => a.read(PLAN_NAME, signal)))).some((p) => p === undefined)) made = await makePlans(job, options, destinations, areas);
    const plans: Plan[] = [];
    for (const [i, area] of areas.entries()) plans.push(checkPlan(job, i, await waitForPlan(area, job, i, options), shard, area));
    const executionId = plans[0]!.execution_id;
    const status = await options.client.getStatus(executionId, { signal }).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
    if (status === undefined || !holdsResult(status)) {
      throw new ExecutionExpiredError(
        `the plan of run ${shard.runId} (job ${job.name}) reads execution ${executionId}, which ${status === undefined ? 'the service no longer knows' : `is ${status.state.replace('QUERY_STATE_', '').toLowerCase()}`} and has no result to read; ` +
          `nothing was written. Start a new run with a new run id (--run-id / SLUICE_RUN_ID) so that a new plan is made`,
        { executionId },
      );
    }

    const outputs: ShardOutputSummary[] = [];
    for (const [i, output] of job.outputs.entries()) {
      const plan = plans[i]!;
      let written: Written = { parts: [], resumed: 0, schema: { fields: [], metadata: {} } };
      let found: { commit: ShardCommitOutcome | 'waiting'; waitingFor: number[] };
      try {
        written = await writeParts(job, output, plan, areas[i]!, options);
        const record = await recordParts(areas[i]!, plan, shard, written);
        found = await tryCommit(job, output, destinations[i]!, areas[i]!, plan, record, shard, status, signal);
      } catch (error) {
        // A copy of this shard (a launcher started it twice) committed the export and removed the
        // shared area under this one: the work is done.
        if (signal.aborted || !(await committedByThisRun(destinations[i]!, plan, shard, signal))) throw error;
        found = { commit: 'committed-by-another', waitingFor: [] };
      }
      // What this shard wrote after the winner tidied up (a record, a journal) goes too: nothing needs it.
      if (found.commit === 'committed-by-another') await areas[i]!.remove(signal).catch(() => undefined);
      options.events?.onInfo?.(found.commit === 'waiting' ? 'shard done, others still writing' : 'export committed', {
        job: job.name,
        shard: shard.index,
        shards: shard.count,
        output: destinations[i]!.url,
        commit: found.commit,
        ...(found.waitingFor.length > 0 ? { waiting_for: found.waitingFor } : {}),
      });
      outputs.push({
        url: destinations[i]!.url,
        format: output.format.type,
        parts: written.parts.length,
        resumedParts: written.resumed,
        rows: written.parts.reduce((n, p) => n + p.rows, 0),
        bytes: written.parts.reduce((n, p) => n + p.bytes, 0),
        ...found,
      });
    }
    return {
      job: job.name,
      shard: shard.index,
      shards: shard.count,
      runId: shard.runId,
      executionId,
      startedExecution: made?.plans[0]?.started_execution ?? false,
      credits: made?.credits ?? 0,
      outputs,
      durationMs: performance.now() - began,
    };
  } finally {
    await Promise.allSettled(destinations.map((d) => d.close()));
  }
}

/** Sharding needs parts that are a function of row offsets, and a destination with a shared area. */
function checkShardable(job: Job): void {
  const issues: ConfigIssue[] = [];
  if (job.result?.filters !== undefined) {
    issues.push({ path: 'result.filters', message: 'a sharded run splits the result by row offsets, and the service does not count filtered rows up front: filter in the SQL instead', value: job.result.filters });
  }
  if (job.incremental !== undefined) {
    issues.push({ path: 'incremental', message: 'a sharded run replaces its outputs with one result: run incremental jobs without shards', value: job.incremental.cursor });
  }
  job.outputs.forEach((output, i) => {
    if (output.mode === 'append') issues.push({ path: `outputs[${i}].mode`, message: 'a sharded run replaces the output: drop mode: append or run without shards', value: output.mode });
    if (output.table !== 'manifest') issues.push({ path: `outputs[${i}].table`, message: 'a sharded run commits a manifest: run table outputs without shards', value: output.table });
    if (output.partitionBy.length > 0) issues.push({ path: `outputs[${i}].partition_by`, message: 'a sharded run writes parts by row ranges: drop partition_by or run without shards', value: output.partitionBy });
    if (Number.isFinite(output.maxBytesPerFile)) issues.push({ path: `outputs[${i}].max_bytes_per_file`, message: 'a sharded run rolls parts by rows: use max_rows_per_file', value: output.maxBytesPerFile });
    const probe = openDestination(output);
    if (!probe.multiFile || probe.shared === undefined) issues.push({ path: `outputs[${i}].path`, message: `${output.sink.type} destinations cannot be sharded (use a local or shared folder, or S3)`, value: output.path });
    void probe.close();
  });
  if (issues.length > 0) throw new ConfigError(`job ${job.name}: cannot run sharded`, issues);
}

/** The committed output at `destination`, as the manifest commit reads it; undefined when none (or unreadable: the commit says what is wrong). */
async function committedOutput(destination: Destination, signal: AbortSignal): Promise<Commit | undefined> {
  return manifestCommit.read(destination, signal).catch((error: unknown) => {
    if (error instanceof ManifestInvalidError) return undefined;
    throw error;
  });
}

/** Whether the output holds this run's export (its execution, its options, its run id). */
async function committedByThisRun(destination: Destination, plan: Plan, shard: ShardSpec, signal: AbortSignal): Promise<boolean> {
  const commit = await committedOutput(destination, signal).catch(() => undefined);
  return commit !== undefined && commit.executionId === plan.execution_id && commit.fingerprint === plan.output.fingerprint && commit.shards?.runId === shard.runId;
}

/** A shard of a run whose export is committed (the manifest names the run id) has nothing to do. */
async function refuseIfCommitted(job: Job, i: number, destination: Destination, shard: ShardSpec, signal: AbortSignal): Promise<void> {
  const commit = await committedOutput(destination, signal);
  if (commit?.shards?.runId !== shard.runId) return;
  throw new ShardCommittedError(
    `job ${job.name}, shard ${shard.index} of ${shard.count} (${shard.from}), run id ${shard.runId}: the export to ${destination.url} (outputs[${i}]) is committed already ` +
      `(execution ${commit.executionId}, ${commit.rows} rows, ${commit.shards.count} shards); this shard wrote nothing. ` +
      'To export again, start a new run with a new run id (--run-id / SLUICE_RUN_ID)',
  );
}

/** Shard 0: the execution, started or reused once, and one plan per output, written create-only. */
async function makePlans(job: Job, options: RunShardOptions, destinations: Destination[], areas: SharedArea[]): Promise<{ plans: Plan[]; credits: number }> {
  const { shard, signal } = options;
  const source = jobSource(job);
  const performance = job.performance ?? 'medium';
  const known = await areas[0]!.read(EXECUTION_NAME, signal);
  const earlier = known === undefined ? undefined : decode(executionRecordSchema, known, `${areas[0]!.url}/${EXECUTION_NAME}`);
  if (earlier === undefined && !('latest' in job.source) && !creditsAllowed(job, 0, TIER_COST[performance])) {
    throw new BudgetExceededError(job.name, 'max_credits', `an execution costs ${TIER_COST[performance]} credits (${performance} tier), over max_credits ${job.budget?.max_credits}; nothing was started`);
  }
  // The execution is recorded create-only as soon as it is known, before waiting for it: a shard 0
  // killed while the query runs finds it again when started again, instead of starting (and paying
  // for) a second one.
  let recording: Promise<void> | undefined;
  const result = stream(options.client, earlier === undefined ? source : { executionId: earlier.execution_id, started: earlier.started }, {
    signal,
    // Never cancel on a stop: a restarted shard 0 picks the execution up again.
    cancelOnAbort: false,
    allowPartialResults: job.result?.allow_partial ?? false,
    onExecution: (executionId, { started }) => {
      if (earlier !== undefined) return;
      recording = areas[0]!.create(EXECUTION_NAME, encode({ execution_id: executionId, started }), signal).catch((error: unknown) => {
        if (!(error instanceof PreconditionFailedError)) throw error;
      });
    },
  });
  const ready = await result.ready().finally(() => recording?.catch(() => undefined));
  await recording;
  if (earlier !== undefined) options.events?.onInfo?.('execution of an earlier attempt picked up', { job: job.name, execution_id: earlier.execution_id, run_id: shard.runId });
  options.events?.onInfo?.(ready.started ? 'execution started' : 'stored result reused', { job: job.name, execution_id: ready.executionId, run_id: shard.runId });
  // Charged to the attempt that started it: an attempt that picked it up pays nothing.
  const credits = ready.started && earlier === undefined ? (ready.status.execution_cost_credits ?? TIER_COST[performance]) : 0;
  const overBytes = checkBytes(job, ready.status);
  if (overBytes) throw overBytes;
  const total = ready.status.result_metadata?.total_row_count ?? (await result.info()).totalRows;
  const plans: Plan[] = [];
  for (const [i, output] of job.outputs.entries()) {
    const previous = await manifestCommit.read(destinations[i]!, signal);
    const extension = output.format.create(output.formatConfig).extension;
    // Re-exporting the execution the output holds: other names, so no committed part is overwritten.
    const stem = previous?.executionId === ready.executionId ? `${ready.executionId}-${areaId(shard.runId, job.name, i).slice(0, 8)}` : ready.executionId;
    const rowsPerPart = Number.isFinite(output.maxRowsPerFile) ? output.maxRowsPerFile : Math.max(1, Math.ceil(total / shard.count));
    const plan: Plan = {
      version: 1,
      run_id: shard.runId,
      job: job.name,
      job_fingerprint: jobFingerprint(job, i),
      shard_count: shard.count,
      execution_id: ready.executionId,
      started_execution: ready.started && earlier === undefined,
      credits,
      created_at: new Date().toISOString(),
      total_rows: total,
      rows_per_part: rowsPerPart,
      output: { url: destinations[i]!.url, fingerprint: outputFingerprint(job, output) },
      replaces: previous === undefined ? null : { execution_id: previous.executionId, version: previous.version ?? null },
      parts: planParts(total, rowsPerPart, shard.count, (k) => partFileName(stem, k, extension)),
    };
    try {
      await areas[i]!.create(PLAN_NAME, encode(plan), signal);
    } catch (error) {
      // Another shard 0 (a duplicate pod) planned first: its plan is the one every shard follows.
      if (!(error instanceof PreconditionFailedError)) throw error;
    }
    plans.push(plan);
  }
  options.events?.onInfo?.('plan written', { job: job.name, run_id: shard.runId, execution_id: ready.executionId, total_rows: total, parts: plans[0]!.parts.length, shards: shard.count });
  return { plans, credits };
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

interface Written {
  /** Every part of this shard, in part order. */
  readonly parts: WrittenPart[];
  readonly resumed: number;
  readonly schema: Manifest['schema'];
}

/** Writes this shard's parts, keeping those a killed attempt completed (its journal, sizes checked). */
async function writeParts(job: Job, output: ResolvedOutput, plan: Plan, area: SharedArea, options: RunShardOptions): Promise<Written> {
  const { shard, signal } = options;
  const mine = plan.parts.filter((p) => p.shard === shard.index);
  const journalBody = await area.read(journalName(shard.index), signal);
  const journal = journalBody === undefined ? undefined : safeDecode(journalBody);
  // Parts written by threads complete in any order, so any journaled part can be kept; one thread
  // reads its parts in one pass from the first missing row, so it keeps only a leading run of them.
  // auto: as many as this shard's rows pay for (see `partThreadCount`).
  const threads = Math.min(partThreadCount(options.workers ?? job.workers, mine.reduce((n, p) => n + p.rows, 0), plan.rows_per_part, knownWire(job.wire)), mine.length);
  const kept: WrittenPart[] = [];
  if (journal !== undefined && journal.execution_id === plan.execution_id) {
    for (const part of mine) {
      const entry = journal.parts.find((p) => p.path === part.path && p.first_row === part.first_row && p.rows === part.rows);
      if (entry !== undefined && (await area.size(part.path, signal)) === entry.bytes) kept.push(entry);
      else if (threads === 1) break;
    }
  }
  const todo = mine.filter((part) => !kept.some((k) => k.path === part.path));
  if (kept.length > 0) options.events?.onInfo?.('parts kept from a killed attempt', { job: job.name, shard: shard.index, parts: kept.length });
  const read: StreamOptions = {
    signal,
    ...(job.concurrency === undefined ? {} : { concurrency: job.concurrency }),
    ...(job.wire === undefined ? {} : { wire: job.wire }),
    ...(job.result?.columns === undefined ? {} : { columns: job.result.columns }),
    ...(job.result?.sort_by === undefined ? {} : { sortBy: job.result.sort_by }),
    ...(todo.length > 0 && todo[0]!.first_row > 0 ? { startOffset: Math.min(todo[0]!.first_row, Math.max(0, plan.total_rows - 1)) } : {}),
  };
  const result = stream(options.client, { executionId: plan.execution_id }, read);
  const parallel = threads > 1 && todo.length > 1;
  // The part threads load their code while the first page is read.
  if (parallel && output.format.module !== undefined) startPartThreads(Math.min(threads, todo.length), partFormatOf(output));
  const schema = await result.schema();
  const parts = [...kept];
  const journaled = { version: 1 as const, execution_id: plan.execution_id, parts };
  // Shards refuse result filters, so their rows always have offsets and a range reader.
  const reader = parallel ? await result.rangeReader() : undefined;
  if (reader !== undefined) {
    // Side by side, each part read, decoded and encoded by a part thread, stored in the shared area
    // as the serial path stores it; the journal lists parts as they complete, in any order.
    const format = output.format.create(output.formatConfig);
    options.events?.onInfo?.('writing parts side by side', { job: job.name, shard: shard.index, threads, parts: todo.length });
    await writePartsInThreads({
      threads,
      read: reader,
      schema,
      format: { ...partFormatOf(output), contentType: format.contentType },
      parts: todo.map((p) => ({ range: { index: Math.round(p.first_row / plan.rows_per_part), firstRow: p.first_row, rows: p.rows }, name: p.path })),
      tx: area,
      signal,
      onPart: async (part) => {
        parts.push({ path: part.name, first_row: part.range.firstRow, rows: part.range.rows, bytes: part.bytes, sha256: part.sha256 });
        parts.sort((a, b) => a.first_row - b.first_row);
        await area.save(journalName(shard.index), encode(journaled), signal);
        options.events?.onInfo?.('part written', { job: job.name, shard: shard.index, part: part.name, rows: part.range.rows, bytes: part.bytes });
      },
    });
  } else if (todo.length > 0) {
    // One thread: the parts still to write follow each other (a leading run was kept, or one part is left).
    const format = output.format.create(output.formatConfig);
    const batches = result.batches()[Symbol.asyncIterator]();
    let pending: RecordBatch | undefined;
    try {
      for (const part of todo) {
        const file = new PartFile(area, format, schema, part.path, {}, signal, part.first_row);
        try {
          while (file.rows < part.rows) {
            pending ??= (await batches.next()).value as RecordBatch | undefined;
            if (pending === undefined) break;
            const room = part.rows - file.rows;
            const piece = pending.numRows <= room ? pending : pending.slice(0, room);
            pending = piece === pending ? undefined : pending.slice(room);
            await file.push(piece);
          }
        } catch (error) {
          await file.fail(error);
          throw error;
        }
        const entry = await file.finish();
        if (entry.rows !== part.rows) throw new RowCountMismatchError(plan.execution_id, part.rows, entry.rows);
        parts.push({ path: entry.path, first_row: part.first_row, rows: entry.rows, bytes: entry.bytes, sha256: entry.sha256 });
        await area.save(journalName(shard.index), encode(journaled), signal);
        options.events?.onInfo?.('part written', { job: job.name, shard: shard.index, part: entry.path, rows: entry.rows, bytes: entry.bytes });
      }
    } finally {
      await batches.return?.(undefined);
    }
  }
  return { parts, resumed: kept.length, schema: describeSchema(schema as Schema) };
}

function safeDecode(body: Uint8Array) {
  try {
    return decode(journalSchema, body, 'journal');
  } catch {
    return undefined; // unreadable: the parts are written again
  }
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
  output: ResolvedOutput,
  destination: Destination,
  area: SharedArea,
  plan: Plan,
  own: ShardRecord,
  shard: ShardSpec,
  status: { execution_ended_at?: string | undefined; query_id?: number | undefined },
  signal: AbortSignal,
): Promise<{ commit: ShardCommitOutcome | 'waiting'; waitingFor: number[] }> {
  const names = new Set(await area.list(RECORD_PREFIX, signal));
  const waitingFor = Array.from({ length: shard.count }, (_, s) => s).filter((s) => !names.has(recordName(s, shard.count)));
  if (waitingFor.length > 0) {
    // Records gone: a committer (a copy of this shard, started twice) may have published and removed them.
    if (await committedByThisRun(destination, plan, shard, signal)) return { commit: 'committed-by-another', waitingFor: [] };
    return { commit: 'waiting', waitingFor };
  }
  const records: ShardRecord[] = [];
  for (let s = 0; s < shard.count; s++) {
    if (s === shard.index) {
      records.push(own);
      continue;
    }
    const body = await area.read(recordName(s, shard.count), signal);
    // Gone: the winner of a commit removed the area; the manifest says whether it was this export.
    if (body === undefined) return { commit: await committedElsewhere(destination, plan, signal), waitingFor: [] };
    records.push(decode(recordSchema, body, `${area.url}/${recordName(s, shard.count)}`));
  }
  const files = records.flatMap((r) => r.files).sort((a, b) => a.first_row - b.first_row);
  const planned = plan.parts.map((p) => p.path).join('\n');
  if (files.map((f) => f.path).join('\n') !== planned || records.some((r) => r.execution_id !== plan.execution_id)) {
    throw new ShardMismatchError(`job ${job.name}, run id ${shard.runId}: the shards' records at ${area.url} do not add up to the plan's ${plan.parts.length} parts; start a new run with a new run id`);
  }
  const rows = files.reduce((n, f) => n + f.rows, 0);
  if (rows !== plan.total_rows) throw new RowCountMismatchError(plan.execution_id, plan.total_rows, rows);
  const source = job.source;
  const parameters = 'query_id' in source ? source.parameters : 'latest' in source ? source.latest.parameters : undefined;
  const manifest: Manifest = {
    version: 1,
    execution_id: plan.execution_id,
    query_id: status.query_id ?? null,
    parameters: parameters ?? null,
    ended_at: status.execution_ended_at ?? null,
    fingerprint: plan.output.fingerprint,
    written_at: new Date().toISOString(),
    job: job.name,
    mode: 'replace',
    incremental: null,
    format: output.format.type,
    partition_by: [],
    total_rows: rows,
    total_bytes: files.reduce((n, f) => n + f.bytes, 0),
    files: files.map((f) => ({ path: f.path, rows: f.rows, bytes: f.bytes, sha256: f.sha256, partition: {} })),
    schema: records[0]!.schema as Manifest['schema'],
    shards: { run_id: shard.runId, count: shard.count },
  };
  let outcome: ShardCommitOutcome;
  try {
    outcome = await commitShards(destination, area, manifest, plan.replaces?.version ?? null, output.commit, signal);
  } catch (error) {
    // A committer that lost the race can fail on the way (the winner removed the area under it).
    const now = await manifestCommit.read(destination, signal).catch(() => undefined);
    if (now !== undefined && sameExport(now, manifest)) return { commit: 'committed-by-another', waitingFor: [] };
    throw error;
  }
  // Only the winner tidies up: the plan, the records and journals go; the parts are the output now.
  if (outcome === 'committed') await area.remove(signal);
  return { commit: outcome, waitingFor: [] };
}

async function committedElsewhere(destination: Destination, plan: Plan, signal: AbortSignal): Promise<ShardCommitOutcome> {
  const now = await manifestCommit.read(destination, signal);
  if (now !== undefined && now.executionId === plan.execution_id && now.fingerprint === plan.output.fingerprint) return 'committed-by-another';
  throw new ShardMismatchError(`the records of the run at ${destination.url} disappeared before it was committed (another run removed them?); start a new run with a new run id`);
}
