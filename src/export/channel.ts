/**
 * A one-slot hand-off from a push-style producer (the export loop, fanning batches out to
 * files) to a pull-style consumer (a format's encoder). `push` resolves when the consumer has
 * taken the item, so the producer runs at most one batch ahead of each encoder. If the
 * consumer stops (its write failed), pending and later pushes reject instead of hanging.
 */
export class Channel<T> implements AsyncIterable<T> {
  #pending: { value: T; taken: () => void; refused: (e: unknown) => void } | undefined;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  #closed = false;
  #failure: { error: unknown } | undefined;
  #cancelled: { error: unknown } | undefined;

  push(value: T): Promise<void> {
    if (this.#cancelled) return Promise.reject(this.#cancelled.error);
    if (this.#closed || this.#pending) return Promise.reject(new Error('channel: push after close or before the previous push settled'));
    if (this.#waiter) {
      const waiter = this.#waiter;
      this.#waiter = undefined;
      waiter.resolve({ value, done: false });
      return Promise.resolve();
    }
    return new Promise((taken, refused) => {
      this.#pending = { value, taken, refused };
    });
  }

  /** No more items; the consumer sees the end after taking what is pending. */
  close(): void {
    this.#closed = true;
    this.#settleWaiter();
  }

  /** The consumer's next read throws `error` (the source failed or the export was aborted). */
  fail(error: unknown): void {
    this.#failure ??= { error };
    this.#closed = true;
    this.#settleWaiter();
  }

  /** The consumer is gone: refuse pending and future pushes with `error`. */
  cancel(error: unknown): void {
    this.#cancelled ??= { error };
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.refused(error);
  }

  #settleWaiter(): void {
    if (!this.#waiter || this.#pending) return;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    if (this.#failure) waiter.reject(this.#failure.error);
    else waiter.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.#pending) {
          const { value, taken } = this.#pending;
          this.#pending = undefined;
          taken();
          return Promise.resolve({ value, done: false });
        }
        if (this.#failure) return Promise.reject(this.#failure.error);
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.#waiter = { resolve, reject };
        });
      },
      return: (value?: unknown) => {
        this.cancel(new Error('channel: consumer stopped reading'));
        return Promise.resolve({ value: value as T, done: true });
      },
    };
  }
}
