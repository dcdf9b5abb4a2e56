import { missingFolders, removeEmptyFolders } from './createdFolders.ts';
import { sleep } from '../client/retry.ts';
import type { ServiceClient } from '../client/service-client.ts';
import type { Job } from '../config/jobSchema.ts';
import type { Commit } from '../export/commit.ts';
import { commitFor } from '../export/commitFor.ts';
import { openExport, startThreadsFor, type ExportSummary, type OpenedExport } from '../export/writeExport.ts';
import { checkOutputs } from '../export/checkOutputs.ts';
import { knownWire, partThreadCount, resolveWorkers, serialReason, type Workers } from '../export/partPlan.ts';
import { type ResultStream, stream } from '../pipeline/stream.ts';
import type { Progress } from '../pipeline/progress.ts';
import type { StreamSource } from '../pipeline/source.ts';
import { holdsResult, isTerminal } from '../protocol/index.ts';
import { resumeAttemptId } from './attemptId.ts';
import { checkBytes, creditsAllowed, TIER_COST } from './budget.ts';
import { committedExport, outputFingerprint } from './committedOutput.ts';
import { BudgetExceededError } from './errors.ts';
import { policyOf } from './errorPolicy.ts';
import { checkResultColumns, type CursorPlan, explainInitial, OutputCursor, planCursor, serviceType } from './incremental.ts';
import { jobSource } from './jobSource.ts';
import type { CursorKind } from './cursor.ts';
import { compareCursor } from './cursor.ts';
import { worthRetrying } from './retryable.ts';
import { type RunRecord, RunHistory } from './runHistory.ts';
import { type JobRunState, jobRunState, type ResumeDecision, RunStateStore } from './runState.ts';
import { skipRows } from './skipRows.ts';
import { tee } from './tee.ts';
import { openDestination } from '../export/storage/openDestination.ts';

export interface OutputSummary {
  readonly url: string;
  readonly format: string;
  readonly rows: number;
  readonly files: number;
  readonly bytes: number;
  /** Already committed for this execution by an earlier (interrupted) run. */
  readonly skipped: boolean;
  /** Part files a killed run had completed and this run kept instead of writing them again. */
  readonly resumedFiles: number;
  /** For a table format output (`table: iceberg`): the snapshot the output is at. */
  readonly snapshot?: string;
}

export interface JobSummary {
  readonly job: string;
  readonly executionId: string;
  /** This run started the execution (false: a stored result, or one resumed from a killed run). */
  readonly startedExecution: boolean;
  /** Picked up the execution of an earlier run that did not finish. */
  readonly resumed: boolean;
  /** Whether an interrupted run's execution was picked up, and why not when it was not (undefined: none known). */
  readonly resume: ResumeDecision | undefined;
  readonly rows: number;
  /** Rows this run read from the service and handed to the outputs (fewer than `rows` when parts of a killed run were kept). */
  readonly fetchedRows: number;
  /**
   * The result pages this run read, in bytes: as they crossed the wire (compressed, when the
   * service compressed them) and decoded. Part threads' pages included; retried attempts not.
   */
  readonly pageBytes: { readonly wire: number; readonly decoded: number };
  readonly files: number;
  readonly bytes: number;
  /** Credits spent by this run's executions (failed attempts included). */
  readonly credits: number;
  readonly durationMs: number;
  readonly attempts: number;
  readonly outputs: readonly OutputSummary[];
  /** Credits left in the team's billing cycle after the run (absent when the key may not read usage). */
  readonly creditsLeft?: number;
  /** Incremental jobs: the committed cursor value the run started after (null: none yet), and the one committed now. */
  readonly cursor?: { readonly from: string | null; readonly to: string | null };
}

export interface RunEvents {
  /** An interrupted run of this job was found: whether this run resumes its execution, and why not. */
  onResume?(decision: ResumeDecision): void;
  onExecution?(event: { executionId: string; started: boolean; resumed: boolean }): void;
  onProgress?(progress: Progress & { totalPages: number | undefined }): void;
  onOutput?(output: OutputSummary): void;
  onRetry?(event: { attempt: number; error: unknown; delayMs: number }): void;
  /** The run's record, as appended to the run history, whatever the outcome. */
  onRecorded?(record: RunRecord): void;
  onWarning?(message: string, fields: Record<string, unknown>): void;
}

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
  /** Threads writing an output's parts side by side; overrides the job's `workers` (`--workers`). */
  readonly workers?: Workers;
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
  try {
    let summary: JobSummary;
    const created = await missingFolders(job.outputs.map((o) => o.path));
    try {
      summary = await attemptWithRetries(job, options, jobRunState(store, job), run);
    } catch (error) {
      await removeEmptyFolders(created);
      await recordRun(job, options, run, { error });
      throw error;
    }
    const creditsLeft = await creditsLeftInCycle(options.client, options.signal);
    const final = creditsLeft === undefined ? summary : { ...summary, creditsLeft };
    await recordRun(job, options, run, { summary: final });
    return final;
  } finally {
    await release();
  }
}

const USAGE_TIMEOUT_MS = 5_000;

/** What a run has done so far, across its attempts: enough to record it however it ends. */
interface RunTally {
  readonly startedAt: Date;
  readonly began: number;
  credits: number;
  attempts: number;
  executionId?: string;
  /** An incremental run: the committed cursor value it started after (null: from the initial value). */
  cursorFrom?: string | null;
}

async function attemptWithRetries(job: Job, options: RunJobOptions, state: JobRunState, run: RunTally): Promise<JobSummary> {
  // Before any execution is started or resumed: a destination that cannot work costs nothing, and is not retried.
  await checkOutputs(job.outputs, options.signal);
  const retries = job.retries ?? 0;
  let delay = (job.retry_delay_seconds ?? 5) * 1000;
  for (let attempt = 1; ; attempt++) {
    run.attempts = attempt;
    try {
      const result = await attemptRun(job, options, state, run);
      return { ...result, credits: run.credits, attempts: attempt, durationMs: performance.now() - run.began };
    } catch (error) {
      if (attempt > retries || !worthRetrying(error, options.signal)) {
        await state.failed(error, options.signal, (e) => worthResuming(e, options.signal));
        throw error;
      }
      options.events?.onRetry?.({ attempt, error, delayMs: delay });
      await (options.sleep ?? retrySleep)(delay, options.signal);
      delay *= 2;
    }
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
  const summary = 'summary' in end ? end.summary : undefined;
  const error = 'error' in end ? end.error : undefined;
  const record: RunRecord = {
    version: 1,
    job: job.name,
    started_at: run.startedAt.toISOString(),
    ended_at: new Date().toISOString(),
    outcome: summary ? 'succeeded' : options.signal.aborted ? 'stopped' : 'failed',
    ...(error === undefined ? {} : { error: { code: errorCode(error), message: error instanceof Error ? error.message : String(error) } }),
    ...((summary?.executionId ?? run.executionId) === undefined ? {} : { execution_id: summary?.executionId ?? run.executionId }),
    resumed: summary?.resumed ?? false,
    rows: summary?.rows ?? 0,
    fetched_rows: summary?.fetchedRows ?? 0,
    ...(summary === undefined ? {} : { page_bytes: summary.pageBytes }),
    files: summary?.files ?? 0,
    bytes: summary?.bytes ?? 0,
    credits: run.credits,
    ...(summary?.creditsLeft === undefined ? {} : { credits_left: summary.creditsLeft }),
    attempts: run.attempts,
    // A failed incremental run says where it started; `to` null: what its outputs hold now is not known.
    ...(summary?.cursor !== undefined ? { cursor: summary.cursor } : run.cursorFrom !== undefined ? { cursor: { from: run.cursorFrom, to: null } } : {}),
    outputs: (summary?.outputs ?? []).map((o) => ({ url: o.url, format: o.format, rows: o.rows, files: o.files, bytes: o.bytes, skipped: o.skipped })),
    ...(options.origin === undefined ? {} : { origin: options.origin }),
  };
  try {
    await new RunHistory(options.stateDir).append(record);
  } catch (failure) {
    options.events?.onWarning?.('could not append the run to the run history', { error: failure instanceof Error ? failure.message : String(failure) });
  }
  options.events?.onRecorded?.(record);
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'UNKNOWN';
}

type AttemptResult = Omit<JobSummary, 'credits' | 'attempts' | 'durationMs'>;

/** What the outputs written by this run add up to. */
interface Written {
  readonly summaries: ExportSummary[];
  readonly fetchedRows: number;
  /** Per pending output: the cursor value its commit holds now (undefined: not incremental). */
  readonly cursors: (string | undefined)[];
}

async function attemptRun(job: Job, options: RunJobOptions, state: JobRunState, spent: RunTally): Promise<AttemptResult> {
  const { client, signal, events } = options;
  const performance = job.performance ?? 'medium';

  // 0. An incremental job starts after what its outputs committed (their commits carry the cursor).
  const plan = job.incremental === undefined ? undefined : await planCursor(job, await readCommits(job, signal), client, signal);
  if (plan !== undefined) spent.cursorFrom = plan.from;

  // 1. What to read: a given execution, the execution of an interrupted run, or the job's source.
  let source: StreamSource = jobSource(job, plan?.argument);
  let resume: ResumeDecision | undefined;
  if (options.executionId !== undefined) {
    source = { executionId: options.executionId };
  } else if (options.resume !== false) {
    resume = await state.decide((id) => readable(client, id, signal));
    if (resume) events?.onResume?.(resume);
    if (resume?.resume) source = { executionId: resume.executionId, started: resume.started };
  }
  const resumed = resume?.resume === true;
  if (!('executionId' in source) && !('latest' in job.source)) {
    const cost = TIER_COST[performance];
    if (!creditsAllowed(job, spent.credits, cost)) {
      throw new BudgetExceededError(job.name, 'max_credits', `an execution costs ${cost} credits (${performance} tier) and the budget has ${(job.budget?.max_credits ?? 0) - spent.credits} left of max_credits ${job.budget?.max_credits}; nothing was started`);
    }
  }

  // 2. The pipeline starts or finds the execution, waits, and on a stop cancels what this job started.
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    let remembering: Promise<void> | undefined;
    let startedNow = false;
    let reportedPageSize: number | undefined;
    const result = stream(client, source, {
      signal: controller.signal,
      // Never cancel an execution this job did not start (`--execution`, a stored result reused).
      cancelOnAbort: options.executionId === undefined && !(resume?.resume === true && !resume.started),
      allowPartialResults: job.result?.allow_partial ?? false,
      ...(job.concurrency === undefined ? {} : { concurrency: job.concurrency }),
      ...(job.wire === undefined ? {} : { wire: job.wire }),
      ...(job.result?.columns === undefined ? {} : { columns: job.result.columns }),
      ...(job.result?.filters === undefined ? {} : { filters: job.result.filters }),
      ...(job.result?.sort_by === undefined ? {} : { sortBy: job.result.sort_by }),
      onExecution: (executionId, { started }) => {
        spent.executionId = executionId;
        // Remembered before waiting: a kill from here on resumes this execution.
        startedNow = started && !resumed;
        if (startedNow && options.executionId === undefined) remembering = state.remember(executionId, started);
        events?.onExecution?.({ executionId, started: started && !resumed, resumed });
      },
      onProgress: (p) => {
        const totalPages = reportedPageSize !== undefined && p.totalRows !== undefined ? Math.max(1, Math.ceil(p.totalRows / reportedPageSize)) : undefined;
        events?.onProgress?.({ ...p, totalPages });
      },
    });
    let ready;
    try {
      ready = await result.ready();
      await remembering;
    } catch (error) {
      await remembering?.catch(() => undefined);
      // An execution that ran and then failed is charged too: the run's credits say so.
      if (startedNow && spent.executionId !== undefined && isExecutionOutcome(error)) spent.credits += await chargedFor(client, spent.executionId);
      // Stopped while waiting (the pipeline cancelled it); otherwise the error table says whether it can be resumed.
      if (signal.aborted || !policyOf(error).keepRunState) await state.forget();
      throw plan === undefined ? error : explainInitial(plan, error);
    }
    const { executionId, status } = ready;
    if (ready.started && !resumed) spent.credits += status.execution_cost_credits ?? TIER_COST[performance];
    const overBytes = checkBytes(job, status);
    if (overBytes) {
      await state.forget();
      throw overBytes;
    }
    let kind: CursorKind | undefined;
    if (plan !== undefined) {
      try {
        kind = checkResultColumns(plan, status.result_metadata?.column_names ?? [], status.result_metadata?.column_types ?? []);
      } catch (error) {
        await state.forget();
        throw error;
      }
    }

    // 3. Outputs: skip those already committed for this execution, write the rest from one read.
    const totalRows = job.result?.filters === undefined ? status.result_metadata?.total_row_count : undefined;
    const asked: Workers = options.workers ?? job.workers ?? 1;
    if (totalRows !== undefined && plan === undefined) {
      // Part threads load their code while the outputs are checked and staged and the first page is read.
      // With the wire not known before the first page (auto), only the threads the Arrow wire pays
      // for (the fewer): a service that answers JSON gets the rest started by the export itself,
      // while threads started for nothing would take CPU from the one that writes.
      const wire = job.wire === 'json' ? 'json' : 'arrow';
      for (const output of job.outputs) startThreadsFor(output, asked, totalRows, wire);
    }
    const summaries: (OutputSummary | undefined)[] = new Array(job.outputs.length).fill(undefined);
    const pending: number[] = [];
    for (const [i, output] of job.outputs.entries()) {
      const done = await committedExport(output, executionId, totalRows, outputFingerprint(job, output), signal, commitFor(output));
      if (done) {
        summaries[i] = { url: done.url, format: output.format.type, rows: done.rows, files: done.files, bytes: done.bytes, skipped: true, resumedFiles: 0, ...(done.snapshot ? { snapshot: done.snapshot } : {}) };
        events?.onOutput?.(summaries[i]!);
      } else {
        pending.push(i);
      }
    }
    let fetchedRows = 0;
    const committedCursors: (string | undefined)[] = plan === undefined ? [] : plan.committed.map((c) => c?.value);
    if (pending.length > 0) {
      const cursors = plan === undefined || kind === undefined ? undefined : { plan, kind };
      const workers = resolveWorkers(asked);
      if (workers > 1 && job.result?.filters !== undefined) {
        events?.onWarning?.('result.filters: the outputs are written by one thread (parts need row offsets, and the service does not count the rows a filter keeps)', { workers });
      }
      if (workers > 1 && cursors !== undefined) {
        events?.onWarning?.('incremental: the outputs are written by one thread (each drops the rows it holds already, from the one read)', { workers });
      }
      const written = await exportAll(job, pending, executionId, result, controller, signal, (pageSize) => (reportedPageSize = pageSize), {
        workers: job.result?.filters === undefined && cursors === undefined ? asked : 1,
        totalRows,
        wire: knownWire(job.wire),
        ...(events?.onWarning === undefined ? {} : { warn: events.onWarning }),
      }, cursors);
      fetchedRows = written.fetchedRows;
      for (const [k, index] of pending.entries()) committedCursors[index] = written.cursors[k];
      for (const summary of written.summaries) {
        // A mixed-schema output is said out loud: older files lack the new columns.
        if (summary.addedColumns) events?.onWarning?.('appended rows with new columns: the older files of the output lack them (readers that merge files by name read NULL there)', { output: summary.url, columns: summary.addedColumns });
      }
      pending.forEach((index, k) => {
        const s = written.summaries[k]!;
        const snapshot = s.commit?.snapshot;
        summaries[index] = { url: s.url, format: job.outputs[index]!.format.type, rows: s.rows, files: s.files.length, bytes: s.bytes, skipped: false, resumedFiles: s.resumedFiles, ...(snapshot ? { snapshot } : {}) };
        events?.onOutput?.(summaries[index]!);
      });
    }
    await state.forget();

    const outputs = summaries.map((s) => s!);
    return {
      job: job.name,
      executionId,
      startedExecution: ready.started && !resumed,
      resumed,
      resume,
      rows: outputs[0]?.rows ?? 0,
      fetchedRows,
      pageBytes: { wire: result.progress?.wireBytes ?? 0, decoded: result.progress?.httpBytes ?? 0 },
      files: outputs.reduce((n, o) => n + o.files, 0),
      bytes: outputs.reduce((n, o) => n + o.bytes, 0),
      outputs,
      ...(plan === undefined ? {} : { cursor: { from: plan.from, to: lowest(kind ?? plan.kind, committedCursors) } }),
    };
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** The lowest of the outputs' committed cursor values: where every output has got to. */
function lowest(kind: CursorKind | undefined, values: readonly (string | undefined)[]): string | null {
  if (kind === undefined || values.some((v) => v === undefined)) return null;
  return (values as string[]).reduce((a, b) => (compareCursor(kind, a, b) <= 0 ? a : b));
}

/** Each output's committed export as its commit protocol reads it (undefined: none yet). */
/** Each output's commit (undefined for a single-stream output, or one with none yet). */
export async function readCommits(job: Job, signal: AbortSignal): Promise<(Commit | undefined)[]> {
  const commits: (Commit | undefined)[] = [];
  for (const output of job.outputs) {
    const destination = openDestination(output);
    try {
      commits.push(destination.multiFile ? await commitFor(output).read(destination, signal) : undefined);
    } finally {
      await destination.close();
    }
  }
  return commits;
}

/**
 * Reads the result once and writes it to every pending output; one failing aborts the rest
 * (through `controller`, which also stops the read).
 *
 * Per-part resume: each output's staging area is named after (job, execution, output), so the
 * parts a killed run completed are found again (see `recover` in src/export for what is kept and
 * why the result is byte-identical). The read starts at the lowest row an output still needs, on
 * the page grid the killed run used; outputs that need less skip ahead. A kill at any point
 * therefore costs at most the part being written per output, not the rows already stored.
 */
async function exportAll(
  job: Job,
  pending: readonly number[],
  executionId: string,
  result: ResultStream,
  controller: AbortController,
  stop: AbortSignal,
  onPageSize: (pageSize: number) => void,
  parallel: { readonly workers: Workers; readonly totalRows?: number | undefined; readonly wire?: 'json' | 'arrow' | undefined; readonly warn?: (message: string, fields: Record<string, unknown>) => void },
  incremental?: { plan: CursorPlan; kind: CursorKind },
): Promise<Written> {
  const opened: OpenedExport[] = [];
  try {
    for (const index of pending) {
      const output = job.outputs[index]!;
      opened.push(
        await openExport(output, { executionId }, {
          commit: commitFor(output),
          signal: controller.signal,
          // An incremental output drops the rows it holds already, so its parts are not a function of
          // row offsets: a killed run's parts are written again rather than kept.
          ...(incremental === undefined ? { resume: { attemptId: resumeAttemptId(job.name, executionId, output) } } : {}),
          // Stopped from outside (SIGTERM): finished parts survive for the next run, as after a kill.
          keepOnStop: stop,
          workers: threadsFor(output, parallel),
        }),
      );
      const why = opened.at(-1)!.serialReason;
      if (why !== undefined) parallel.warn?.(`output ${output.path}: written by one thread (${why})`, { output: output.path, workers: parallel.workers });
    }
    // Outputs written by part threads read their parts themselves; the others share one read here.
    const serial = opened.map((o, k) => ({ o, k })).filter(({ o }) => o.workers === 1);
    const split = opened.map((o, k) => ({ o, k })).filter(({ o }) => o.workers > 1);
    const startRow = serial.length > 0 ? Math.min(...serial.map(({ o }) => o.startRow)) : 0;
    const pageSize = opened.find((o) => o.pageSize !== undefined)?.pageSize;
    // Same page grid as the killed run: batches (so row groups, so bytes) are cut at the same rows.
    result.seek({ ...(startRow > 0 ? { startOffset: startRow } : {}), ...(pageSize === undefined ? {} : { pageSize }) });
    const info = await result.info();
    onPageSize(info.pageSize);
    const schema = await result.schema();
    const meta = {
      executionId,
      pageSize: info.pageSize,
      ...(info.queryId === undefined ? {} : { queryId: info.queryId }),
      ...(info.status.execution_ended_at === undefined ? {} : { endedAt: info.status.execution_ended_at }),
      ...(job.result?.filters === undefined ? { totalRowCount: info.totalRows } : {}),
      ...('query_id' in job.source && job.source.parameters ? { parameters: job.source.parameters } : {}),
      ...('latest' in job.source && job.source.latest.parameters ? { parameters: job.source.latest.parameters } : {}),
    };
    let first: { error: unknown } | undefined;
    const failed = (error: unknown): never => {
      // Stop the others: outputs of one run are all written, or the run fails. The abort also
      // releases an output waiting on this one's unread branch. The first failure is the cause;
      // the others only report that abort.
      first ??= { error };
      controller.abort(error);
      throw error;
    };
    const fingerprint = (k: number) => outputFingerprint(job, job.outputs[pending[k]!]!);
    const summaries: Promise<ExportSummary>[] = new Array(opened.length);
    // Before any write starts: a failure here leaves nothing running.
    const reader = split.length > 0 ? await result.rangeReader() : undefined;
    if (split.length > 0 && reader === undefined) throw new Error('runJob: the result cannot be read by row ranges, yet outputs were opened for part threads');
    const branches = serial.length > 0 ? tee(result.batches(), serial.length, 2, controller.signal) : [];
    // Incremental (every output serial): each output drops the rows its commit holds and tracks the new mark.
    const cursorType = incremental === undefined ? undefined : serviceType(schema, incremental.plan.incremental.cursor);
    const cursors = opened.map((_, k) => (incremental === undefined ? undefined : new OutputCursor(incremental.plan, incremental.kind, cursorType!, pending[k]!)));
    serial.forEach(({ o, k }, b) => {
      const cursor = cursors[k];
      const batches = skipRows(branches[b]!, o.startRow - startRow);
      // An output that drops rows it holds already writes fewer than the result has: no row count to check.
      const { totalRowCount, ...rest } = meta;
      const drops = cursor !== undefined && incremental?.plan.committed[pending[k]!] !== undefined;
      const outputMeta = {
        ...rest,
        ...(totalRowCount === undefined || drops ? {} : { totalRowCount }),
        job: job.name,
        fingerprint: fingerprint(k),
        ...(cursor ? { cursor: () => cursor.state() } : {}),
      };
      summaries[k] = o.write({ schema, batches: cursor ? cursor.filter(batches) : batches, meta: outputMeta }, { signal: controller.signal }).catch(failed);
    });
    let splitRows = 0;
    if (reader !== undefined) {
      const counted = { ...reader, page: (rows: number, bytes: number, httpBytes: number, wireBytes: number) => ((splitRows += rows), reader.page(rows, bytes, httpBytes, wireBytes)) };
      // One output after another, each on every worker: the threads in use stay at `workers`.
      let chain: Promise<unknown> = Promise.resolve();
      for (const { o, k } of split) {
        const written = chain.then(() => o.write({ schema, batches: noBatches(), meta: { ...meta, job: job.name, fingerprint: fingerprint(k) }, parts: counted }, { signal: controller.signal })).catch(failed);
        summaries[k] = written;
        chain = written.catch(() => undefined);
      }
    }
    const settled = await Promise.allSettled(summaries);
    if (first) throw stop.aborted ? stop.reason : first.error;
    const serialRows = serial.length > 0 ? (result.progress?.rows ?? 0) : 0;
    const done = settled.map((s) => (s as PromiseFulfilledResult<ExportSummary>).value);
    // An append of no rows committed nothing: the output's cursor is the one it had.
    const after = cursors.map((c, k) => (c === undefined ? undefined : done[k]!.committed === false ? incremental!.plan.committed[pending[k]!]?.value : c.state().value));
    return { summaries: done, fetchedRows: serialRows + splitRows, cursors: after };
  } finally {
    // Exports that never got to write (the read could not start) give their staging back.
    await Promise.allSettled(opened.map((o) => o.discard(controller.signal.reason)));
  }
}

/**
 * The part threads an output's rows are worth (see `partThreadCount`): one when they pay for no
 * thread (this thread then writes the output). With `auto` and the wire not known before the first
 * page, `auto` goes on to the export, which counts again on the wire the rows come over.
 */
function threadsFor(output: Job['outputs'][number], parallel: { readonly workers: Workers; readonly totalRows?: number | undefined; readonly wire?: 'json' | 'arrow' | undefined }): Workers {
  // An output part threads cannot write keeps the count asked for: opening it says why (a warning).
  if (parallel.totalRows === undefined || resolveWorkers(parallel.workers) <= 1 || serialReason(output) !== undefined) return parallel.workers;
  const count = partThreadCount(parallel.workers, parallel.totalRows, output.maxRowsPerFile, parallel.wire);
  return parallel.workers === 'auto' && parallel.wire === undefined && count > 1 ? 'auto' : count;
}

/** Whether an execution from an earlier run can still be read (or is still going). */
async function readable(client: ServiceClient, executionId: string, signal: AbortSignal): Promise<boolean> {
  try {
    const status = await client.getStatus(executionId, { signal });
    return !isTerminal(status.state) || holdsResult(status);
  } catch (error) {
    if (signal.aborted) throw error;
    return false;
  }
}

/** What the service charged for a finished execution (0 when it cannot be asked). */
async function chargedFor(client: ServiceClient, executionId: string): Promise<number> {
  try {
    const status = await client.getStatus(executionId, { signal: AbortSignal.timeout(USAGE_TIMEOUT_MS) });
    return status.execution_cost_credits ?? 0;
  } catch {
    return 0;
  }
}

function isExecutionOutcome(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'EXECUTION_FAILED' || code === 'EXECUTION_CANCELED' || code === 'EXECUTION_EXPIRED' || code === 'PARTIAL_RESULT';
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

async function* noBatches(): AsyncGenerator<never, void, undefined> {
  // Outputs written by part threads take their rows from the range reader.
}
