// Stored results kept attached for paging, at most `max` at once: the least recently used idle
// ones are detached, and so is one nobody has read for `idleMs`. Each attached result holds an
// open file and engine memory: without the idle bound a process that reads one result per run
// (`sluice schedule`) gains a descriptor a run until the cap. An attached result is counted while a page uses it and is only detached
// when unused; attaching a result again waits for its detach to finish (the alias is the same).

/** One attached (or attaching) result; `refs` counts the pages using it right now. */
export interface Lease<T> {
  readonly id: string;
  readonly ready: Promise<T>;
  opened?: T;
  refs: number;
  lastUsed: number;
  /** Called when refs drops to 0 (drop waits for it). */
  onIdle?: () => void;
  /** Detaches it once it has stayed unused for `idleMs`. */
  idleTimer?: NodeJS.Timeout;
}

export interface AttachedResultsOptions<T> {
  max: number;
  /** An unused result is detached after this long (undefined: only beyond `max`). */
  idleMs?: number;
  /** Attaches the stored result (called once per attach; a failure is not kept). */
  attach(id: string): Promise<T>;
  /** Detaches what attach returned. */
  detach(opened: T): Promise<void>;
  /** True once the engine is closing: nothing is detached any more (the instance goes whole). */
  closed(): boolean;
  /** Reports a detach that failed (nothing else can be done about it). */
  onDetachError(id: string, err: unknown): void;
}

export class AttachedResults<T> {
  readonly #o: AttachedResultsOptions<T>;
  readonly #open = new Map<string, Lease<T>>();
  /** Results being detached (or dropped), by id: attaching one again waits for this. */
  readonly #detaching = new Map<string, Promise<void>>();

  constructor(options: AttachedResultsOptions<T>) {
    this.#o = options;
  }

  /** The attached result, counted as in use until release(lease). */
  async acquire(id: string): Promise<{ lease: Lease<T>; open: T }> {
    let lease = this.#open.get(id);
    if (lease === undefined) {
      const created: Lease<T> = { id, ready: this.#attach(id), refs: 0, lastUsed: performance.now() };
      lease = created;
      this.#open.set(id, created);
      created.ready.then(
        (open) => {
          created.opened = open;
        },
        () => {
          if (this.#open.get(id) === created) this.#open.delete(id);
        },
      );
    }
    lease.refs += 1;
    lease.lastUsed = performance.now();
    clearTimeout(lease.idleTimer);
    try {
      return { lease, open: await lease.ready };
    } catch (err) {
      this.release(lease);
      throw err;
    } finally {
      this.#evictIdle();
    }
  }

  release(lease: Lease<T>): void {
    lease.refs -= 1;
    if (lease.refs === 0) {
      lease.onIdle?.();
      this.#evictIdle();
      this.#detachWhenIdle(lease);
    }
  }

  #detachWhenIdle(lease: Lease<T>): void {
    const { idleMs } = this.#o;
    if (idleMs === undefined || this.#open.get(lease.id) !== lease) return;
    clearTimeout(lease.idleTimer);
    lease.idleTimer = setTimeout(() => {
      if (lease.refs > 0 || this.#o.closed() || this.#open.get(lease.id) !== lease) return;
      this.#open.delete(lease.id);
      void this.#track(lease.id, this.#detach(lease));
    }, idleMs);
    lease.idleTimer.unref();
  }

  /**
   * Takes the result out at once (an attach of this id from now on waits, then runs after
   * `then`), lets the pages using it finish, detaches it, then runs `then` (e.g. deletes its files).
   */
  drop(id: string, then: () => Promise<void>): Promise<void> {
    const lease = this.#open.get(id);
    if (lease !== undefined) {
      this.#open.delete(id);
      clearTimeout(lease.idleTimer);
    }
    const work = async (): Promise<void> => {
      if (lease !== undefined) {
        if (lease.refs > 0) await new Promise<void>((ok) => (lease.onIdle = ok));
        await this.#detach(lease);
      }
      await then();
    };
    return this.#track(id, work());
  }

  /** Settles when every detach and drop under way has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#detaching.values()]);
  }

  async #attach(id: string): Promise<T> {
    // The same alias may still be detaching (evicted or dropped a moment ago).
    await this.#detaching.get(id);
    return this.#o.attach(id);
  }

  /**
   * Detaches the least recently used results nobody is reading, down to `max`. Chosen and taken
   * out of the map in one synchronous step, so no page can acquire one that is going away.
   */
  #evictIdle(): void {
    if (this.#o.closed() || this.#open.size <= this.#o.max) return;
    const idle = [...this.#open.values()].filter((e) => e.refs === 0 && e.opened !== undefined).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const lease of idle.slice(0, this.#open.size - this.#o.max)) {
      this.#open.delete(lease.id);
      clearTimeout(lease.idleTimer);
      void this.#track(lease.id, this.#detach(lease));
    }
  }

  async #detach(lease: Lease<T>): Promise<void> {
    const open = await lease.ready.catch(() => undefined);
    if (open === undefined || this.#o.closed()) return;
    await this.#o.detach(open);
  }

  #track(id: string, work: Promise<void>): Promise<void> {
    const prev = this.#detaching.get(id);
    const done: Promise<void> = (prev === undefined ? work : prev.then(() => work))
      .catch((err: unknown) => this.#o.onDetachError(id, err))
      .finally(() => {
        if (this.#detaching.get(id) === done) this.#detaching.delete(id);
      });
    this.#detaching.set(id, done);
    return done;
  }
}
