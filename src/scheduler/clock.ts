/** Time as the scheduler sees it; tests substitute a ManualClock and move time themselves. */
export interface Clock {
  now(): Date;
  /** Resolves at `when` (at once if it has passed); rejects with the signal's reason on abort. */
  sleepUntil(when: Date, signal: AbortSignal): Promise<void>;
}

// setTimeout takes at most a 32-bit delay (about 24.8 days); longer sleeps are taken in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => new Date(),
  async sleepUntil(when, signal) {
    for (;;) {
      signal.throwIfAborted();
      const remaining = when.getTime() - Date.now();
      if (remaining <= 0) return;
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(signal.reason);
        };
        const timer = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, Math.min(remaining, MAX_TIMER_MS));
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
  },
};
