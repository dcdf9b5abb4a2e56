// Page queries of results not encoded run on the files instance, which has a part of the
// engine's memory (a quarter by default: 64 MiB). A full page of a wide result takes tens of
// MiB while DuckDB renders it, so a reader fetching several pages at once (the connector
// fetches four) would make the instance run out of memory and fail pages that, one after the
// other, fit. Page queries therefore take a slot: as many run at once as the instance's memory
// holds, the others wait their turn in a gate (gate.ts), first come first served.

import { Gate } from './gate.ts';
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

/** The gate of page queries: `enter(1)` takes a slot (gate.ts: first come, first served). */
export function pageSlots(memoryLimit: string | undefined): Gate<number> {
  return Gate.weighted(pageSlotCount(memoryLimit));
}
