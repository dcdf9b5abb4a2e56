import {
  holdsResult,
  isTerminal,
  MESSAGES,
  PATHS,
  type ExecutionError,
  type ExecutionState,
  type ExecutionStatus,
  type ParameterValue,
  type Performance,
  type ResultOptions,
  type ResultPage,
} from '../protocol/index.ts';
import {
  AbortedError,
  ExecutionCanceledError,
  ExecutionExpiredError,
  ExecutionFailedError,
  InvalidArgumentError,
  InvalidResponseError,
  NotFoundError,
  PartialResultError,
  TimeoutError,
  type ErrorContext,
} from './errors.ts';
import { compileRowDecoder, sameColumns, type ColumnSpec, type DecodeOptions, type Row, type RowDecoder } from '../types/decode.ts';
import { sleep } from './retry.ts';
import type { CsvPage, ServiceClient } from './service-client.ts';
import { sqlExcerpt } from './sql-excerpt.ts';

export type ExecuteInput = { sql: string } | { queryId: number; parameters?: Record<string, ParameterValue> };

/** Polling starts fast (most executions here take milliseconds) and backs off to a cap. */
export const DEFAULT_WAIT = Object.freeze({ pollIntervalMs: 50, maxPollIntervalMs: 2_000, backoffFactor: 2 });

/**
 * Under a read rate limit, polls grow with the time the execution has taken so far (the best guess
 * of the time it still needs): a quarter of it, up to a minute, and never closer than four read
 * tokens apart once past `maxPollIntervalMs`. Polls come out of the same budget as pages; an
 * execution that runs for minutes must not spend it all on asking whether it is done.
 */
export const GOVERNED_POLL = Object.freeze({ elapsedShare: 0.25, tokens: 4, maxIntervalMs: 60_000 });

/** The wait before the next poll: doubling up to `cap`, and with a read rate limit `readRpm`, as `GOVERNED_POLL` says. */
export function nextPollInterval(interval: number, cap: number, elapsedMs: number, readRpm: number): number {
  const doubled = interval * DEFAULT_WAIT.backoffFactor;
  if (!(readRpm > 0)) return Math.min(cap, doubled);
  const expected = Math.min(elapsedMs * GOVERNED_POLL.elapsedShare, GOVERNED_POLL.maxIntervalMs);
  const ceiling = Math.max(cap, (GOVERNED_POLL.tokens * 60_000) / readRpm, expected);
  return Math.min(ceiling, Math.max(doubled, expected));
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Give up (TimeoutError) when the execution is not finished this many ms after `wait()` began. */
  deadlineMs?: number;
  /** First poll interval; doubles up to `maxPollIntervalMs`. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Accept a COMPLETED_PARTIAL (truncated) result instead of raising PartialResultError. */
  allowPartialResults?: boolean;
  /** Called after each unfinished poll with the state seen and the wait before the next poll. */
  onPoll?: (event: { state: ExecutionState; nextPollInMs: number }) => void;
}

/** How rows are typed: as `stream()` types them (types.md), with the same options. */
export interface RowTyping {
  /** `date` values as `YYYY-MM-DD` strings (default) or Dates at UTC midnight. */
  dates?: DecodeOptions['dates'];
  /**
   * Timestamps as Dates (default `auto`; a zoneless one beyond milliseconds as its exact text), or
   * exactly: `micros` / `nanos` (bigint since the epoch), `string` (the wire text).
   */
  timestamps?: DecodeOptions['timestamps'];
}

export interface RowsOptions extends ResultOptions, RowTyping {
  signal?: AbortSignal;
}

export interface RunOptions extends WaitOptions, Omit<RowsOptions, 'signal' | 'allowPartialResults'> {
  performance?: Performance;
}

export interface LatestResultOptions {
  /** Re-execute when the stored result ended longer ago than this; absent: any age will do. */
  maxAgeHours?: number;
  parameters?: Record<string, ParameterValue>;
  /** Tier of the fresh execution, when one is needed. */
  performance?: Performance;
  signal?: AbortSignal;
}

type Outcome = Pick<ExecutionStatus, 'state'> & { error?: ExecutionError | undefined; cancelled_at?: string | undefined; expires_at?: string | undefined };

/**
 * A handle on one execution: `status()`, `wait()`, `cancel()`, and `rows()` / `pages()` / `csvPages()`
 * over the whole result. It holds no result data; every call asks the service.
 */
export class Execution {
  readonly id: string;
  /** The SQL text when known (executions submitted as SQL): used to point at a failure. */
  readonly sql: string | undefined;
  /** True when `getLatestResult` returned a stored result instead of starting an execution. */
  readonly reused: boolean;
  readonly #client: ServiceClient;
  #finished: ExecutionStatus | undefined;

  constructor(client: ServiceClient, id: string, sql?: string, reused = false) {
    this.#client = client;
    this.id = id;
    this.sql = sql;
    this.reused = reused;
  }

  static fromId(client: ServiceClient, id: string, sql?: string): Execution {
    if (typeof id !== 'string' || id === '') {
      throw new InvalidArgumentError(`executionId must be a non-empty string, got ${JSON.stringify(id)}`, { method: 'execution' });
    }
    return new Execution(client, id, sql);
  }

  static async latest(client: ServiceClient, queryId: number, options: LatestResultOptions = {}): Promise<Execution> {
    const { maxAgeHours, parameters, signal } = options;
    if (maxAgeHours !== undefined && !(maxAgeHours >= 0)) {
      throw new InvalidArgumentError(`maxAgeHours must be a number >= 0, got ${maxAgeHours}`, { method: 'getLatestResult' });
    }
    const { page, fresh } = await findLatest(client, queryId, { parameters, maxAgeHours, signal });
    if (page && fresh) return new Execution(client, page.execution_id, undefined, true);
    return client.execute({ queryId, parameters }, { performance: options.performance, signal });
  }

  status(options: { signal?: AbortSignal } = {}): Promise<ExecutionStatus> {
    return this.#client.getStatus(this.id, options);
  }

  /** Asks the service to stop the execution; true when it accepted. */
  cancel(options: { signal?: AbortSignal } = {}): Promise<boolean> {
    return this.#client.cancel(this.id, options);
  }

  /**
   * Polls until the execution is finished and returns its final status when it completed.
   * FAILED, CANCELLED, EXPIRED and (unless allowed) COMPLETED_PARTIAL are raised as their error classes.
   * The caller's signal stops polling at once, also in the middle of a wait between polls.
   */
  async wait(options: WaitOptions = {}): Promise<ExecutionStatus> {
    const started = Date.now();
    const deadline = options.deadlineMs === undefined ? Infinity : started + options.deadlineMs;
    const cap = options.maxPollIntervalMs ?? DEFAULT_WAIT.maxPollIntervalMs;
    let interval = Math.min(options.pollIntervalMs ?? DEFAULT_WAIT.pollIntervalMs, cap);
    let last: ExecutionState | undefined;
    for (;;) {
      const status = await this.#pollWithin(deadline, started, options, last);
      last = status.state;
      if (isTerminal(status.state)) {
        this.settle(status, 'wait', options.allowPartialResults ?? false);
        this.#finished = status;
        return status;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw this.#deadlineError(started, options.deadlineMs, status.state);
      const nextPollInMs = Math.min(interval, remaining);
      options.onPoll?.({ state: status.state, nextPollInMs });
      await sleep(nextPollInMs, options.signal, this.#ctx('wait'));
      interval = nextPollInterval(interval, cap, Date.now() - started, this.#client.governor.perMinute('read'));
    }
  }

  /**
   * One status request, cut short by the deadline too (a slow answer must not stretch `deadlineMs`).
   * `last` is the state the previous poll saw, for the deadline message.
   */
  async #pollWithin(deadline: number, started: number, options: WaitOptions, last: ExecutionState | undefined): Promise<ExecutionStatus> {
    if (deadline === Infinity) return this.status({ signal: options.signal });
    const timer = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
    const signal = options.signal ? AbortSignal.any([options.signal, timer]) : timer;
    try {
      return await this.status({ signal });
    } catch (err) {
      if (err instanceof AbortedError && timer.aborted && !options.signal?.aborted) throw this.#deadlineError(started, options.deadlineMs, last, true);
      throw err;
    }
  }

  #deadlineError(started: number, deadlineMs: number | undefined, state: ExecutionState | undefined, unanswered = false): TimeoutError {
    const known = state === undefined ? 'no state known yet' : `last known state ${state}`;
    const what = unanswered ? `status request unanswered (${known})` : `execution still ${state}`;
    return new TimeoutError(`${what} after ${Date.now() - started} ms (deadlineMs ${deadlineMs})`, { ...this.#ctx('wait'), retryable: false });
  }

  /**
   * Every page of the result, in order, following `next_offset` as the service gives it (a page may
   * hold fewer rows than asked before the end, so offsets are never computed from `limit`). Waits for
   * the execution first if it is not known to be finished. `limit` is the page size asked for.
   */
  async *pages(options: RowsOptions = {}): AsyncGenerator<ResultPage> {
    if (!this.#finished) await this.wait({ signal: options.signal, allowPartialResults: options.allowPartialResults });
    let offset = options.offset;
    for (;;) {
      const page = await this.#client.getResults(this.id, { ...options, offset });
      if (!page.result) {
        this.settle(page, 'rows', options.allowPartialResults ?? false);
        throw new InvalidResponseError(`page of a ${page.state} execution has no result`, this.#ctx('rows'));
      }
      yield page;
      const next = page.next_offset;
      if (next === undefined) return;
      if (next <= (offset ?? 0)) {
        throw new InvalidResponseError(`next_offset ${next} does not advance past offset ${offset ?? 0}`, this.#ctx('rows'));
      }
      offset = next;
    }
  }

  /**
   * Every CSV page of the result, in order, following `x-service-next-offset` (protocol.md section 4).
   * Each page's text has the header row; waits for the execution first, like `pages()`.
   */
  async *csvPages(options: RowsOptions = {}): AsyncGenerator<CsvPage> {
    if (!this.#finished) await this.wait({ signal: options.signal, allowPartialResults: options.allowPartialResults });
    let offset = options.offset;
    for (;;) {
      const page = await this.#client.getResultsCsv(this.id, { ...options, offset });
      yield page;
      const next = page.nextOffset;
      if (next === undefined) return;
      if (next <= (offset ?? 0)) {
        throw new InvalidResponseError(`x-service-next-offset ${next} does not advance past offset ${offset ?? 0}`, this.#ctx('csvPages'));
      }
      offset = next;
    }
  }

  /**
   * Every row of the result as an object keyed by column name, typed from `column_types` as
   * `stream()` types them (`dates` and `timestamps` as there). `pages()` has the values as sent.
   */
  async *rows(options: RowsOptions = {}): AsyncGenerator<Row> {
    const { dates, timestamps, ...pageOptions } = options;
    let columns: ColumnSpec[] = [];
    let decode: RowDecoder | undefined;
    let at = options.offset ?? 0;
    for await (const page of this.pages(pageOptions)) {
      const result = page.result!;
      const { column_names: names, column_types: types } = result.metadata;
      if (decode === undefined || !sameColumns(columns, names, types)) {
        columns = names.map((name, i) => ({ name, type: types[i] ?? 'varchar' }));
        decode = compileRowDecoder(columns, { dates, timestamps });
      }
      for (const raw of result.rows) yield decode(raw, at++);
    }
  }

  /** Raises the error class of a terminal state that is not a (permitted) completion. */
  settle(outcome: Outcome, method: string, allowPartial: boolean): void {
    const ctx = this.#ctx(method);
    const state: ExecutionState = outcome.state;
    switch (state) {
      case 'QUERY_STATE_FAILED': {
        const e = outcome.error;
        const line = e?.metadata?.line;
        const column = e?.metadata?.column;
        throw new ExecutionFailedError(`execution failed: ${e?.message ?? '(no error details)'}`, {
          ...ctx,
          line,
          column,
          errorType: e?.type,
          excerpt: this.sql === undefined ? undefined : sqlExcerpt(this.sql, line, column),
        });
      }
      case 'QUERY_STATE_CANCELLED':
        throw new ExecutionCanceledError(`execution was canceled${outcome.cancelled_at ? ` at ${outcome.cancelled_at}` : ''}`, ctx);
      case 'QUERY_STATE_EXPIRED':
        throw new ExecutionExpiredError(`result expired${outcome.expires_at ? ` at ${outcome.expires_at}` : ''}; execute the query again`, ctx);
      case 'QUERY_STATE_COMPLETED_PARTIAL':
        if (!allowPartial) {
          throw new PartialResultError('the result was truncated (COMPLETED_PARTIAL); pass allowPartialResults: true to read it', ctx);
        }
    }
  }

  #ctx(method: string): ErrorContext {
    return { method, url: `GET ${this.#client.baseUrl}${PATHS.status(this.id)}`, executionId: this.id };
  }
}

/**
 * The latest stored result of a saved query (its first row only: enough to learn which execution
 * holds it and when it ended; undefined when there is none) and whether it may be reused: it holds
 * a result and ended at most `maxAgeHours` ago. The one freshness rule: `getLatestResult` follows
 * it, and a job's plan reports it.
 */
export async function findLatest(
  client: Pick<ServiceClient, 'getLatestResultPage'>,
  queryId: number,
  options: Pick<LatestResultOptions, 'parameters' | 'maxAgeHours' | 'signal'>,
): Promise<{ page: ResultPage | undefined; fresh: boolean }> {
  let page: ResultPage | undefined;
  try {
    page = await client.getLatestResultPage(queryId, { parameters: options.parameters, limit: 1, allowPartialResults: true, signal: options.signal });
  } catch (err) {
    if (!(err instanceof NotFoundError && err.serverMessage === MESSAGES.noLatestResult)) throw err;
  }
  return { page, fresh: page !== undefined && isFresh(page, options.maxAgeHours) };
}

function isFresh(page: ResultPage, maxAgeHours: number | undefined): boolean {
  if (!holdsResult(page)) return false;
  if (maxAgeHours === undefined) return true;
  const ended = page.execution_ended_at === undefined ? NaN : Date.parse(page.execution_ended_at);
  return Number.isFinite(ended) && Date.now() - ended <= maxAgeHours * 3_600_000;
}
