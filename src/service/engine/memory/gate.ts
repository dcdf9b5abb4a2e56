// The one wait queue of the engine: executions waiting for memory room ('reserve' admission),
// page queries waiting for a slot of the files instance, encodings waiting for no execution to
// run. A holder enters with a need; it is let in when the need fits beside those held (`fits`),
// first come first served: a need that would fit does not overtake an earlier one that does not
// (else a big one could wait for ever behind a stream of small ones). A wait ends with its signal
// (rejecting with the signal's reason), and the next in line is judged again.

interface Waiter<T> {
  need: T;
  admit: () => void;
}

/** `fits(need, held)`: whether `need` may be held beside `held` (called with held non-empty). */
export type Fits<T> = (need: T, held: readonly T[]) => boolean;

export class Gate<T> {
  readonly #fits: Fits<T>;
  readonly #held: T[] = [];
  readonly #waiting: Array<Waiter<T>> = [];
  readonly #emptyWaiters: Array<() => void> = [];

  /** Anything fits beside nothing: every need is let in at last, alone if need be. */
  constructor(fits: Fits<T>) {
    this.#fits = fits;
  }

  /** A gate that holds `capacity` weight at once (a need larger than that is let in alone). */
  static weighted(capacity: number): Gate<number> {
    return new Gate<number>((need, held) => held.reduce((a, b) => a + b, 0) + need <= capacity);
  }

  /** Needs held now (in the order they were let in). */
  get held(): readonly T[] {
    return this.#held;
  }

  /** Waiters in line. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves once `need` is held; the returned function lets it go (once; later calls do nothing).
   * `signal` ends the wait, rejecting with its reason.
   */
  async enter(need: T, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#waiting.length === 0 && this.#admits(need)) this.#held.push(need);
    else await this.#wait(need, signal);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#held.splice(this.#held.indexOf(need), 1);
      this.#admitWaiting();
      if (this.#held.length === 0) for (const wake of this.#emptyWaiters.splice(0)) wake();
    };
  }

  /** Resolves when nothing is held (at once if nothing is); `wakeAll` ends every such wait. */
  whenEmpty(): Promise<void> {
    if (this.#held.length === 0) return Promise.resolve();
    return new Promise((wake) => this.#emptyWaiters.push(wake));
  }

  /** Ends every whenEmpty wait (the owner is closing). */
  wakeAll(): void {
    for (const wake of this.#emptyWaiters.splice(0)) wake();
  }

  #admits(need: T): boolean {
    return this.#held.length === 0 || this.#fits(need, this.#held);
  }

  #wait(need: T, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        // The next in line may fit now that this one no longer goes first.
        this.#admitWaiting();
        reject(signal?.reason);
      };
      const waiter: Waiter<T> = {
        need,
        admit: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.#waiting.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Lets waiters in, in order, while the first in line fits (none overtakes it). */
  #admitWaiting(): void {
    while (this.#waiting.length > 0 && this.#admits(this.#waiting[0]!.need)) {
      const next = this.#waiting.shift()!;
      // Held at once, before the next in line is judged.
      this.#held.push(next.need);
      next.admit();
    }
  }
}
