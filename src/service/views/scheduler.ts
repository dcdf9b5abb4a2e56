import type { Clock } from '../clock.ts';
import { PeriodicTask } from '../periodic.ts';
import { nextRunAfter } from './cron.ts';
import { fullViewName } from './naming.ts';
import type { ViewRegistry } from './registry.ts';
import type { ViewRecord } from './viewRecord.ts';

export interface ViewSchedulerDeps {
  clock: Clock;
  registry: ViewRegistry;
  /** Starts a refresh of the view (an ordinary execution). */
  refresh(view: ViewRecord): Promise<unknown>;
  /** True while the view's previous refresh is still pending or running. */
  isRefreshing(view: ViewRecord): boolean;
  /** A due refresh that could not start (e.g. 402: no credits left this cycle). */
  onError(view: ViewRecord, err: unknown): void;
}

/**
 * Runs views' cron schedules on the service's clock. `tick()` starts every refresh that is due and
 * moves the view's next run past now: runs missed while the service was stopped collapse into one,
 * and a view whose previous refresh still runs skips this run instead of queueing behind it.
 * A timer calls tick() in the service; tests move a ManualClock and call it themselves.
 */
export class ViewScheduler {
  readonly #d: ViewSchedulerDeps;
  readonly #task = new PeriodicTask(() => this.#tick());

  constructor(deps: ViewSchedulerDeps) {
    this.#d = deps;
  }

  /** Returns the full names of the views whose refresh it started. */
  tick(): Promise<string[]> {
    return this.#task.run();
  }

  async #tick(): Promise<string[]> {
    const { clock, registry } = this.#d;
    const now = clock.now();
    const started: string[] = [];
    for (const view of registry.all()) {
      if (view.cron === undefined) continue;
      if (view.nextRunAt !== undefined && view.nextRunAt > now) continue;
      const next = nextRunAfter(view.cron, now);
      const moved: ViewRecord = { ...view };
      if (next === undefined) delete moved.nextRunAt;
      else moved.nextRunAt = next;
      await registry.put(moved);
      // A view seen for the first time without a next run just gets one.
      if (view.nextRunAt === undefined || this.#d.isRefreshing(view)) continue;
      try {
        await this.#d.refresh(moved);
        started.push(fullViewName(view.team, view.name));
      } catch (err) {
        this.#d.onError(moved, err);
      }
    }
    return started;
  }

  /** A tick that fails (e.g. the registry cannot be written) goes to `onError`; the timer keeps going. */
  start(intervalMs: number, onError: (err: unknown) => void): void {
    this.#task.start(intervalMs, onError);
  }

  stop(): void {
    this.#task.stop();
  }

  close(): Promise<void> {
    return this.#task.close();
  }
}
