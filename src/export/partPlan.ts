/**
 * The part threads (`workers`) were removed: measured with the service on a core of its own, a
 * second thread made exports slower and took more CPU on both wires (docs/performance.md).
 * The option is still accepted so that jobs and callers keep working, and ignored: the files are
 * those one thread wrote anyway. More cores: run a job sharded (`sluice run --processes N`).
 */
export const WORKERS_IGNORED =
  'workers is ignored: part threads were removed, since a second thread made exports slower and took more CPU (docs/performance.md); the files are those one thread writes. Remove the setting; to use more cores, run the job sharded (sluice run --processes N)';

/** Whether the process was already told that `workers` is ignored (Node warns of a deprecation once). */
let workersWarned = false;

/** Says once per process, as a DeprecationWarning, that the `workers` option a library caller gave is ignored. */
export function warnWorkersIgnored(workers: unknown): void {
  if (workers === undefined || workersWarned) return;
  workersWarned = true;
  process.emitWarning(`export option ${WORKERS_IGNORED}`, { type: 'DeprecationWarning', code: 'SLUICE_WORKERS' });
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

