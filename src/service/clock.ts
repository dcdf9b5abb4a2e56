/**
 * The service's notion of "now", in milliseconds since the epoch (fractional: microseconds count).
 * Everything time-dependent (timestamps, expiry, later billing cycles and schedules) reads this, so
 * tests move time with a ManualClock instead of waiting.
 */
export interface Clock {
  now(): number;
}

/** Wall time with microsecond resolution: Date.now() alone would make every fraction end in 000. */
export const systemClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
};

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start: number = Date.now()) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    this.#now += ms;
  }

  set(ms: number): void {
    this.#now = ms;
  }
}
