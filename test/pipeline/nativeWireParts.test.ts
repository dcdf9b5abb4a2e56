// How the native path cuts one ordered stream of pages into the parts of an export (nativeParts.ts
// `partRuns`, `cutParts`): every row of every part exactly once and in order, a page holding rows of
// two parts (or of many, parts smaller than a page) given to each, a page that overshot (`skip`),
// parts kept from an earlier attempt left out, and parts the pages never reach still handed over.
import { describe, expect, it } from 'vitest';
import type { OrderedPage } from '../../src/pipeline/fetchOrdered.ts';
import { cutParts, partRuns, type NativePart } from '../../src/pipeline/nativeWire/nativeParts.ts';

interface Page {
  readonly rowCount: number;
  readonly nextOffset: number | undefined;
}

/** Parts of `size` rows over `total` rows, as the part plan cuts them. */
function plan(total: number, size: number): NativePart[] {
  return Array.from({ length: Math.max(1, Math.ceil(total / size)) }, (_, index) => ({ index, firstRow: index * size, rows: Math.max(0, Math.min(size, total - index * size)) }));
}

/** Ordered pages as fetchOrdered hands them over: `[offset, rowCount, skip]`. */
async function* pagesOf(list: readonly (readonly [number, number, number?])[], total: number): AsyncGenerator<OrderedPage<Page>> {
  for (const [offset, rowCount, skip = 0] of list) yield { page: { rowCount, nextOffset: offset + rowCount < total ? offset + rowCount : undefined }, offset, skip };
}

/** The rows each part was given, in the order it was handed over, and the events in order. */
async function cut(run: readonly NativePart[], pages: AsyncIterable<OrderedPage<Page>>) {
  const rows = new Map<number, number[]>();
  const events: string[] = [];
  await cutParts(
    run,
    pages,
    async (_page, offset, skip, take) => {
      events.push(`stage ${offset + skip}+${take}`);
      return Array.from({ length: take }, (_, i) => offset + skip + i);
    },
    async (part, staged) => {
      events.push(`part ${part.index}`);
      rows.set(part.index, staged.flat());
    },
  );
  return { rows, events };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('native parts over one stream of pages', () => {
  it('runs parts that follow each other together, and starts a new run after a part kept from before', () => {
    const parts = plan(100, 10);
    expect(partRuns(parts).map((r) => r.map((p) => p.index))).toEqual([range(0, 10)]);
    const missing = parts.filter((p) => ![2, 5, 6].includes(p.index));
    expect(partRuns(missing).map((r) => r.map((p) => p.index))).toEqual([[0, 1], [3, 4], [7, 8, 9]]);
    expect(partRuns([])).toEqual([]);
  });

  it('gives every row of every part once, in order, a page across a boundary to both parts, and hands each part over as soon as its rows are in', async () => {
    // Parts of 12 rows over pages of 5: pages 10 and 20 hold rows of two parts, 35 the end of the last.
    const parts = plan(40, 12);
    const pages = range(0, 8).map((k) => [k * 5, 5] as const);
    const { rows, events } = await cut(parts, pagesOf(pages, 40));
    for (const p of parts) expect(rows.get(p.index)).toEqual(range(p.firstRow, p.firstRow + p.rows));
    expect(events).toEqual([
      'stage 0+5', 'stage 5+5', 'stage 10+2', 'part 0', 'stage 12+3',
      'stage 15+5', 'stage 20+4', 'part 1', 'stage 24+1',
      'stage 25+5', 'stage 30+5', 'stage 35+1', 'part 2', 'stage 36+4', 'part 3',
    ]);
  });

  it('cuts a page holding several whole parts (parts smaller than a page) into each of them', async () => {
    const parts = plan(23, 3);
    const { rows, events } = await cut(parts, pagesOf([[0, 10], [10, 10], [20, 3]], 23));
    for (const p of parts) expect(rows.get(p.index)).toEqual(range(p.firstRow, p.firstRow + p.rows));
    expect(events.filter((e) => e.startsWith('part'))).toEqual(parts.map((p) => `part ${p.index}`));
  });

  it('starts a resumed run on the page holding its first row, and skips the rows a page that overshot already gave', async () => {
    // Part 1 kept: the run [2, 3] starts mid-page (row 24 on the page at 20); the service
    // answered the page at 25 with 7 rows, so the page at 30 starts 2 rows in.
    const parts = plan(40, 12).slice(2);
    const { rows } = await cut(parts, pagesOf([[20, 5], [25, 7], [30, 5, 2], [35, 5]], 40));
    expect(rows.get(2)).toEqual(range(24, 36));
    expect(rows.get(3)).toEqual(range(36, 40));
  });

  it('hands over the parts the pages never reach, with the rows they got (their write finds the rows missing)', async () => {
    const parts = plan(40, 12);
    const { rows, events } = await cut(parts, pagesOf([[0, 5], [5, 5], [10, 5]], 15));
    expect(rows.get(0)).toEqual(range(0, 12));
    expect(rows.get(1)).toEqual(range(12, 15));
    expect(rows.get(2)).toEqual([]);
    expect(rows.get(3)).toEqual([]);
    expect(events.filter((e) => e.startsWith('part'))).toEqual(['part 0', 'part 1', 'part 2', 'part 3']);
  });

  it('hands over the empty part of an empty result without a page', async () => {
    const { rows } = await cut(plan(0, 10), pagesOf([], 0));
    expect(rows.get(0)).toEqual([]);
  });
});
