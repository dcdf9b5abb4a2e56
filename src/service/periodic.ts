/**
 * A background task of the service, run on demand and every `intervalMs` by an unref'd timer (it
 * never keeps the process alive). A run asked for while one is in progress joins that run instead
 * of starting a second, so a slow run never piles up behind the timer.
 */
export class PeriodicTask<T> {
  readonly #task: () => Promise<T>;
  #running: Promise<T> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(task: () => Promise<T>) {
    this.#task = task;
  }

  run(): Promise<T> {
    this.#running ??= this.#task().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** A failed timed run goes to `onError`; the timer keeps going. */
  start(intervalMs: number, onError: (err: unknown) => void): void {
    this.stop();
    this.#timer = setInterval(() => void this.run().catch(onError), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Stops the timer and waits for a run in progress. */
  async close(): Promise<void> {
    this.stop();
    await this.#running?.catch(() => {});
  }
}
