import type { Transaction } from './destination.ts';
import { encodeJournal, type Journal, type JournalPart, layoutFingerprint, parseJournal, resumablePrefix } from './journal.ts';
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
): Promise<Resume> {
  const layout = layoutFingerprint(resolved);
  let kept: JournalPart[] = [];
  let pageSize: number | undefined;
  if (tx.journal !== undefined && tx.retain) {
    const found = parseJournal(tx.journal);
    const usable = journaling && found !== undefined && found.execution_id === executionId && found.layout === layout;
    const partName = (part: number): string => partFileName(executionId, part, extension);
    const candidates = !usable ? [] : resumablePrefix(found, partName, resolved.maxRowsPerFile);
    const intact = new Set(await tx.retain(candidates.map((p) => ({ name: p.path, bytes: p.bytes }))));
    const firstMissing = candidates.findIndex((p) => !intact.has(p.path));
    kept = firstMissing === -1 ? candidates : candidates.slice(0, firstMissing);
    pageSize = found?.page_size ?? undefined;
  }
  return {
    kept,
    startRow: kept.reduce((n, p) => n + p.rows, 0),
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

