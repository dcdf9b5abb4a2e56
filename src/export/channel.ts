/**
 * The one async channel of the connector: a producer pushes, one consumer reads with `for await`.
 * Backpressure: `push` resolves once the item fits in `capacity` (0, the default: a hand-off, once
 * the consumer has taken it), so the producer runs at most `capacity` items ahead. Ends three ways,
 * each once: `close` (the consumer reads what was pushed, then the end), `fail` (what was pushed,
 * then the error) and an abort (`signal`: the reason at once, what was queued dropped, every push
 * refused). A consumer that stops (`return`, a `break`, or `cancel` by its owner) refuses pending
 * and later pushes, so a producer never waits for a reader that is gone.
 */
export interface ChannelOptions {
  /** Items that may wait untaken before a push waits (default 0: a push resolves once taken). */
  readonly capacity?: number;
  /** Aborting ends the channel at once with the signal's reason, for the consumer and the producer. */
  readonly signal?: AbortSignal | undefined;
  /** What a push meets once the consumer stopped reading (default: an Error saying so). */
  readonly stopped?: () => unknown;
}

interface Queued<T> {
  readonly value: T;
  /** Resolves the push once the item fits (or was taken). */
  room?: (() => void) | undefined;
  refused?: ((error: unknown) => void) | undefined;
}

export class Channel<T> implements AsyncIterable<T> {
  readonly #capacity: number;
  readonly #stopped: () => unknown;
  readonly #queue: Queued<T>[] = [];
  #reader: { resolve: (r: IteratorResult<T, undefined>) => void; reject: (e: unknown) => void } | undefined;
  #closed = false;
  /** Thrown to the consumer once the queue is read (`fail`), at once (an abort). */
  #failure: { error: unknown; now: boolean } | undefined;
  /** Pushes are refused with this (the consumer is gone, or the channel was aborted). */
  #refusal: { error: unknown } | undefined;

  constructor(options: ChannelOptions = {}) {
    const capacity = options.capacity ?? 0;
    if (!Number.isInteger(capacity) || capacity < 0) throw new RangeError(`channel capacity must be a non-negative integer, got ${capacity}`);
    this.#capacity = capacity;
    this.#stopped = options.stopped ?? (() => new Error('channel: the consumer stopped reading'));
    const signal = options.signal;
    if (signal?.aborted) this.#abort(signal.reason);
    else signal?.addEventListener('abort', () => this.#abort(signal.reason), { once: true });
  }

  /** Hands `value` to the consumer: resolves once it fits in `capacity` (or is taken); rejects once the channel cannot take it. */
  push(value: T): Promise<void> {
    if (this.#refusal) return Promise.reject(this.#refusal.error);
    if (this.#failure) return Promise.reject(this.#failure.error);
    if (this.#closed) return Promise.reject(new Error('channel: push after close'));
    if (this.#reader) {
      const reader = this.#reader;
      this.#reader = undefined;
      reader.resolve({ value, done: false });
      return Promise.resolve();
    }
    if (this.#queue.length < this.#capacity) {
      this.#queue.push({ value });
      return Promise.resolve();
    }
    return new Promise((room, refused) => this.#queue.push({ value, room, refused }));
  }

  /** No more items: the consumer reads what was pushed, then the end. */
  close(): void {
    this.#closed = true;
    this.#settleReader();
  }

  /** The producer failed: the consumer reads what was pushed, then `error`; later pushes are refused with it. */
  fail(error: unknown): void {
    this.#failure ??= { error, now: false };
    this.#closed = true;
    this.#settleReader();
  }

  /** The consumer is gone: pending and later pushes are refused with `error`. */
  cancel(error: unknown): void {
    this.#refusal ??= { error };
    this.#refuseQueued(error);
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined, undefined> {
    return {
      next: () => {
        const next = this.#next();
        // A consumer that gave up waiting (its export aborted) leaves this promise behind: its failure is the read's, reported there.
        next.catch(() => undefined);
        return next;
      },
      return: () => {
        this.cancel(this.#stopped());
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  #next(): Promise<IteratorResult<T, undefined>> {
    if (this.#failure?.now) return Promise.reject(this.#failure.error);
    const item = this.#take();
    if (item !== undefined) return Promise.resolve({ value: item.value, done: false });
    if (this.#failure) return Promise.reject(this.#failure.error);
    if (this.#closed || this.#refusal) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => (this.#reader = { resolve, reject }));
  }

  /** The first item, and room for the push that now fits (with no capacity: the push of the item taken). */
  #take(): Queued<T> | undefined {
    const item = this.#queue.shift();
    if (item === undefined) return undefined;
    const fits = this.#capacity === 0 ? item : this.#queue[this.#capacity - 1];
    fits?.room?.();
    if (fits !== undefined) fits.room = fits.refused = undefined;
    return item;
  }

  /** Ends at once with `reason`: the consumer's read rejects, what was queued is dropped, pushes are refused. */
  #abort(reason: unknown): void {
    this.#failure = { error: reason, now: true };
    this.#refusal ??= { error: reason };
    this.#closed = true;
    this.#refuseQueued(reason);
    this.#settleReader();
  }

  #refuseQueued(error: unknown): void {
    for (const item of this.#queue.splice(0)) item.refused?.(error);
  }

  /** A consumer waiting on an empty queue learns the end or the failure. */
  #settleReader(): void {
    if (this.#reader === undefined || this.#queue.length > 0) return;
    const reader = this.#reader;
    this.#reader = undefined;
    if (this.#failure) reader.reject(this.#failure.error);
    else if (this.#closed) reader.resolve({ value: undefined, done: true });
  }
}
