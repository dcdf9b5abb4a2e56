import type { Clock } from './clock.ts';

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/**
 * A clock that only moves when told to. `advanceTo` wakes sleepers one deadline at a time, in
 * order, and lets the woken code run (and go back to sleep) before moving on, so a test can jump
 * a day ahead and see every cron tick in between happen exactly once.
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(start: Date | string) {
    this.#now = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  /** How many are asleep (a test waits for the scheduler to settle on its next tick). */
  get sleeping(): number {
    return this.#sleepers.length;
  }

  sleepUntil(when: Date, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (when.getTime() <= this.#now) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = {
        at: when.getTime(),
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  async advance(ms: number): Promise<void> {
    await this.advanceTo(new Date(this.#now + ms));
  }

  async advanceTo(target: Date | string): Promise<void> {
    const end = new Date(target).getTime();
    for (;;) {
      const due = this.#sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at);
      const first = due[0];
      if (!first) break;
      this.#now = Math.max(this.#now, first.at);
      const woken = this.#sleepers.filter((s) => s.at <= this.#now);
      this.#sleepers = this.#sleepers.filter((s) => s.at > this.#now);
      for (const s of woken) s.resolve();
      await settle();
    }
    this.#now = Math.max(this.#now, end);
    await settle();
  }
}

/** Lets promise chains and I/O callbacks of already-finished work run. */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}
