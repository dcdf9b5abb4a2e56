import type { Job } from '../../config/jobSchema.ts';
import type { Commit } from '../../export/commit.ts';
import type { Destination, SharedArea } from '../../export/destination.ts';
import { ManifestInvalidError, RowCountMismatchError } from '../../export/errors.ts';
import { buildManifest, type Manifest } from '../../export/manifest.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import { commitShards, sameExport, type ShardCommitOutcome } from '../../export/shardCommit.ts';
import { PreconditionFailedError } from '../../kit/index.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import { ShardMismatchError } from '../errors.ts';
import type { OutputSession } from '../output/outputSession.ts';
import { sourceInfo } from '../run/jobSource.ts';
import { decode, encode, type Plan, RECORD_PREFIX, recordName, recordSchema, type ShardRecord, type ShardSpec } from './plan.ts';
import type { Written } from './shardParts.ts';
import { shardCommitSpan } from '../../telemetry/shardSpans.ts';

/**
 * The end of a sharded run, per output: each shard records the parts it wrote create-only, and the
 * shard that finds every record present commits one manifest, conditionally; a shard that lost the
 * race, or a copy of a shard, finds the export committed.
 */

/** One output of this shard: where it goes, its shared area, the plan every shard follows. */
export interface ShardOutput {
  readonly index: number;
  readonly session: OutputSession;
  readonly output: ResolvedOutput;
  readonly destination: Destination;
  readonly area: SharedArea;
  readonly plan: Plan;
}

/** The committed output (read once, or `now`: again), as its commit reads it; undefined when none (or unreadable: the commit says what is wrong). */
export async function committedOutput(session: OutputSession, signal: AbortSignal, now = false): Promise<Commit | undefined> {
  return (now ? session.readNow(signal) : session.committed(signal)).catch((error: unknown) => {
    if (error instanceof ManifestInvalidError) return undefined;
    throw error;
  });
}

/** Whether the output holds this run's export (its execution, its options, its run id). */
export async function committedByThisRun(out: Pick<ShardOutput, 'session' | 'plan'>, shard: ShardSpec, signal: AbortSignal): Promise<boolean> {
  const commit = await committedOutput(out.session, signal, true).catch(() => undefined);
  return commit !== undefined && commit.executionId === out.plan.execution_id && commit.fingerprint === out.plan.output.fingerprint && commit.shards?.runId === shard.runId;
}

/** This shard's record, created once; a retried shard that recorded already finds the same parts. */
export async function recordParts(area: SharedArea, plan: Plan, shard: ShardSpec, written: Written): Promise<ShardRecord> {
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
export async function tryCommit(
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
    outcome = await shardCommitSpan({ files: manifest.files.length, rows: manifest.total_rows }, () => commitShards(destination, area, manifest, plan.replaces?.version ?? null, output.commit, signal));
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

export async function committedElsewhere(out: ShardOutput, signal: AbortSignal): Promise<ShardCommitOutcome> {
  const now = await out.session.readNow(signal);
  if (now !== undefined && now.executionId === out.plan.execution_id && now.fingerprint === out.plan.output.fingerprint) return 'committed-by-another';
  throw new ShardMismatchError(`the records of the run at ${out.destination.url} disappeared before it was committed (another run removed them?); start a new run with a new run id`);
}
