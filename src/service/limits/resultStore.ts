// The bound of the stored results (limits.result_store_max_bytes): results, their encodings and
// compressed frames take disk space that retention alone (90 days by default) lets grow without
// end. Whenever a result is stored, and on every retention sweep, the bytes of the results
// directory are counted; past the bound, the results read least recently (or never read: their
// end time counts) are moved to EXPIRED before their time, as retention would (protocol.md:
// the state, no result), until the rest fits. A result being read (readLeases.ts: a page request
// in flight, or a reader paging through it) is never dropped: the store exceeds its bound while
// such results hold it, and they go, least recently read first, once their reading ends (told by
// the leases, or when the first lease lapses). The result used most recently is kept too, whatever
// its size. A new result is stored whatever the store holds: the bound never fails an execution.

/** The few operations the bound needs from the executions. */
export interface ResultStoreTarget {
  /** The results held now, with when each was last read (or stored, if never read). */
  held(): Array<{ id: string; lastUsed: number }>;
  /** Moves the execution to EXPIRED (persisted) and drops its result. */
  expire(id: string): Promise<void>;
}

/** Which results are being read (readLeases.ts): those are not dropped. */
export interface ResultReadHolds {
  held(id: string): boolean;
  /** Milliseconds until the first lease of these results lapses; undefined: none will (in-flight reads tell when they end). */
  nextLapse(ids: Iterable<string>): number | undefined;
}

export interface ResultStoreStatus {
  /** Bytes of the stored results (result files, encodings, frames) when last counted. */
  bytes: number;
  maxBytes: number;
}

export class ResultStoreBound {
  readonly #maxBytes: number;
  readonly #sizes: () => Promise<Map<string, number>>;
  readonly #target: ResultStoreTarget;
  #bytes = 0;
  #running: Promise<string[]> | undefined;
  #again = false;
  #closed = false;
  readonly #holds: ResultReadHolds | undefined;
  /** Runs the bound again when the first lease of a result it had to keep lapses. */
  #lapseTimer: NodeJS.Timeout | undefined;

  /** `sizes`: bytes on disk of each stored result, by id (the engine's `resultStoreBytes`); `holds`: the results being read. */
  constructor(maxBytes: number, sizes: () => Promise<Map<string, number>>, target: ResultStoreTarget, holds?: ResultReadHolds) {
    this.#maxBytes = maxBytes;
    this.#sizes = sizes;
    this.#target = target;
    this.#holds = holds;
  }

  /** Runs the bound if the store was over it when last counted (a read that held a result ended). */
  enforceIfOver(): void {
    if (this.#bytes <= this.#maxBytes) return;
    this.enforce().catch((err: unknown) => console.error('sluice service: bounding the result store failed:', err));
  }

  /** The store's size as last counted, and its bound. */
  status(): ResultStoreStatus {
    return { bytes: this.#bytes, maxBytes: this.#maxBytes };
  }

  /** Counts the store afresh; resolves to its size and bound. */
  async measure(): Promise<ResultStoreStatus> {
    this.#bytes = sum(await this.#sizes());
    return this.status();
  }

  /**
   * Expires the least recently read results until the store fits its bound; resolves to their
   * ids. Calls while one runs are coalesced into one more run after it.
   */
  enforce(): Promise<string[]> {
    if (this.#closed) return Promise.resolve([]);
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#enforce().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        void this.enforce().catch((err: unknown) => console.error('sluice service: bounding the result store failed:', err));
      }
    });
    return this.#running;
  }

  /** No run starts from now on; resolves once the one running has ended (it reads the results folder). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#again = false;
    clearTimeout(this.#lapseTimer);
    await this.#running?.catch(() => undefined);
  }

  async #enforce(): Promise<string[]> {
    const sizes = await this.#sizes();
    let total = sum(sizes);
    const dropped: string[] = [];
    const kept: string[] = [];
    if (total > this.#maxBytes) {
      const stored = this.#target.held().filter((h) => sizes.has(h.id)).sort((a, b) => a.lastUsed - b.lastUsed);
      // The most recently used result stays, whatever its size.
      for (const h of stored.slice(0, -1)) {
        if (total <= this.#maxBytes) break;
        // Asked just before the drop: a read that began since the list was made keeps it.
        if (this.#holds?.held(h.id) === true) {
          kept.push(h.id);
          continue;
        }
        await this.#target.expire(h.id);
        total -= sizes.get(h.id)!;
        dropped.push(h.id);
      }
    }
    this.#bytes = total;
    if (total > this.#maxBytes && kept.length > 0) this.#againAtLapse(kept);
    return dropped;
  }

  /** Over the bound because of results being read: runs again when the first of their leases lapses. */
  #againAtLapse(kept: string[]): void {
    const ms = this.#holds?.nextLapse(kept);
    if (ms === undefined || this.#closed) return;
    clearTimeout(this.#lapseTimer);
    this.#lapseTimer = setTimeout(() => this.enforceIfOver(), ms + 1);
    this.#lapseTimer.unref();
  }
}

function sum(sizes: Map<string, number>): number {
  let total = 0;
  for (const n of sizes.values()) total += n;
  return total;
}
