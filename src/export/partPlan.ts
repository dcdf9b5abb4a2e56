import { availableParallelism } from 'node:os';
import { ConfigError } from '../kit/index.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import type { PartFormat } from './partMessages.ts';

/** Threads writing an export's parts: a count, or `auto` (one per core the process may use). */
export type Workers = number | 'auto';

/** The number of threads `workers` asks for (default 1: the calling thread). */
export function resolveWorkers(workers: Workers | undefined): number {
  if (workers === undefined) return 1;
  if (workers === 'auto') return availableParallelism();
  if (!Number.isInteger(workers) || workers < 1) {
    throw new ConfigError('export options', [{ path: 'workers', message: "expected a positive integer or 'auto' (threads writing parts side by side)", value: workers }]);
  }
  return workers;
}

/** One part of an export: part `index` holds rows `[firstRow, firstRow + rows)` of the result. */
export interface PartRange {
  readonly index: number;
  readonly firstRow: number;
  readonly rows: number;
}

/**
 * The parts of a row-rolled export of `totalRows` rows: part k holds rows
 * `[k * rowsPerPart, min((k + 1) * rowsPerPart, totalRows))`, so what a part holds depends on the
 * result and the layout alone, never on who writes it or when. An empty result is one empty part
 * (readers still see the columns). Parts in `done` (kept from an earlier attempt) are left out.
 */
export function planParts(totalRows: number, rowsPerPart: number, done: ReadonlySet<number> = new Set()): PartRange[] {
  if (!Number.isInteger(totalRows) || totalRows < 0) throw new RangeError(`totalRows must be a non-negative integer, got ${totalRows}`);
  if (!Number.isInteger(rowsPerPart) || rowsPerPart < 1) throw new RangeError(`rowsPerPart must be a positive integer, got ${rowsPerPart}`);
  const count = Math.max(1, Math.ceil(totalRows / rowsPerPart));
  const parts: PartRange[] = [];
  for (let index = 0; index < count; index++) {
    if (done.has(index)) continue;
    const firstRow = index * rowsPerPart;
    parts.push({ index, firstRow, rows: Math.min(rowsPerPart, totalRows - firstRow) });
  }
  return parts;
}


/**
 * Rows a part thread must have, on each wire, to pay for starting it (`workers: auto`): about two and
 * a half seconds of CPU work each. A thread costs ~0.25 s of CPU before its first row (loading the
 * client, apache-arrow and the format from Node's compile cache), and more while its own code warms
 * up and its own parquet-wasm compiles. Measured on two cores with the service on the same machine,
 * to zstd Parquet (a JSON row costs ~2.5 µs of CPU end to end since pages are read from their text,
 * an Arrow row ~1 µs): over JSON, two threads took 2.40 s against 2.22 s for one at 1M rows, and
 * 3.8-4.5 s against 4.0 s at 2M; over Arrow, 1.11 s against 0.86 s at 1M, and 2.85 s against 3.0 s
 * at 5M.
 */
export const MIN_ROWS_PER_THREAD = { json: 1_000_000, arrow: 2_500_000 } as const;

/** The wire rows come over, when it is settled (`auto` is not, before the first page). */
export function knownWire(wire: string | undefined): 'json' | 'arrow' | undefined {
  return wire === 'json' || wire === 'arrow' ? wire : undefined;
}

/** An output's format as a part thread loads it: the module exporting its descriptor, and the checked config. */
export function partFormatOf(output: ResolvedOutput): PartFormat {
  return { module: output.format.module!, type: output.format.type, config: output.formatConfig };
}

/**
 * The part threads an export of `totalRows` rows in parts of `rowsPerPart` runs: never more than
 * its parts; with `auto`, at most one per core and only as many as have `MIN_ROWS_PER_THREAD` rows
 * each on the wire the rows come over (at least one). A count asked for is kept (up to the parts).
 */
export function partThreadCount(workers: Workers | undefined, totalRows: number, rowsPerPart: number, wire: 'json' | 'arrow' | undefined): number {
  const parts = Math.max(1, Math.ceil(totalRows / Math.max(1, rowsPerPart)));
  const asked = resolveWorkers(workers);
  if (workers !== 'auto') return Math.min(asked, parts);
  const perThread = MIN_ROWS_PER_THREAD[wire ?? 'json'];
  return Math.max(1, Math.min(asked, parts, Math.floor(totalRows / perThread)));
}
