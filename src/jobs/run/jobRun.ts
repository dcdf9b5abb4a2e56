import type { ServiceClient } from '../../client/serviceClient.ts';
import { DEFAULT_STATE_DIR, type Job } from '../../config/jobSchema.ts';
import type { ExportSummary } from '../../export/writeExport.ts';
import { type Ready, stream } from '../../pipeline/stream.ts';
import { isTerminal } from '../../protocol/index.ts';
import type { Progress } from '../../pipeline/progress.ts';
import type { RunResult } from '../backfill/backfillStream.ts';
import type { OutputDrift } from '../drift/drift.ts';
import { createFeatures, type FeatureSummary } from '../features.ts';
import type { OutputSessions } from '../output/outputSession.ts';
import { checkBytes, checkCredits, TIER_COST } from './budget.ts';
import { policyOf } from './errorPolicy.ts';
import type { FeatureRun, FeatureStart, JobFeature } from './feature.ts';
import type { Delivery } from './notify.ts';
import { readOptions } from './readOptions.ts';
import type { RunRecord } from './runHistory.ts';
import type { JobRunState, ResumeDecision } from './runState.ts';
import { decideSource, type SourceDecision } from './sourceDecision.ts';
import { type Written, writeOutputs } from './writeOutputs.ts';

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
  /** An output written now: the path its rows took, native (DuckDB wrote it from the service's pages) or general (`--plan` says which beforehand). */
  readonly decode?: 'native' | 'general';
}

/** A run's summary: what every run reports, and each job feature's part (`FeatureSummary`). */
export type JobSummary = RunSummary & FeatureSummary;

export interface RunSummary {
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
   * service compressed them) and decoded. Pages read by row ranges (the native path) included; retried attempts not.
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
  /**
   * A stopped run: the execution it kept for the next run (undefined: none had started) and its
   * state then (undefined: the service could not say). Finished parts are kept beside the outputs.
   */
  onKept?(kept: { executionId: string | undefined; state: string | undefined }): void;
  onWarning?(message: string, fields: Record<string, unknown>): void;
  /** An output's committed columns differ from the result's (before any page): what its policy does. */
  onDrift?(drift: OutputDrift): void;
  /** A webhook notification was delivered, or given up on after its retries (it never fails the run). */
  onNotification?(delivery: Delivery): void;
}

/** What a run has done so far, across its attempts: enough to record it however it ends. */
export interface RunTally {
  readonly startedAt: Date;
  readonly began: number;
  credits: number;
  attempts: number;
  executionId?: string;
  /** The execution whose cost `credits` holds (the run state is marked so when the run is recorded). */
  chargedExecution?: string;
  /** A run that reads from a committed mark: the value it started after (null: from the initial value). */
  cursorFrom?: string | null;
}

export interface AttemptOptions {
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  readonly executionId?: string | undefined;
  /** Pick up an interrupted run's execution (false: `--fresh`). */
  readonly resume: boolean;
  readonly events?: RunEvents | undefined;
  /** Where features keep their records (the run state's folder). */
  readonly stateDir?: string | undefined;
  /** The job's outputs, opened once for the run (closed by the caller). */
  readonly outputs: OutputSessions;
}

export type AttemptResult = Omit<JobSummary, 'credits' | 'attempts' | 'durationMs'>;

/** The execution a run reads, once the pipeline has it ready. */
interface Started {
  readonly decision: SourceDecision;
  readonly result: RunResult;
  readonly ready: Ready;
}

/**
 * One attempt of a run of one job, walking the phases once, each job feature (`FEATURES`) plugged
 * into them: what the features read first (`prepare`) -> what to read (`decideSource`, or a
 * feature's own start) -> the budget -> start or reuse the execution and wait (the pipeline) ->
 * the checks on its metadata (`beforeFetch`) -> skip the outputs that hold it already -> write the
 * others from one read -> forget the run state. A plan (`planRun`) walks the same first phases,
 * reading only, and stops before starting anything; a shard (`runShard`) walks them with a plan
 * file shared by the shards between the execution and the writes.
 */
export class JobRun {
  readonly #job: Job;
  readonly #options: AttemptOptions;
  readonly #state: JobRunState;
  readonly #tally: RunTally;
  /** Linked to the caller's signal; aborted by the first failing output too. */
  readonly #controller = new AbortController();
  readonly #features: readonly JobFeature[];
  #pageSize: number | undefined;

  constructor(job: Job, options: AttemptOptions, state: JobRunState, tally: RunTally) {
    this.#job = job;
    this.#options = options;
    this.#state = state;
    this.#tally = tally;
    const run: FeatureRun = {
      job,
      outputs: options.outputs,
      client: options.client,
      signal: this.#controller.signal,
      tally,
      events: options.events,
      resume: options.resume,
      executionId: options.executionId,
      stateDir: options.stateDir ?? DEFAULT_STATE_DIR,
    };
    this.#features = createFeatures(run);
  }

  async attempt(): Promise<AttemptResult> {
    const { signal } = this.#options;
    const onAbort = (): void => this.#controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (const feature of this.#features) await feature.prepare?.();
      const started = (await this.#featureStart()) ?? (await this.start(await this.decide()));
      const outputs = await this.writeAll(started);
      await this.#state.forget();
      return this.#summary(started, outputs);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** A feature that starts the read itself (a backfill's chunks): the result's checks then read their summed status. */
  async #featureStart(): Promise<Started | undefined> {
    for (const feature of this.#features) {
      const begun: FeatureStart | undefined = await feature.start?.();
      if (begun === undefined) continue;
      this.#tally.executionId = begun.ready.executionId;
      await this.#checkResult(begun.ready);
      return begun;
    }
    return undefined;
  }

  /** What to read, and whether the budget allows a new execution (before anything starts). */
  async decide(): Promise<SourceDecision> {
    const { client, signal, executionId, resume, events } = this.#options;
    const argument = this.#features.map((f) => f.argument?.()).find((a) => a !== undefined);
    const decision = await decideSource(this.#job, { client, signal, executionId, state: resume ? this.#state : undefined }, argument);
    if (decision.resume) events?.onResume?.(decision.resume);
    // An interrupted run's execution that is not resumed (gone, or the job changed) was still
    // charged; no run has counted it when that run was stopped before its cost was known, or killed.
    if (decision.resume?.resume === false && decision.resume.uncounted) this.#tally.credits += await chargedFor(client, decision.resume.executionId);
    if (decision.action === 'execute') checkCredits(this.#job, this.#tally.credits);
    return decision;
  }

  /**
   * The pipeline starts or finds the execution and waits. A stop leaves the execution running (its
   * state is kept): the next run resumes it, as after a kill, and pays nothing more.
   */
  async start(decision: SourceDecision): Promise<Started> {
    const job = this.#job;
    const resumed = decision.action === 'resume';
    let remembering: Promise<void> | undefined;
    let startedNow = false;
    const result = stream(this.#options.client, decision.source, {
      ...readOptions(job),
      signal: this.#controller.signal,
      cancelOnAbort: false,
      onExecution: (executionId, { started }) => {
        this.#tally.executionId = executionId;
        // Remembered before waiting: a kill from here on resumes this execution.
        startedNow = started && !resumed;
        if (startedNow && this.#options.executionId === undefined) remembering = this.#state.remember(executionId, started);
        this.#options.events?.onExecution?.({ executionId, started: startedNow, resumed });
      },
      onProgress: (p) => {
        const totalPages = this.#pageSize !== undefined && p.totalRows !== undefined ? Math.max(1, Math.ceil(p.totalRows / this.#pageSize)) : undefined;
        this.#options.events?.onProgress?.({ ...p, totalPages });
      },
    });
    let ready: Ready;
    try {
      ready = await result.ready();
      await remembering;
    } catch (error) {
      await remembering?.catch(() => undefined);
      throw await this.#notReady(error, startedNow || (resumed && decision.resume?.uncounted === true));
    }
    // Charged once: by the run that started it, or by the one resuming it if no history holds its cost.
    if (ready.started && (!resumed || decision.resume?.uncounted === true)) this.#charge(ready.executionId, ready.status.execution_cost_credits ?? TIER_COST[job.performance ?? 'medium']);
    await this.#checkResult(ready);
    return { decision, result, ready };
  }

  #charge(executionId: string, credits: number): void {
    this.#tally.credits += credits;
    this.#tally.chargedExecution = executionId;
  }

  /**
   * The execution could not be read: charged if it ran, and resumable only if the error table
   * says the failure can pass. `ours`: its cost is this run's to count (it started it, or resumes
   * one no history has counted).
   */
  async #notReady(error: unknown, ours: boolean): Promise<unknown> {
    const { client, signal } = this.#options;
    const executionId = this.#tally.executionId;
    if (signal.aborted) {
      // Stopped while waiting: the execution goes on and the state stays, so the next run resumes
      // it. If it has ended already, its cost is final and counted here; otherwise the next run counts it.
      if (ours && executionId !== undefined) {
        const cost = await finalCost(client, executionId);
        if (cost !== undefined) this.#charge(executionId, cost);
      }
      return error;
    }
    // An execution that ran and then failed is charged too: the run's credits say so.
    if (ours && executionId !== undefined && isExecutionOutcome(error)) this.#charge(executionId, await chargedFor(client, executionId));
    if (!policyOf(error).keepRunState) await this.#state.forget();
    return this.#features.reduce((e, f) => (f.explain ? f.explain(e) : e), error);
  }

  /** `max_bytes`, then each feature's checks, from the execution's metadata before any page is fetched: each ends the resume. */
  async #checkResult(ready: Ready): Promise<void> {
    try {
      const overBytes = checkBytes(this.#job, ready.status);
      if (overBytes) throw overBytes;
      for (const feature of this.#features) await feature.beforeFetch?.(ready.status);
    } catch (error) {
      await this.#state.forget();
      throw error;
    }
  }

  /** Skip the outputs already committed for this execution, write the rest from one read. */
  async writeAll(started: Started): Promise<{ outputs: OutputSummary[]; written: Written | undefined }> {
    const job = this.#job;
    const features = this.#features;
    const { executionId, status } = started.ready;
    const totalRows = job.result?.filters === undefined ? status.result_metadata?.total_row_count : undefined;
    const summaries: (OutputSummary | undefined)[] = new Array(job.outputs.length).fill(undefined);
    const pending: number[] = [];
    for (const feature of features) await feature.beforeWrite?.(executionId);
    for (const [i, output] of job.outputs.entries()) {
      // A feature that leaves an output fewer rows than the result: no count to match.
      const rows = features.some((f) => f.drops?.(i) === true) ? undefined : totalRows;
      const done = await this.#options.outputs.at(i).skipIfCommitted(executionId, rows, this.#controller.signal);
      if (done === undefined || features.some((f) => f.rewrites?.(i) === true)) pending.push(i);
      else this.#report(summaries, i, { url: done.url, format: output.format.type, rows: done.rows, files: done.files, bytes: done.bytes, skipped: true, resumedFiles: 0, ...(done.snapshot ? { snapshot: done.snapshot } : {}) });
    }
    if (pending.length === 0 && !features.some((f) => f.writesBeside?.() === true)) return { outputs: summaries.map((s) => s!), written: undefined };
    const warn = this.#options.events?.onWarning;
    const written = await writeOutputs({
      outputs: this.#options.outputs,
      pending,
      executionId,
      result: started.result,
      controller: this.#controller,
      stop: this.#options.signal,
      features,
      on: { pageSize: (pageSize) => (this.#pageSize = pageSize) },
    });
    pending.forEach((index, k) => this.#report(summaries, index, writtenSummary(written.summaries[k]!, job.outputs[index]!.format.type, written.native[k] === true, warn)));
    return { outputs: summaries.map((s) => s!), written };
  }

  #report(summaries: (OutputSummary | undefined)[], index: number, summary: OutputSummary): void {
    summaries[index] = summary;
    this.#options.events?.onOutput?.(summary);
  }

  #summary(started: Started, done: { outputs: OutputSummary[]; written: Written | undefined }): AttemptResult {
    const { outputs, written } = done;
    const { decision, result, ready } = started;
    const resumed = decision.action === 'resume';
    const parts = this.#features.map((f) => f.summary?.() ?? {});
    return Object.assign(
      {
        job: this.#job.name,
        executionId: ready.executionId,
        startedExecution: ready.started && !resumed,
        resumed,
        resume: decision.resume,
        rows: outputs[0]?.rows ?? 0,
        fetchedRows: written?.fetchedRows ?? 0,
        pageBytes: { wire: result.progress?.wireBytes ?? 0, decoded: result.progress?.httpBytes ?? 0 },
        files: outputs.reduce((n, o) => n + o.files, 0),
        bytes: outputs.reduce((n, o) => n + o.bytes, 0),
        outputs,
      },
      ...parts,
    );
  }
}

/** An output written now, as the summary reports it; a mixed-schema output is said out loud (older files lack the new columns). */
function writtenSummary(s: ExportSummary, format: string, native: boolean, warn: RunEvents['onWarning']): OutputSummary {
  if (s.addedColumns) warn?.('appended rows with new columns: the older files of the output lack them (readers that merge files by name read NULL there)', { output: s.url, columns: s.addedColumns });
  const snapshot = s.commit?.snapshot;
  return { url: s.url, format, rows: s.rows, files: s.files.length, bytes: s.bytes, skipped: false, resumedFiles: s.resumedFiles, ...(snapshot ? { snapshot } : {}), decode: native ? 'native' : 'general' };
}

/** What an execution was charged, once final (it has ended); undefined while it runs or when it cannot be asked. */
async function finalCost(client: ServiceClient, executionId: string): Promise<number | undefined> {
  try {
    const status = await client.getStatus(executionId, { signal: AbortSignal.timeout(5_000) });
    return isTerminal(status.state) ? (status.execution_cost_credits ?? 0) : undefined;
  } catch {
    return undefined;
  }
}

/** What the service charged for a finished execution (0 when it cannot be asked). */
async function chargedFor(client: ServiceClient, executionId: string): Promise<number> {
  try {
    const status = await client.getStatus(executionId, { signal: AbortSignal.timeout(5_000) });
    return status.execution_cost_credits ?? 0;
  } catch {
    return 0;
  }
}

function isExecutionOutcome(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'EXECUTION_FAILED' || code === 'EXECUTION_CANCELED' || code === 'EXECUTION_EXPIRED' || code === 'PARTIAL_RESULT';
}
