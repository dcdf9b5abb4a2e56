import { retrying, sleep } from '../../client/retry.ts';
import type { RetryPolicy } from '../../client/retryPolicy.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import { WORKERS_IGNORED } from '../../export/partPlan.ts';
import { missingFolders, removeEmptyFolders } from './createdFolders.ts';
import { policyOf } from './errorPolicy.ts';
import { notifierFor, notifiesFailure, notifyingEvents } from './notify.ts';
import { JobRun, type JobSummary, type RunEvents, type RunTally } from './jobRun.ts';
import { OutputSessions } from '../output/outputSession.ts';
import { worthRetrying } from './retryable.ts';
import { type RunRecord, RunHistory } from './runHistory.ts';
import { type JobRunState, jobRunState, RunStateStore } from './runState.ts';

export type { JobSummary, OutputSummary, RunEvents } from './jobRun.ts';

export interface RunJobOptions {
  readonly client: ServiceClient;
  /** Where run state (for resume) and the job lock live. */
  readonly stateDir: string;
  /** Abort = stop: cancel the execution if it is still running, abort uploads, commit nothing. */
  readonly signal: AbortSignal;
  /** Export this existing execution instead of running the job's source. */
  readonly executionId?: string;
  /** Pick up the execution of an interrupted run (default true; `--fresh` sets false). */
  readonly resume?: boolean;
  readonly events?: RunEvents;
  /** Recorded as the run's `origin` in the run history (`mcp` for a tool call of `sluice mcp`). */
  readonly origin?: string;
  /** Waits between retries (tests shorten it). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * One run of a job: find or start the execution and wait (the pipeline) -> budget check -> skip
 * outputs already committed -> stream the result once -> tee the Arrow batches into every output
 * still to write -> commit each (src/export) -> forget the run state. Retries the whole run up to
 * `job.retries` times; a retry (and the next run after an interruption) resumes the same execution
 * while `JobRunState.decide` allows it.
 */
export async function runJob(job: Job, options: RunJobOptions): Promise<JobSummary> {
  const store = new RunStateStore(options.stateDir);
  const release = await store.lock(job.name);
  const run: RunTally = { startedAt: new Date(), began: performance.now(), credits: 0, attempts: 0 };
  const notifier = notifierFor(job, { startedAt: run.startedAt, onDelivery: (d) => options.events?.onNotification?.(d), onWarning: options.events?.onWarning });
  options = { ...options, events: notifyingEvents(options.events, notifier, run) };
  if (job.workers !== undefined) options.events?.onWarning?.(`jobs.${job.name}.${WORKERS_IGNORED}`, { job: job.name, workers: job.workers });
  try {
    let summary: JobSummary;
    const created = await missingFolders(job.outputs.map((o) => o.path));
    const state = jobRunState(store, job);
    try {
      summary = await attemptWithRetries(job, options, state, run);
    } catch (error) {
      await removeEmptyFolders(created);
      await recordRun(job, options, run, { error });
      // The history holds the execution's credits now: the run that resumes it must not count them again.
      if (run.chargedExecution !== undefined) await state.counted(run.chargedExecution);
      if (options.signal.aborted) await reportKept(store, job, options);
      if (notifiesFailure(error, options.signal)) notifier?.failed(error, run);
      throw error;
    }
    const creditsLeft = await creditsLeftInCycle(options.client, options.signal);
    const final = creditsLeft === undefined ? summary : { ...summary, creditsLeft };
    await recordRun(job, options, run, { summary: final });
    notifier?.succeeded(final);
    return final;
  } finally {
    await release();
    // After the lock: a receiver that is down delays the end of the run, not the job's next run.
    await notifier?.settled();
  }
}

const USAGE_TIMEOUT_MS = 5_000;

/** A stopped run says what it kept for the next run: the execution, still running or ended, or nothing. */
async function reportKept(store: RunStateStore, job: Job, options: RunJobOptions): Promise<void> {
  const kept = await store.read(job.name);
  if (kept === undefined) {
    options.events?.onKept?.({ executionId: undefined, state: undefined });
    return;
  }
  let state: string | undefined;
  try {
    state = (await options.client.getStatus(kept.execution_id, { signal: AbortSignal.timeout(USAGE_TIMEOUT_MS) })).state;
  } catch {
    state = undefined; // the service is gone too: the next run asks
  }
  options.events?.onKept?.({ executionId: kept.execution_id, state });
}

async function attemptWithRetries(job: Job, options: RunJobOptions, state: JobRunState, run: RunTally): Promise<JobSummary> {
  // Each output opened once for the run, its attempts included.
  const outputs = new OutputSessions(job);
  try {
    // Before any execution is started or resumed: a destination that cannot work costs nothing, and is not retried.
    await outputs.check(options.signal);
    return await attempts(job, options, state, run, outputs);
  } finally {
    await outputs.close();
  }
}

async function attempts(job: Job, options: RunJobOptions, state: JobRunState, run: RunTally, outputs: OutputSessions): Promise<JobSummary> {
  // The job's retries: the one retry loop, waiting retry_delay_seconds, doubled for each next one.
  const policy: RetryPolicy = { attempts: (job.retries ?? 0) + 1, baseDelayMs: (job.retry_delay_seconds ?? 5) * 1000, maxDelayMs: Number.POSITIVE_INFINITY, maxElapsedMs: Number.POSITIVE_INFINITY, jitter: false };
  try {
    return await retrying(
      async (attempt) => {
        run.attempts = attempt;
        if (attempt > 1) outputs.forget();
        const result = await new JobRun(job, { ...options, resume: options.resume !== false, outputs }, state, run).attempt();
        return { ...result, credits: run.credits, attempts: attempt, durationMs: performance.now() - run.began };
      },
      {
        policy,
        signal: options.signal,
        retryable: (error) => (worthRetrying(error, options.signal) ? {} : false),
        onRetry: (attempt, delayMs, error) => options.events?.onRetry?.({ attempt, error, delayMs }),
        sleep: (ms, signal) => (options.sleep ?? retrySleep)(ms, signal ?? options.signal),
      },
    );
  } catch (error) {
    await state.failed(error, options.signal, (e) => worthResuming(e, options.signal));
    throw error;
  }
}

/** Credits left in the team's cycle, for the summary; undefined when the key may not read usage. */
async function creditsLeftInCycle(client: ServiceClient, signal: AbortSignal): Promise<number | undefined> {
  try {
    const usage = await client.getUsage({ signal: AbortSignal.any([signal, AbortSignal.timeout(USAGE_TIMEOUT_MS)]) });
    return Math.max(0, usage.credits_limit - usage.credits_used);
  } catch {
    return undefined; // a key without the Admin scope, or a service without usage: the summary says less
  }
}

/** Appends the run to the state directory's history; a history that cannot be written does not fail the run. */
async function recordRun(job: Job, options: RunJobOptions, run: RunTally, end: { summary: JobSummary } | { error: unknown }): Promise<void> {
  const record: RunRecord = {
    version: 1,
    job: job.name,
    started_at: run.startedAt.toISOString(),
    ended_at: new Date().toISOString(),
    ...('summary' in end ? succeeded(end.summary) : failed(end.error, run, options.signal)),
    credits: run.credits,
    attempts: run.attempts,
    ...(options.origin === undefined ? {} : { origin: options.origin }),
  };
  try {
    await new RunHistory(options.stateDir).append(record);
  } catch (failure) {
    options.events?.onWarning?.('could not append the run to the run history', { error: failure instanceof Error ? failure.message : String(failure) });
  }
  options.events?.onRecorded?.(record);
}

type Outcome = Omit<RunRecord, 'version' | 'job' | 'started_at' | 'ended_at' | 'credits' | 'attempts' | 'origin'>;

function succeeded(summary: JobSummary): Outcome {
  return {
    outcome: 'succeeded',
    execution_id: summary.executionId,
    resumed: summary.resumed,
    rows: summary.rows,
    fetched_rows: summary.fetchedRows,
    page_bytes: summary.pageBytes,
    files: summary.files,
    bytes: summary.bytes,
    ...(summary.creditsLeft === undefined ? {} : { credits_left: summary.creditsLeft }),
    ...(summary.cursor === undefined ? {} : { cursor: summary.cursor }),
    outputs: summary.outputs.map((o) => ({ url: o.url, format: o.format, rows: o.rows, files: o.files, bytes: o.bytes, skipped: o.skipped })),
  };
}

function failed(error: unknown, run: RunTally, signal: AbortSignal): Outcome {
  return {
    outcome: signal.aborted ? 'stopped' : 'failed',
    error: { code: errorCode(error), message: error instanceof Error ? error.message : String(error) },
    ...(run.executionId === undefined ? {} : { execution_id: run.executionId }),
    resumed: false,
    rows: 0,
    fetched_rows: 0,
    files: 0,
    bytes: 0,
    // A failed incremental run says where it started; `to` null: what its outputs hold now is not known.
    ...(run.cursorFrom === undefined ? {} : { cursor: { from: run.cursorFrom, to: null } }),
    outputs: [],
  };
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'UNKNOWN';
}

/**
 * Whether a later run may resume this run's execution after it failed with `error`: only when the
 * failure could pass (the error table's `keepRunState`: the network, a 5xx). A failure that would
 * fail again (a mistake in the job, a destination refusing, another writer's commit) ends the
 * resume, so the next run starts a fresh execution instead of exporting a stale one.
 */
function worthResuming(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && worthRetrying(error, signal) && policyOf(error).keepRunState;
}

function retrySleep(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, signal, { method: 'runJob' });
}
