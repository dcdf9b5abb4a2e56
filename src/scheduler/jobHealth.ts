/** Why a run failed, as /status and the log show it: the error's code (PAYMENT_REQUIRED, ...) and message. */
export interface RunFailure {
  readonly code: string;
  readonly message: string;
}

/** What one job's recent runs say, for `/readyz` and `/status`. */
export interface JobHealthState {
  readonly job: string;
  readonly runs: number;
  readonly failures: number;
  /** Failed runs in a row, up to the last one (0 after a success). */
  readonly consecutiveFailures: number;
  /** True once the last `failingAfter` runs all failed. */
  readonly failing: boolean;
  readonly lastOutcome?: 'succeeded' | 'failed' | 'stopped';
  readonly lastEndedAt?: Date;
  readonly lastSuccessAt?: Date;
  /** The last failure's cause; kept after a success (`consecutiveFailures` says it is past). */
  readonly lastFailure?: RunFailure;
}

/** A job's health changed: it began failing, failed for another reason, or recovered. */
export type HealthChange =
  | { readonly kind: 'failing'; readonly state: JobHealthState }
  | { readonly kind: 'cause changed'; readonly state: JobHealthState; readonly previous: RunFailure }
  | { readonly kind: 'recovered'; readonly state: JobHealthState };

/** How many failed runs in a row make a job failing, unless told otherwise. */
export const DEFAULT_FAILING_AFTER = 3;

type Mutable = { -readonly [K in keyof JobHealthState]: JobHealthState[K] };

/**
 * Each job's recent runs, told about every run's end. A job is failing once its last
 * `failingAfter` runs failed; `onChange` is called once per change of that (and when a failing
 * job's cause changes, say from RATE_LIMITED to PAYMENT_REQUIRED), never once per run, so that a
 * log says "failing since ..." once instead of the same error every minute for weeks.
 * A run stopped by the scheduler's own shutdown is neither a success nor a failure.
 */
export class JobHealth {
  readonly #failingAfter: number;
  readonly #onChange: ((change: HealthChange) => void) | undefined;
  readonly #jobs = new Map<string, Mutable>();

  constructor(jobs: readonly string[], options: { failingAfter?: number; onChange?: (change: HealthChange) => void } = {}) {
    this.#failingAfter = options.failingAfter ?? DEFAULT_FAILING_AFTER;
    if (!(Number.isInteger(this.#failingAfter) && this.#failingAfter >= 1)) throw new RangeError(`failingAfter must be a whole number of runs, at least 1; got ${this.#failingAfter}`);
    this.#onChange = options.onChange;
    for (const job of jobs) this.#jobs.set(job, { job, runs: 0, failures: 0, consecutiveFailures: 0, failing: false });
  }

  get failingAfter(): number {
    return this.#failingAfter;
  }

  succeeded(job: string, at: Date): void {
    const s = this.#get(job);
    s.runs += 1;
    s.consecutiveFailures = 0;
    s.lastOutcome = 'succeeded';
    s.lastEndedAt = at;
    s.lastSuccessAt = at;
    if (s.failing) {
      s.failing = false;
      this.#onChange?.({ kind: 'recovered', state: { ...s } });
    }
  }

  failed(job: string, at: Date, error: unknown): void {
    const s = this.#get(job);
    const previous = s.lastFailure;
    s.runs += 1;
    s.failures += 1;
    s.consecutiveFailures += 1;
    s.lastOutcome = 'failed';
    s.lastEndedAt = at;
    s.lastFailure = failureOf(error);
    if (!s.failing && s.consecutiveFailures >= this.#failingAfter) {
      s.failing = true;
      this.#onChange?.({ kind: 'failing', state: { ...s } });
    } else if (s.failing && previous !== undefined && previous.code !== s.lastFailure.code) {
      this.#onChange?.({ kind: 'cause changed', state: { ...s }, previous });
    }
  }

  /** A run stopped by shutdown: recorded as the last outcome, counted neither way. */
  stopped(job: string, at: Date): void {
    const s = this.#get(job);
    s.lastOutcome = 'stopped';
    s.lastEndedAt = at;
  }

  /** Whether a failure of `job` now would be one more of the same while it is failing (nothing new to log). */
  isFailing(job: string): boolean {
    return this.#get(job).failing;
  }

  states(): JobHealthState[] {
    return [...this.#jobs.values()].map((s) => ({ ...s }));
  }

  failingJobs(): JobHealthState[] {
    return this.states().filter((s) => s.failing);
  }

  #get(job: string): Mutable {
    let s = this.#jobs.get(job);
    if (s === undefined) {
      s = { job, runs: 0, failures: 0, consecutiveFailures: 0, failing: false };
      this.#jobs.set(job, s);
    }
    return s;
  }
}

/** The code a failure is known by: the error's `code` (the service's, the run's), else its class name. */
export function failureOf(error: unknown): RunFailure {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { code: typeof code === 'string' && code !== '' ? code : error.name, message: error.message };
  }
  return { code: 'ERROR', message: String(error) };
}
