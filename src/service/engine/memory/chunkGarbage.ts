// DuckDB's result chunks reach JS as small objects over native memory (2,048 rows of a wide row
// can be 100+ KB) that DuckDB frees only when the collector finalizes them. V8 does not count that
// memory, so a loop fetching thousands of chunks leaves hundreds of MB waiting for a collection
// its small JS heap never asks for (measured: streaming 5M rows of sample.events grew the process
// by 325 MB; with a collection every 100 chunks, by 82 MB). Every loop that fetches chunks counts
// them here, and every CHUNKS_PER_COLLECTION the collector runs (a few ms on this heap).
//
// The collector is reachable without starting Node with --expose-gc: V8's flag set at run time
// exposes `gc` in contexts created afterwards (one, at load). Where that fails, nothing is done.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHUNKS_PER_COLLECTION = 100;

const collect = ((): (() => void) | undefined => {
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return own;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
})();

let fetched = 0;

/** Counts a chunk fetched (by any loop of this thread); every so often, collects the garbage. */
export function chunkFetched(): void {
  fetched += 1;
  if (fetched % CHUNKS_PER_COLLECTION === 0) collect?.();
}
