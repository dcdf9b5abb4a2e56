// Gives an instance's idle memory back to the system. DuckDB keeps the blocks a query read or
// wrote in its buffer pool up to memory_limit, and glibc keeps freed memory in its arenas: a
// process that ran one large execution stays at its peak while idle, and the next execution's
// peak comes on top of what the previous one left. DuckDB has no call to evict; lowering
// memory_limit does (its SetLimit evicts every unpinned block down to the new limit and then,
// on glibc, runs malloc_trim), so a trim is a dip: `SET GLOBAL memory_limit` to almost nothing
// and straight back to the limit in force. Evicted blocks of a database file are read again
// from the file (the OS page cache) when next needed; in-memory ones are spilled first.
//
// While the limit is low, any allocation of another statement on that instance would fail, so
// a trim runs only when no other connection of the instance is open (connections, not
// statements: an execution holds its connection from its first statement to its end), and
// connections opened meanwhile wait until the limit is back. Every connection of the engine
// is opened and closed through an InstanceUse.
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

/** What memory_limit dips to: below anything an idle instance pins (DuckDB then evicts all it can). */
const TRIM_LIMIT = '1MiB';

/**
 * Dips memory_limit and sets it to `limit`: DuckDB evicts what it holds unpinned and gives freed
 * memory back. Resolves to whether the dip was accepted (DuckDB refuses one below what it cannot
 * evict); rejects only when `limit` itself cannot be set.
 */
export async function trimTo(conn: DuckDBConnection, limit: string): Promise<boolean> {
  let dipped = true;
  await conn.run(`SET GLOBAL memory_limit = '${TRIM_LIMIT}'`).catch(() => {
    dipped = false;
  });
  await conn.run(`SET GLOBAL memory_limit = '${limit}'`);
  return dipped;
}

export class InstanceUse {
  readonly instance: DuckDBInstance;
  readonly #limit: (() => string) | undefined;
  #open = 0;
  /** Settles (never rejects) once the limit is back. */
  #trimming: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #idleMs: number | undefined;
  #stopped = false;
  /** Trims done (for tests). */
  trims = 0;

  /**
   * `limit()`: the memory_limit in force, restored after the dip (the engine's bounds change it);
   * without it the instance is never trimmed.
   * `idleMs`: trim once the instance has had no connection open for that long (undefined: never
   * on its own).
   */
  constructor(instance: DuckDBInstance, limit: (() => string) | undefined, idleMs: number | undefined) {
    this.instance = instance;
    this.#limit = limit;
    this.#idleMs = idleMs;
  }

  /** A connection counted until `close`; opened once no trim is under way. */
  async connect(): Promise<DuckDBConnection> {
    while (this.#trimming !== undefined) await this.#trimming;
    this.#open += 1;
    this.#cancelTimer();
    try {
      return await this.instance.connect();
    } catch (err) {
      this.#closed();
      throw err;
    }
  }

  close(conn: DuckDBConnection): void {
    conn.closeSync();
    this.#closed();
  }

  #closed(): void {
    this.#open -= 1;
    if (this.#open === 0 && this.#idleMs !== undefined) {
      this.#cancelTimer();
      this.#timer = setTimeout(() => void this.trim(0), this.#idleMs);
      this.#timer.unref();
    }
  }

  #cancelTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** No trim starts from now on; settles once none is under way (the instance may then be closed). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer();
    await this.#trimming;
  }

  /**
   * Trims the instance if no more than `own` connections are open (the caller's own, idle ones);
   * resolves to whether it did. A failed dip (DuckDB could not evict down to it) leaves the limit
   * as it was.
   */
  async trim(own: number): Promise<boolean> {
    const limitNow = this.#limit;
    if (limitNow === undefined || this.#stopped || this.#open > own || this.#trimming !== undefined) return false;
    const run = async (): Promise<boolean> => {
      const conn = await this.instance.connect();
      try {
        return await trimTo(conn, limitNow());
      } finally {
        conn.closeSync();
      }
    };
    this.#trimming = run().then(
      (dipped) => {
        if (dipped) this.trims += 1;
        return dipped;
      },
      () => false,
    );
    const done = await this.#trimming;
    this.#trimming = undefined;
    return done;
  }
}
