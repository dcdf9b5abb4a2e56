// Cancel and timeout of one execution. DuckDB forgets an interrupt that arrives while no
// statement of the connection runs (the flag is cleared as the next statement starts), so a stop
// is checked before each statement (`check`) and every connection of the execution is interrupted
// again every few milliseconds until the execution settles (`stopRepeating`).
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError } from '../types.ts';
import { INTERRUPT_REPEAT_MS } from '../connections.ts';

export type StopReason = 'canceled' | 'timeout';

export function stopError(why: StopReason, timeoutMs?: number): EngineError {
  return why === 'canceled'
    ? new EngineError('canceled', 'Query was canceled')
    : new EngineError('timeout', `Query exceeded the execution timeout of ${timeoutMs} ms`);
}

export class Stopper {
  /** The execution's connections (the user's, the result writer's, the encoders'): interrupted on a stop. */
  readonly conns = new Set<DuckDBConnection>();
  /** Aborted on a stop: ends a wait for memory room. */
  readonly waiting = new AbortController();
  #reason: StopReason | undefined;
  #repeat: NodeJS.Timeout | undefined;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #signal: AbortSignal;
  readonly #timeoutMs: number | undefined;
  readonly #closed: () => boolean;
  readonly #onAbort = (): void => this.#stop('canceled');

  constructor(signal: AbortSignal, timeoutMs: number | undefined, closed: () => boolean) {
    this.#signal = signal;
    this.#timeoutMs = timeoutMs;
    this.#closed = closed;
    signal.addEventListener('abort', this.#onAbort, { once: true });
    if (signal.aborted) this.#reason = 'canceled';
    this.#timer = timeoutMs !== undefined ? setTimeout(() => this.#stop('timeout'), timeoutMs) : undefined;
  }

  /** Whether the execution was stopped (or the engine is closing). */
  get stopped(): boolean {
    return this.#reason !== undefined || this.#closed();
  }

  /** The error of the stop, if the execution was stopped by its caller or its timeout. */
  get error(): EngineError | undefined {
    return this.#reason === undefined ? undefined : stopError(this.#reason, this.#timeoutMs);
  }

  /** Throws when the execution was stopped: called before each step. */
  check(): void {
    const err = this.error;
    if (err) throw err;
    if (this.#closed()) throw new EngineError('canceled', 'Query was canceled: the service is stopping');
  }

  #interruptAll(): void {
    for (const c of this.conns) c.interrupt();
  }

  #stop(why: StopReason): void {
    if (this.#reason) return;
    this.#reason = why;
    this.waiting.abort(stopError(why, this.#timeoutMs));
    this.#interruptAll();
    // The interrupt above is lost when it lands between two statements: keep interrupting.
    this.#repeat = setInterval(() => this.#interruptAll(), INTERRUPT_REPEAT_MS);
  }

  /** Cleanup statements must not be interrupted (a failed DETACH would leave the file attached). */
  stopRepeating(): void {
    if (this.#repeat !== undefined) clearInterval(this.#repeat);
    this.#repeat = undefined;
  }

  dispose(): void {
    this.stopRepeating();
    if (this.#timer) clearTimeout(this.#timer);
    this.#signal.removeEventListener('abort', this.#onAbort);
  }
}
