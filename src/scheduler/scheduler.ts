import { Cron } from 'croner';
import type { Clock } from './clock.ts';
import type { Metrics } from './metrics.ts';

export interface ScheduledJob {
  readonly name: string;
  readonly schedule: string;
  readonly timezone?: string | undefined;
}

/**
 * What a run reports back. A run that failed after spending credits reports them with its `error`
 * (so the metrics count what the run history records); a thrown error counts as a failed run
 * that spent nothing.
 */
export interface RunOutcome {
  readonly rows: number;
  readonly bytes: number;
  readonly credits: number;
  readonly error?: unknown;
}

/** How a run ended: its outcome, or what it threw. */
export type FinishedRun = { ok: true; result: RunOutcome; durationMs: number } | { ok: false; error: unknown; durationMs: number };

export interface SchedulerEvents {
  onStart?(job: string, at: Date): void;
  onFinish?(job: string, outcome: FinishedRun): void;
  onSkip?(job: string, at: Date): void;
}

export interface SchedulerOptions {
  readonly jobs: readonly ScheduledJob[];
  /** Runs one job; must stop promptly (cancelling remote work) when `signal` aborts. */
  readonly run: (job: string, signal: AbortSignal) => Promise<RunOutcome>;
  readonly clock: Clock;
  readonly metrics?: Metrics;
  readonly events?: SchedulerEvents;
}

export interface StopResult {
  /** Runs still going when the grace period ended (they were abandoned). */
  readonly abandoned: readonly string[];
}

/**
 * Runs each job on its cron. One loop per job computes the next tick from the clock, sleeps,
 * and starts a run unless the previous one is still going (then the tick is skipped and
 * counted, never queued: a slow job must not pile up runs). Runs are detached from the loop so
 * a long run does not delay the computation of the next tick.
 */
export class Scheduler {
  readonly #options: SchedulerOptions;
  readonly #stopping = new AbortController();
  readonly #running = new Map<string, { promise: Promise<void>; controller: AbortController }>();
  #loops: Promise<void>[] = [];

  constructor(options: SchedulerOptions) {
    this.#options = options;
  }

  get stopping(): boolean {
    return this.#stopping.signal.aborted;
  }

  /** Names of the jobs with a run in progress. */
  get running(): string[] {
    return [...this.#running.keys()];
  }

  start(): void {
    this.#loops = this.#options.jobs.map((job) => this.#loop(job));
  }

  /** Starts a run of `job` now unless one is going or the scheduler is stopping; true if started. */
  trigger(job: string): boolean {
    if (this.stopping || this.#running.has(job) || !this.#options.jobs.some((j) => j.name === job)) return false;
    this.#startRun(job, this.#options.clock.now());
    return true;
  }

  /** The next tick of a job after `from` (for `sluice schedule` to print its plan). */
  static nextRun(job: ScheduledJob, from: Date): Date | undefined {
    const cron = new Cron(job.schedule, { paused: true, timezone: job.timezone ?? 'UTC' });
    const next = cron.nextRun(from) ?? undefined;
    cron.stop();
    return next;
  }

  /**
   * Stops starting runs, aborts the runs in progress (they cancel their executions and abort
   * their uploads) and waits for them up to `graceMs` of real time.
   */
  async stop(graceMs: number, reason: unknown = new Error('scheduler stopping')): Promise<StopResult> {
    this.#stopping.abort(reason);
    for (const { controller } of this.#running.values()) controller.abort(reason);
    await Promise.allSettled(this.#loops);
    const pending = [...this.#running.entries()];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
      timer.unref();
    });
    const result = await Promise.race([Promise.allSettled(pending.map(([, r]) => r.promise)).then(() => 'done' as const), timedOut]);
    clearTimeout(timer);
    return { abandoned: result === 'timeout' ? [...this.#running.keys()] : [] };
  }

  async #loop(job: ScheduledJob): Promise<void> {
    const { clock } = this.#options;
    const signal = this.#stopping.signal;
    const cron = new Cron(job.schedule, { paused: true, timezone: job.timezone ?? 'UTC' });
    try {
      while (!signal.aborted) {
        const next = cron.nextRun(clock.now());
        if (!next) return;
        try {
          await clock.sleepUntil(next, signal);
        } catch {
          return; // stopping
        }
        if (signal.aborted) return;
        if (this.#running.has(job.name)) {
          this.#options.metrics?.skipped(job.name);
          this.#options.events?.onSkip?.(job.name, next);
          continue;
        }
        this.#startRun(job.name, next);
      }
    } finally {
      cron.stop();
    }
  }

  #startRun(name: string, at: Date): void {
    const { metrics, events, clock } = this.#options;
    const controller = new AbortController();
    const started = performance.now();
    metrics?.started(name);
    events?.onStart?.(name, at);
    const promise = (async () => {
      try {
        const result = await this.#options.run(name, controller.signal);
        const durationMs = performance.now() - started;
        const ok = result.error === undefined;
        metrics?.finished({ job: name, ok, rows: result.rows, bytes: result.bytes, credits: result.credits, durationMs, endedAt: clock.now() });
        events?.onFinish?.(name, ok ? { ok: true, result, durationMs } : { ok: false, error: result.error, durationMs });
      } catch (error) {
        const durationMs = performance.now() - started;
        metrics?.finished({ job: name, ok: false, rows: 0, bytes: 0, credits: 0, durationMs, endedAt: clock.now() });
        events?.onFinish?.(name, { ok: false, error, durationMs });
      } finally {
        this.#running.delete(name);
      }
    })();
    this.#running.set(name, { promise, controller });
  }
}
