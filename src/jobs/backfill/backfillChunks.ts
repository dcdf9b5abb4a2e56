import { ExecutionFailedError } from '../../client/errors.ts';
import type { Execution } from '../../client/execution.ts';
import type { ServiceClient } from '../../client/service-client.ts';
import type { Job } from '../../config/jobSchema.ts';
import { ConfigError } from '../../errors.ts';
import { type ExecutionStatus, holdsResult, isTerminal, type ParameterValue } from '../../protocol/index.ts';
import { halves, pointText, type RangeAxis, type Span, spanText } from '../../config/backfillRange.ts';
import type { BackfillState } from './backfillState.ts';
import { executionCost } from '../run/budget.ts';
import { sqlLiteral } from '../incremental/cursor.ts';
import { sourceInfo } from '../run/jobSource.ts';

/** One chunk whose result can be read: its range, its execution, its final status. */
export interface ReadyChunk {
  readonly span: Span;
  readonly executionId: string;
  readonly status: ExecutionStatus;
  readonly rows: number;
  /** Executed by an earlier, killed run and read now without executing it again. */
  readonly reused: boolean;
}

/** What the chunks cost and how they went, for the summary and the note. */
export interface ChunkTally {
  executed: number;
  reused: number;
  splits: number;
  credits: number;
}

export interface ChunkEvents {
  onExecution?(event: { executionId: string; started: boolean; resumed: boolean }): void;
  onWarning?(message: string, fields: Record<string, unknown>): void;
}

export interface RunChunksOptions {
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  readonly state: BackfillState;
  readonly events?: ChunkEvents | undefined;
  /** Called with each execution's credits as soon as it is final, so a failed run still counts them. */
  readonly onCredits?: (credits: number) => void;
}

/**
 * A chunk that cannot be read whole even at the smallest size: its result is truncated
 * (COMPLETED_PARTIAL) or its execution times out. Names the range; a mistake of the job's
 * sizes (or the plan's limits), not retried.
 */
export class BackfillChunkError extends ConfigError {
  override readonly code: string = 'BACKFILL_CHUNK_TOO_LARGE';
}

/**
 * Executes every chunk of the backfill, at most `concurrency` at once (and never more than the
 * team's concurrent executions, once the service has said how many), and resolves with the
 * chunks in range order once each one's result can be read. A chunk whose result comes back
 * truncated or whose execution times out is halved, and the halves run in its place, down to the
 * floor. Every execution is recorded before it is waited for, so a killed run's next run waits
 * for it or reads it rather than paying for it again.
 */
export async function runChunks(job: Job, axis: RangeAxis, spans: readonly Span[], options: RunChunksOptions): Promise<{ chunks: ReadyChunk[]; tally: ChunkTally }> {
  const tally: ChunkTally = { executed: 0, reused: 0, splits: 0, credits: 0 };
  const slots = new Slots(job.backfill!.concurrency ?? DEFAULT_CONCURRENCY);
  const runner = new ChunkRunner(job, axis, options, tally, slots);
  return { chunks: await runner.settleAll(spans), tally };
}

export const DEFAULT_CONCURRENCY = 2;

class ChunkRunner {
  readonly #job: Job;
  readonly #axis: RangeAxis;
  readonly #options: RunChunksOptions;
  readonly #tally: ChunkTally;
  readonly #slots: Slots;
  /** Aborted by the first chunk that fails: the others stop waiting (and this run's executions are cancelled). */
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;

  constructor(job: Job, axis: RangeAxis, options: RunChunksOptions, tally: ChunkTally, slots: Slots) {
    this.#job = job;
    this.#axis = axis;
    this.#options = options;
    this.#tally = tally;
    this.#slots = slots;
    this.#signal = AbortSignal.any([options.signal, this.#stop.signal]);
  }

  /** The ready chunks that cover `spans`, in order, once every one has settled (the first failure then). */
  async settleAll(spans: readonly Span[]): Promise<ReadyChunk[]> {
    const settled = await Promise.allSettled(spans.map((span) => this.#settle(span)));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    return settled.flatMap((s) => (s as PromiseFulfilledResult<ReadyChunk[]>).value);
  }

  /** The ready chunks that cover `span`, in order. */
  async #settle(span: Span): Promise<ReadyChunk[]> {
    try {
      const outcome = await this.#attempt(span);
      if ('ready' in outcome) return [outcome.ready];
      // The halves run in the chunk's place, each taking a slot of its own (this one's is given back).
      const parts = 'halve' in outcome ? await this.#halve(span, outcome.executionId, outcome.halve) : halves(span, this.#axis.floor)!;
      return await this.settleAll(parts);
    } catch (error) {
      this.#stop.abort(error);
      throw error;
    }
  }

  /** One chunk: what a killed run left of it (read, waited for, halved), else a new execution. */
  async #attempt(span: Span): Promise<Outcome> {
    const kind = this.#axis.kind;
    const record = this.#options.state.find(pointText(kind, span.from), pointText(kind, span.to));
    if (record?.state === 'split' && halves(span, this.#axis.floor) !== undefined) return { split: true };
    const status = record === undefined ? undefined : await this.#statusOf(record.execution_id);
    if (record === undefined || status === undefined) return this.#slots.use(this.#signal, () => this.#execute(span));
    if (status.state === 'QUERY_STATE_COMPLETED' || !isTerminal(status.state)) {
      // Executed by the killed run: read as it is, or waited for while it still runs; never started again.
      this.#tally.reused++;
      this.#options.events?.onExecution?.({ executionId: record.execution_id, started: false, resumed: true });
      if (isTerminal(status.state)) return { ready: { span, executionId: record.execution_id, status, rows: status.result_metadata?.total_row_count ?? 0, reused: true } };
      const execution = this.#options.client.execution(record.execution_id);
      return this.#slots.use(this.#signal, () => this.#finish(span, execution, false));
    }
    if (holdsResult(status)) return { halve: 'came back truncated (COMPLETED_PARTIAL)', executionId: record.execution_id };
    return this.#slots.use(this.#signal, () => this.#execute(span)); // failed, cancelled or expired: executed anew
  }

  async #statusOf(executionId: string): Promise<ExecutionStatus | undefined> {
    try {
      return await this.#options.client.getStatus(executionId, { signal: this.#signal });
    } catch (error) {
      if (this.#signal.aborted) throw error;
      return undefined; // gone: executed anew
    }
  }

  async #execute(span: Span): Promise<Outcome> {
    const { client } = this.#options;
    const performance = this.#job.performance;
    const execution = await client.execute(this.#input(span), { ...(performance === undefined ? {} : { performance }), signal: this.#signal });
    this.#tally.executed++;
    // Recorded before waiting: a kill from here on finds this execution instead of paying for another.
    await this.#record(span, { state: 'running', execution_id: execution.id });
    this.#options.events?.onExecution?.({ executionId: execution.id, started: true, resumed: false });
    return this.#finish(span, execution, true);
  }

  /** Waits for the chunk's execution: ready, or to be halved when truncated or timed out. */
  async #finish(span: Span, execution: Execution, startedNow: boolean): Promise<Outcome> {
    let status: ExecutionStatus;
    try {
      status = await execution.wait({ signal: this.#signal, allowPartialResults: true });
    } catch (error) {
      if (this.#signal.aborted) {
        // Stopped: what this run started is cancelled (the next run executes it anew).
        if (startedNow) await execution.cancel({ signal: AbortSignal.timeout(5_000) }).catch(() => false);
        throw error;
      }
      if (!timedOut(error)) throw error;
      return { halve: 'timed out', executionId: execution.id };
    }
    this.#charge(status, startedNow);
    this.#slots.limit(status.max_inflight_interactive_executions);
    if (status.state === 'QUERY_STATE_COMPLETED_PARTIAL') return { halve: 'came back truncated (COMPLETED_PARTIAL)', executionId: execution.id };
    const rows = status.result_metadata?.total_row_count ?? 0;
    await this.#record(span, { state: 'done', execution_id: execution.id, rows });
    return { ready: { span, executionId: execution.id, status, rows, reused: !startedNow } };
  }

  #charge(status: ExecutionStatus, startedNow: boolean): void {
    if (!startedNow) return;
    const credits = status.execution_cost_credits ?? executionCost(this.#job);
    this.#tally.credits += credits;
    this.#options.onCredits?.(credits);
  }

  /** The halves of a chunk to run in its place, recorded; at the floor, the error that names its range. */
  async #halve(span: Span, executionId: string, why: string): Promise<[Span, Span]> {
    const range = spanText(this.#axis.kind, span);
    const parts = halves(span, this.#axis.floor);
    if (parts === undefined) {
      const floor = this.#job.backfill!.min_chunk ?? `${this.#axis.floor} ${FLOOR_UNIT[this.#axis.kind]}`;
      throw new BackfillChunkError(
        `job ${this.#job.name}: backfill chunk ${range} ${why} (execution ${executionId}) and cannot be halved above min_chunk ${JSON.stringify(floor)}: lower backfill.min_chunk, select fewer columns, or raise the service's result size limit or timeout`,
      );
    }
    this.#tally.splits++;
    this.#options.events?.onWarning?.(`backfill chunk ${range} ${why}: halved and run again`, { executionId, chunk: range });
    await this.#record(span, { state: 'split', execution_id: executionId });
    return parts;
  }

  #record(span: Span, chunk: { state: 'running' | 'done' | 'split'; execution_id: string; rows?: number }): Promise<void> {
    const kind = this.#axis.kind;
    return this.#options.state.record({ from: pointText(kind, span.from), to: pointText(kind, span.to), ...chunk });
  }

  /** The execution of one chunk: the job's SQL with the bounds in its placeholders, or its saved query with them as parameters. */
  #input(span: Span): { sql: string } | { queryId: number; parameters: Record<string, ParameterValue> } {
    const { parameters } = this.#job.backfill!;
    const kind = this.#axis.kind;
    const bounds = { [parameters.from]: span.from, [parameters.to]: span.to };
    const source = this.#job.source;
    if ('sql' in source) {
      const literal = (point: bigint) => sqlLiteral(kind, pointText(kind, point));
      const pattern = new RegExp(`\\{\\{\\s*(${parameters.from}|${parameters.to})\\s*\\}\\}`, 'g');
      return { sql: source.sql.replace(pattern, (_, name: string) => literal(bounds[name]!)) };
    }
    const info = sourceInfo(this.#job);
    const value = (point: bigint): ParameterValue => (kind === 'integer' && Number.isSafeInteger(Number(point)) ? Number(point) : pointText(kind, point));
    return { queryId: info.queryId!, parameters: { ...info.parameters, [parameters.from]: value(span.from), [parameters.to]: value(span.to) } };
  }
}

type Outcome = { readonly ready: ReadyChunk } | { readonly halve: string; readonly executionId: string } | { readonly split: true };

const FLOOR_UNIT = { integer: 'values', date: 'days', timestamp: 'ms' } as const;

function timedOut(error: unknown): boolean {
  if (!(error instanceof ExecutionFailedError)) return false;
  return /TIMEOUT/i.test(error.errorType ?? '') || /exceeded the execution timeout|timed out/i.test(error.message);
}

/**
 * At most `limit` chunk executions running at once, in the order they asked. The limit only
 * comes down (to the team's concurrent executions, when a status reports them).
 */
class Slots {
  #limit: number;
  #busy = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  limit(plan: number | undefined): void {
    if (plan !== undefined && plan > 0 && plan < this.#limit) this.#limit = plan;
  }

  async use<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    while (this.#busy >= this.#limit) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiting.push(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    signal.throwIfAborted();
    this.#busy++;
    try {
      return await work();
    } finally {
      this.#busy--;
      this.#waiting.shift()?.();
    }
  }
}
