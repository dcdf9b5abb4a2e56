import type { Transaction } from './destination.ts';
import { encodeJournal, type Journal, type JournalPart, layoutFingerprint, parseJournal, resumableParts, resumablePrefix } from './journal.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { partFileName } from './partFileName.ts';

/**
 * Resume of one export, in one place: what a killed attempt left that is worth keeping, and the
 * journal this attempt keeps for the next one.
 *
 * Guarantee: a part is kept only if the journal lists it (written after the part was synced or
 * uploaded), it still exists with the recorded size, the journal names the same execution and the
 * same layout (format, options, rows per file), and every part before it is kept too. Part k of a
 * row-rolled, unpartitioned output holds rows [k * max, (k + 1) * max) of the execution's result,
 * which is the same on every read, so the kept parts plus the parts written from `startRow` on are
 * byte for byte what one uninterrupted run writes, provided batches are cut at the same rows (read
 * on the same page grid: `pageSize`). Other layouts are never journaled (see `resumableLayout`).
 */
export interface Resume {
  /** Parts kept from the killed attempt, in part order. */
  readonly kept: readonly JournalPart[];
  /** The result's first row still to write: the rows the kept parts hold. */
  readonly startRow: number;
  /** Rows per page of the read that wrote the kept parts (undefined when nothing was kept). */
  readonly pageSize: number | undefined;
  /** Records a complete part; it counts as written once this resolves. Undefined: not journaled. */
  journal(executionId: string, pageSize: number | undefined): ((part: JournalPart) => Promise<void>) | undefined;
}

/**
 * Which parts of a killed attempt are worth keeping: only a complete prefix (`prefix`: the export is
 * written from one read, from `startRow` on), or every complete part (`any`: parts are written side
 * by side, each read on its own).
 */
export type KeepParts = 'prefix' | 'any';

/** Without journaling: nothing kept, nothing recorded. */
export const noResume: Resume = { kept: [], startRow: 0, pageSize: undefined, journal: () => undefined };

/**
 * Keeps what `tx` (begun with `resume`) found of a killed attempt exporting `executionId` with the
 * same layout, and drops the rest of its staging. `journaling`: the transaction supports resume and
 * the layout is resumable.
 */
export async function recover(
  tx: Transaction,
  resolved: ResolvedOutput,
  executionId: string,
  extension: string,
  journaling: boolean,
  keep: KeepParts = 'prefix',
): Promise<Resume> {
  const layout = layoutFingerprint(resolved);
  let kept: JournalPart[] = [];
  let pageSize: number | undefined;
  if (tx.journal !== undefined && tx.retain) {
    const found = parseJournal(tx.journal);
    const usable = journaling && found !== undefined && found.execution_id === executionId && found.layout === layout;
    const partName = (part: number): string => partFileName(executionId, part, extension);
    const candidates = !usable ? [] : keep === 'any' ? resumableParts(found, partName, resolved.maxRowsPerFile) : resumablePrefix(found, partName, resolved.maxRowsPerFile);
    const intact = new Set(await tx.retain(candidates.map((p) => ({ name: p.path, bytes: p.bytes }))));
    const firstMissing = candidates.findIndex((p) => !intact.has(p.path));
    kept = keep === 'any' ? candidates.filter((p) => intact.has(p.path)) : firstMissing === -1 ? candidates : candidates.slice(0, firstMissing);
    pageSize = found?.page_size ?? undefined;
  }
  return {
    kept,
    startRow: keep === 'any' ? contiguousRows(kept, resolved.maxRowsPerFile) : kept.reduce((n, p) => n + p.rows, 0),
    pageSize: kept.length > 0 ? pageSize : undefined,
    journal(execution, readPageSize) {
      if (!journaling || tx.saveJournal === undefined) return undefined;
      const save = tx.saveJournal.bind(tx);
      const journal: Journal = { version: 1, execution_id: execution, layout, page_size: readPageSize ?? null, parts: [...kept] };
      let saving = Promise.resolve();
      return (part) => {
        // One save at a time, each with every part complete so far, in part order.
        saving = saving.then(() => {
          journal.parts.push(part);
          journal.parts.sort((a, b) => a.first_row - b.first_row);
          return save(encodeJournal(journal));
        });
        return saving;
      };
    },
  };
}

/** Rows held by the kept parts that run without a gap from row 0. */
function contiguousRows(kept: readonly JournalPart[], maxRows: number): number {
  let row = 0;
  for (const p of kept) {
    if (p.first_row !== row) break;
    row += p.rows;
    if (p.rows < maxRows) break;
  }
  return row;
}
