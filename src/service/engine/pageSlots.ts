// Page queries of results not encoded run on the files instance, which has a part of the
// engine's memory (a quarter by default: 64 MiB). A full page of a wide result takes tens of
// MiB while DuckDB renders it, so a reader fetching several pages at once (the connector
// fetches four) would make the instance run out of memory and fail pages that, one after the
// other, fit. Page queries therefore take a slot: as many run at once as the instance's memory
// holds, the others wait their turn, first come first served.

import { parseDuckDbSize } from './resourceBounds.ts';

/** What one page query may take while it renders (a full page of sample.events: ~20 MiB). */
const PAGE_QUERY_BYTES = 32 * 1024 * 1024;
/** Without a memory limit, page queries are bounded by the cores they share. */
const UNBOUNDED_SLOTS = 4;

/** How many page queries run at once on an instance with that memory_limit (DuckDB's text: '64.0 MiB', '67108864B'). */
export function pageSlotCount(memoryLimit: string | undefined): number {
  const bytes = memoryLimit === undefined ? undefined : parseDuckDbSize(memoryLimit);
  if (bytes === undefined) return UNBOUNDED_SLOTS;
  return Math.max(1, Math.min(UNBOUNDED_SLOTS, Math.floor(bytes / PAGE_QUERY_BYTES)));
}

export class PageSlots {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(count: number) {
    this.#free = count;
  }

  /** Resolves once a slot is this caller's; `release` gives it back (once). */
  async take(): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next !== undefined) next();
      else this.#free++;
    };
  }
}
