// Which stored results are being read, so that the result store's bound (resultStore.ts) never
// drops one under its reader. A result is held:
// - while a page request of it is in flight (from the lookup of its record to the reply's body
//   being built: a body streamed from its files reads open handles, which a drop does not cut);
// - by a lease taken when it is stored (its job has not read it yet: it polls, then reads the
//   first page), and by a lease taken by every page read that has a next page. A lease is keyed
//   by the offset its reader asks for next: the read of that offset ends it (and takes the next
//   one), the read of the last page takes none, so a reader that read to the end holds nothing.
//   A reader fetching several pages at once (the connector's ordered fetch) gets them out of
//   order: a page whose next one was already read, before or while it was made, takes no lease
//   (that next page's reader has moved on), so no lease outlives the reading. A second reader of
//   pages read before is held by its requests in flight only.
//   A lease not followed lapses `limits.result_read_lease_ms` after it was taken (a reader that
//   gave up, or a result nobody reads).
// When a hold ends the bound is told, so that a store past its bound is bounded again at once.

export class ReadLeases {
  readonly #leaseMs: number;
  readonly #now: () => number;
  /** Page requests in flight, by result id. */
  readonly #inFlight = new Map<string, number>();
  /** Leases by result id, then by the offset asked for next: when each lapses (several readers at one offset: the latest). */
  readonly #leases = new Map<string, Map<number, number>>();
  /** By result id: the offsets read. */
  readonly #read = new Map<string, Set<number>>();
  #released: () => void = () => {};

  constructor(leaseMs: number, now: () => number) {
    this.#leaseMs = leaseMs;
    this.#now = now;
  }

  /** `listener` is called when a hold ended (the bound may drop what it could not before). */
  onRelease(listener: () => void): void {
    this.#released = listener;
  }

  /** The result was stored: held until its first page is read, or the lease lapses. */
  stored(id: string): void {
    this.#lease(id, 0);
  }

  /** A page request of the result begins; the returned function ends it (call it once). */
  begin(id: string): () => void {
    this.#inFlight.set(id, (this.#inFlight.get(id) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const n = (this.#inFlight.get(id) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(id, n);
      else this.#inFlight.delete(id);
      this.#released();
    };
  }

  /** A page at `offset` was read: the lease at that offset ends, one at `next` (if there is a next page, not read yet) begins. */
  paged(id: string, offset: number, next: number | undefined): void {
    let read = this.#read.get(id);
    if (read === undefined) this.#read.set(id, (read = new Set()));
    read.add(offset);
    this.#leases.get(id)?.delete(offset);
    if (next !== undefined && !read.has(next)) this.#lease(id, next);
    else if (this.#leases.get(id)?.size === 0) this.#leases.delete(id);
  }

  /** Whether the result is being read now: a page request in flight, or a lease not lapsed. */
  held(id: string): boolean {
    if (this.#inFlight.has(id)) return true;
    const leases = this.#leases.get(id);
    if (leases === undefined) return false;
    const now = this.#now();
    for (const [offset, until] of leases) if (until <= now) leases.delete(offset);
    if (leases.size > 0) return true;
    this.#leases.delete(id);
    return false;
  }

  /** Milliseconds until the first of the given results' leases lapses; undefined when none has one. */
  nextLapse(ids: Iterable<string>): number | undefined {
    const now = this.#now();
    let first: number | undefined;
    for (const id of ids) {
      for (const until of this.#leases.get(id)?.values() ?? []) if (until > now && (first === undefined || until < first)) first = until;
    }
    return first === undefined ? undefined : first - now;
  }

  /** The result is gone (expired, deleted): nothing of it is kept. */
  forget(id: string): void {
    this.#leases.delete(id);
    this.#read.delete(id);
  }

  #lease(id: string, offset: number): void {
    let leases = this.#leases.get(id);
    if (leases === undefined) this.#leases.set(id, (leases = new Map()));
    leases.set(offset, this.#now() + this.#leaseMs);
  }
}
