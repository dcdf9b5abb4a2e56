import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ResolvedOutput } from './outputConfig.ts';
import type { FileEntry } from './partFile.ts';

/**
 * The resume journal of one export attempt: which part files are complete (synced to disk, or
 * uploaded) and which rows of the result each holds. The destination stores it in the attempt's
 * staging area; the next attempt with the same id keeps the parts it lists and reads the result
 * from the row after the last of them.
 */
const journalSchema = z.object({
  version: z.literal(1),
  execution_id: z.string(),
  /** What decides the bytes of a part besides its rows: format, its options, rolling. */
  layout: z.string(),
  /** Rows per page of the read that wrote the parts: a resumed read pages on the same grid. */
  page_size: z.number().int().positive().nullable(),
  parts: z.array(
    z.object({
      path: z.string().min(1),
      first_row: z.number().int().nonnegative(),
      rows: z.number().int().nonnegative(),
      bytes: z.number().int().nonnegative(),
      sha256: z.string(),
    }),
  ),
});
export type Journal = z.infer<typeof journalSchema>;
export type JournalPart = Journal['parts'][number];

/**
 * Part boundaries are a function of row offsets only when files roll by rows and nothing is
 * partitioned: then part k always holds rows [k * max_rows, (k + 1) * max_rows). Rolling by bytes
 * depends on compression; partitions on which rows came in which batch. Those outputs are
 * rewritten from the start instead.
 */
export function resumableLayout(resolved: ResolvedOutput): boolean {
  return resolved.partitionBy.length === 0 && resolved.maxBytesPerFile === Number.POSITIVE_INFINITY;
}

export function layoutFingerprint(resolved: ResolvedOutput): string {
  const basis = JSON.stringify({
    format: resolved.format.type,
    options: resolved.formatConfig,
    max_rows: Number.isFinite(resolved.maxRowsPerFile) ? resolved.maxRowsPerFile : null,
  });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

export function parseJournal(bytes: Uint8Array | undefined): Journal | undefined {
  if (bytes === undefined) return undefined;
  try {
    const parsed = journalSchema.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // unreadable: start this output afresh
  }
}

export function encodeJournal(journal: Journal): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(journal)}\n`);
}

/**
 * The parts worth keeping: in part order, each starting where the one before ended (from row 0),
 * every one but the last holding exactly `maxRows` rows. A part with fewer is the end of the
 * result, so nothing after it counts.
 */
export function resumablePrefix(journal: Journal, partName: (part: number) => string, maxRows: number): JournalPart[] {
  const byPath = new Map(journal.parts.map((p) => [p.path, p]));
  const kept: JournalPart[] = [];
  let row = 0;
  for (let part = 0; ; part++) {
    const entry = byPath.get(partName(part));
    if (entry === undefined || entry.first_row !== row || entry.rows > maxRows) break;
    kept.push(entry);
    row += entry.rows;
    if (entry.rows < maxRows) break;
  }
  return kept;
}

export function fileEntryOf(part: JournalPart): FileEntry {
  return { path: part.path, rows: part.rows, bytes: part.bytes, sha256: part.sha256, partition: {} };
}
