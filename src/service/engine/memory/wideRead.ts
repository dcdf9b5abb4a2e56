// Rows wider than the files instance's part of the engine's memory (a page of 8 MB strings, one
// 64 MB value) cannot be written nor rendered in it: DuckDB holds a value whole, and renders its
// JSON text at several times its size. Such a read or write runs alone on the files instance (it
// holds the page gate whole: no page query runs beside it, new ones wait) with the instance's
// memory_limit raised to the engine's whole memory, set back as it ends. Only a row larger than
// that fails, saying so.
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError } from '../types.ts';
import { toEngineError } from '../duckdbError.ts';
import type { Gate } from './gate.ts';
import { parseDuckDbSize, type EngineCeilings } from './resourceBounds.ts';

/** A row too wide for the files instance's part of the memory is read with the engine's whole memory (pages/pageReader.ts). */
export function wideReadLimit(ceilings: EngineCeilings | undefined): string | undefined {
  const users = ceilings && parseDuckDbSize(ceilings.memoryLimit);
  const files = ceilings?.filesMemoryLimit === undefined ? undefined : parseDuckDbSize(ceilings.filesMemoryLimit);
  return users === undefined || files === undefined ? undefined : `${users + files}B`;
}

export class WideRead {
  readonly #slots: Gate<number>;
  readonly #memoryLimit: string | undefined;
  readonly #wideLimit: string | undefined;

  /** `memoryLimit`: the files instance's own; `wideLimit`: the engine's whole memory (undefined: no limits are set). */
  constructor(slots: Gate<number>, memoryLimit: string | undefined, wideLimit: string | undefined) {
    this.#slots = slots;
    this.#memoryLimit = memoryLimit;
    this.#wideLimit = wideLimit;
  }

  /** Runs `fn` alone among the page queries (the gate held whole) with the raised memory_limit, set through `conn`. */
  async run<T>(conn: DuckDBConnection, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    // A need larger than the gate's capacity is let in alone.
    const leave = await this.#slots.enter(Number.POSITIVE_INFINITY, signal);
    try {
      return await this.#raised(conn, fn);
    } finally {
      leave();
    }
  }

  /** Runs `fn` with the raised limit; the caller already holds the gate whole. */
  async #raised<T>(conn: DuckDBConnection, fn: () => Promise<T>): Promise<T> {
    if (this.#wideLimit === undefined || this.#memoryLimit === undefined) return fn();
    await conn.run(`SET GLOBAL memory_limit = '${this.#wideLimit}'`);
    try {
      return await fn();
    } finally {
      await conn.run(`SET GLOBAL memory_limit = '${this.#memoryLimit}'`);
    }
  }

  /** Whether an error is DuckDB failing to allocate memory (retried wide; a stop or a bad filter is not). */
  static isMemoryShort(err: unknown): boolean {
    const mapped = err instanceof EngineError ? err : toEngineError(err);
    return mapped.kind === 'capacity' && /out of memory|failed to allocate|could not allocate/i.test(mapped.message);
  }
}
