import { findLatest } from '../../client/execution.ts';
import { NotFoundError } from '../../client/errors.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import type { StreamSource } from '../../pipeline/source.ts';
import { type ExecutionStatus, holdsResult, isTerminal } from '../../protocol/index.ts';
import { type CursorArgument, jobSource, sourceInfo } from './jobSource.ts';
import type { JobRunState, ResumeDecision } from './runState.ts';

/**
 * What a run reads, decided before anything is started: the one decision a run acts on and a plan
 * reports. `execute`: a new execution (charged); `reuse`: one that exists (a fresh stored result of
 * a `latest` source, or `--execution`); `resume`: the execution an interrupted run left.
 */
export interface SourceDecision {
  readonly action: 'execute' | 'reuse' | 'resume';
  /** What the pipeline reads. */
  readonly source: StreamSource;
  /** Why this action: the source kind, the stored result's age, the interrupted run. */
  readonly reason: string;
  /** The execution read, when it exists already. */
  readonly executionId: string | undefined;
  /** Rows and bytes of its result, when it exists already. */
  readonly rows: number | undefined;
  readonly bytes: number | undefined;
  /** An interrupted run was found: whether it is resumed, and why not (undefined: none known, or resume not asked). */
  readonly resume: ResumeDecision | undefined;
}

export interface DecideOptions {
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  /** `--execution`: read this one. */
  readonly executionId?: string | undefined;
  /** The job's run state, to resume an interrupted run from (undefined: never resume: `--fresh`, a shard). */
  readonly state?: JobRunState | undefined;
  /** A plan: decide, change nothing (the run state stays as it is). */
  readonly readOnly?: boolean;
}

export async function decideSource(job: Job, options: DecideOptions, cursor?: CursorArgument): Promise<SourceDecision> {
  if (options.executionId !== undefined) {
    // A plan reports its size; a run learns it from the pipeline, which also says why it cannot be read.
    const status = options.readOnly === true ? await statusOf(options.client, options.executionId, options.signal) : undefined;
    return { ...existing(options.executionId, status), action: 'reuse', source: { executionId: options.executionId }, reason: `execution ${options.executionId} was given (--execution)`, resume: undefined };
  }
  let seen: ExecutionStatus | undefined;
  const readable = async (executionId: string): Promise<true | string> => {
    const probed = await probeStatus(options.client, executionId, options.signal);
    if (!('status' in probed)) return probed.why;
    seen = probed.status;
    return !isTerminal(seen.state) || holdsResult(seen) ? true : `its execution can no longer be read (${seen.state}); a fresh execution starts`;
  };
  const resume = await options.state?.decide(readable, { readOnly: options.readOnly === true });
  if (resume?.resume === true) {
    return {
      ...existing(resume.executionId, seen),
      action: 'resume',
      source: { executionId: resume.executionId, started: resume.started },
      reason: `an interrupted run (started ${resume.startedAt}) left execution ${resume.executionId}, which can still be read`,
      resume,
    };
  }
  return { ...(await fromSource(job, options, cursor)), resume };
}

/** The one dispatch on what the job's source is: SQL, a saved query, its latest result, a view refresh. */
async function fromSource(job: Job, options: DecideOptions, cursor: CursorArgument | undefined): Promise<Omit<SourceDecision, 'resume'>> {
  const info = sourceInfo(job);
  const execute = { action: 'execute' as const, source: jobSource(job, cursor), executionId: undefined, rows: undefined, bytes: undefined };
  if (info.kind === 'sql') return { ...execute, reason: `SQL runs anew on every run (${job.performance ?? 'medium'} tier)` };
  if (info.kind === 'query') return { ...execute, reason: `saved query ${info.queryId} runs anew (query_id always executes; latest reuses a stored result)` };
  if (info.kind === 'view') return { ...execute, reason: `refreshing view ${info.view} runs its query` };
  const queryId = info.queryId!;
  const { page, fresh } = await findLatest(options.client, queryId, { parameters: info.parameters, maxAgeHours: info.maxAgeHours, signal: options.signal });
  const anew = { ...execute, source: jobSource(job, cursor, true) };
  if (page === undefined) return { ...anew, reason: `saved query ${queryId} has no stored result for these parameters` };
  if (!holdsResult(page)) return { ...anew, reason: `the latest result of saved query ${queryId} (execution ${page.execution_id}) is ${page.state}` };
  if (!fresh) {
    const ageHours = (Date.now() - (page.execution_ended_at === undefined ? NaN : Date.parse(page.execution_ended_at))) / 3_600_000;
    return { ...anew, reason: `the latest result of saved query ${queryId} ended ${ageHours.toFixed(1)} h ago, older than max_age_hours ${info.maxAgeHours}` };
  }
  return {
    action: 'reuse',
    source: { executionId: page.execution_id },
    reason: `the latest result of saved query ${queryId} (ended ${page.execution_ended_at ?? 'at an unknown time'}) is fresh enough`,
    executionId: page.execution_id,
    rows: page.result?.metadata.total_row_count,
    bytes: page.result?.metadata.total_result_set_bytes,
  };
}

function existing(executionId: string, status: ExecutionStatus | undefined): Pick<SourceDecision, 'executionId' | 'rows' | 'bytes'> {
  return { executionId, rows: status?.result_metadata?.total_row_count, bytes: status?.result_metadata?.total_result_set_bytes };
}

/** An execution's status; undefined when it cannot be asked (gone, or the service says no) unless the run is stopping. */
async function statusOf(client: ServiceClient, executionId: string, signal: AbortSignal): Promise<ExecutionStatus | undefined> {
  try {
    return await client.getStatus(executionId, { signal });
  } catch (error) {
    if (signal.aborted) throw error;
    return undefined;
  }
}

/**
 * An execution's status, or why it cannot be asked: a 404 is an execution the service no longer
 * knows (its record was forgotten after its retention, or the service's data was reset).
 */
async function probeStatus(client: ServiceClient, executionId: string, signal: AbortSignal): Promise<{ status: ExecutionStatus } | { why: string }> {
  try {
    return { status: await client.getStatus(executionId, { signal }) };
  } catch (error) {
    if (signal.aborted) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof NotFoundError) return { why: `the service no longer knows its execution (${message}); a fresh execution starts` };
    return { why: `its execution's status cannot be read (${message}); a fresh execution starts` };
  }
}
