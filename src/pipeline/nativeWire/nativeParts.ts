import { rm } from 'node:fs/promises';
import { ServiceClient } from '../../client/serviceClient.ts';
import type { ColumnSpec } from '../../types/decode.ts';
import type { RangeReader } from '../stream.ts';
import type { OrderedPage } from '../fetchOrdered.ts';
import type { NativeColumn, NativePages } from './duckdbColumns.ts';
import { defaultStatements, NativeEngine, tailSettings, type StagedPage } from './nativeEngine.ts';
import { rangePages, type PageSource } from './nativePages.ts';

/**
 * Parts whose pages are in and not yet stored, with one statement at once: the one DuckDB writes,
 * and one waiting its turn (each statement more at once, one more part).
 */
const WRITES_AHEAD = 2;

/** One part of the output: rows `[firstRow, firstRow + rows)` of the result, written to one file. */
export interface NativePart {
  readonly index: number;
  readonly firstRow: number;
  readonly rows: number;
}

/** The Parquet settings DuckDB writes a part with (the parquet format's own, where DuckDB has them). */
export interface NativeParquet {
  readonly compression: 'zstd' | 'snappy' | 'gzip' | 'none';
  readonly rowGroupSize: number;
  readonly rowGroupBytes?: number | undefined;
  /** Key-value metadata of each file (`ARROW:schema`, so that Arrow readers see the same schema). */
  readonly metadata: Readonly<Record<string, string>>;
}

export interface NativePartsInput {
  /** How to read row ranges of the result (the stream's page grid, columns, order, the service's address). */
  readonly reader: RangeReader;
  /** The result's columns as the service reported them (for messages naming a value that does not fit). */
  readonly specs: readonly ColumnSpec[];
  /** The same columns as DuckDB reads them from `pages` (`nativeColumns(specs, pages)`). */
  readonly columns: readonly NativeColumn[];
  /** The pages DuckDB reads: JSON result pages (the default) or the CSV endpoint's. */
  readonly pages?: NativePages | undefined;
  readonly parts: readonly NativePart[];
  readonly parquet: NativeParquet;
  /** Takes a written part (a local file, removed once this resolves): stores it and records it. */
  readonly store: (part: NativePart, file: string) => Promise<void>;
  readonly signal?: AbortSignal | undefined;
  /** DuckDB's threads (default: `defaultThreads()`, one per core but one). */
  readonly threads?: number | undefined;
  /** DuckDB's statements at once (default: `defaultStatements`, over CSV pages two where there are two cores). */
  readonly statements?: number | undefined;
  /** DuckDB's memory limit; beyond it, it spills to its folder (default 128MB). */
  readonly memoryLimit?: string | undefined;
}

/**
 * Writes parts of a result read over JSON or CSV pages to Parquet with DuckDB: each page's rows
 * (a JSON page's rows array cut from its body unparsed by `pageRows`, a CSV page whole) go into a
 * file of a private folder, and once a part's pages are in, one `COPY` reads them with DuckDB's
 * JSON or CSV reader, typed from `column_types` (`nativeColumns`), into DuckDB's Parquet writer.
 * The next part's pages are fetched (bounded, in order) while DuckDB writes, and DuckDB writes a
 * part while the caller stores the part before. One COPY per part rather than one INSERT per
 * page: per-page statements cost more CPU than the JS decoders they replace (docs/performance.md).
 * Parts are written in the order given, one file each; the pages on disk are removed as each part
 * is written.
 *
 * Parts that follow each other are read as one ordered stream of pages, cut at the parts'
 * boundaries (`partRuns`): the requests in flight never drain at the end of a part to ramp up again
 * for the next, which on a link of some latency costs a round trip or more per part, and a page
 * holding the end of one part and the start of the next is fetched once.
 */
export async function writeNativeParts(input: NativePartsInput): Promise<void> {
  const engine = await NativeEngine.open(input);
  // The stream's own client where it has one (its connections are open), else one of our own.
  const own = input.reader.client === undefined ? new ServiceClient(input.reader.connection) : undefined;
  const client = input.reader.client ?? own!;
  const source: PageSource = { client, reader: input.reader, pages: input.pages ?? 'json', columns: input.specs.map((s) => s.name), signal: input.signal };
  // The parts whose pages are in, written by DuckDB and stored one after another while the pages
  // of the parts after them come in. DuckDB writes a part as soon as its pages are in, on a
  // connection of its own: over CSV pages two parts at once where there are two cores
  // (`defaultStatements`), so that DuckDB does not fall behind a link that brings a part in about
  // the time one statement writes it, and the export's tail is the last part's statement alone.
  // The store (the file copied to its destination and hashed, the journal written) runs beside the
  // statements after it. Up to WRITES_AHEAD parts more than DuckDB writes at once wait for DuckDB or
  // their store (their pages and files on disk, not in memory): a part DuckDB writes more slowly
  // than the link brings the next one does not stop the link.
  const statements = defaultStatements(input);
  // The last part, the export's tail, on more of DuckDB's threads (the link and the service idle).
  const lastPart = input.parts.at(-1);
  const tail = tailSettings(input);
  const writing = new Set<Promise<unknown>>();
  // A part DuckDB could not write stops the parts after it, written beside it or waiting for a
  // connection; the parts before it are still written and stored, as resume per part wants.
  const after = new Map<number, AbortController>();
  let failure: { readonly at: number; readonly error: unknown } | undefined;
  let begun = 0;
  let stored: Promise<void> | undefined;
  const queued: Promise<void>[] = [];
  const write = async (part: NativePart, pages: StagedPage[]) => {
    const at = begun++;
    const stop = new AbortController();
    if (failure !== undefined) stop.abort(failure.error);
    after.set(at, stop);
    const storedBefore = stored;
    const file = engine.write(part, pages, stop.signal, part === lastPart ? tail : undefined);
    const mine = (async () => {
      let path: string | undefined;
      try {
        path = await file;
        // Stored in order, none after a part that failed, none once the export is stopped.
        await storedBefore;
        input.signal?.throwIfAborted();
        await input.store(part, path);
      } finally {
        if (path !== undefined) await rm(path, { force: true });
      }
    })();
    // Its failure is met by whoever awaits it (the next part, or the export's end).
    const settled = file.then(
      () => undefined,
      (error: unknown) => {
        if (failure !== undefined && failure.at < at) return;
        failure = { at, error };
        for (const [later, controller] of after) if (later > at) controller.abort(error);
      },
    );
    writing.add(settled);
    void settled.then(() => {
      writing.delete(settled);
      after.delete(at);
    });
    mine.catch(() => undefined);
    stored = mine;
    queued.push(mine);
    while (queued.length > statements - 1 + WRITES_AHEAD) await queued.shift();
  };
  try {
    for (const run of partRuns(input.parts)) {
      input.signal?.throwIfAborted();
      const first = run[0]!.firstRow;
      const last = run.at(-1)!;
      const pages = rangePages(source, first, last.firstRow + last.rows - first);
      await cutParts(run, pages, (page, offset, skip, take) => engine.stage(page, offset, skip, take), write);
    }
    await stored;
  } catch (error) {
    // DuckDB's statements end before it is closed.
    await Promise.all([...writing, stored?.catch(() => undefined)]);
    throw error;
  } finally {
    await own?.close();
    await engine.close();
  }
}

/** The parts in runs of parts that follow each other (`[0, 1, 3]`, part 2 kept from before: `[[0, 1], [3]]`). */
export function partRuns(parts: readonly NativePart[]): NativePart[][] {
  const runs: NativePart[][] = [];
  for (const part of parts) {
    const run = runs.at(-1);
    const previous = run?.at(-1);
    if (run !== undefined && previous !== undefined && previous.firstRow + previous.rows === part.firstRow) run.push(part);
    else runs.push([part]);
  }
  return runs;
}

/**
 * Cuts the ordered pages of a run of parts at the parts' boundaries: each page's rows go to every
 * part they belong to (`stage`: the page, its offset, and the rows `[skip, skip + take)` the part
 * takes), and each part is handed to `done` once the pages reach its end. Parts the pages never
 * reach (the result ended early) are handed over with what they got: their write finds the rows
 * missing.
 */
export async function cutParts<T, P extends { readonly rowCount: number }>(
  run: readonly NativePart[],
  pages: AsyncIterable<OrderedPage<P>>,
  stage: (page: P, offset: number, skip: number, take: number) => Promise<T>,
  done: (part: NativePart, staged: T[]) => Promise<void>,
): Promise<void> {
  let i = 0;
  let staged: T[] = [];
  // Parts that end where the pages so far end (an empty part: before any page).
  const finished = async (reached: number) => {
    while (i < run.length && run[i]!.firstRow + run[i]!.rows <= reached) {
      await done(run[i]!, staged);
      staged = [];
      i++;
    }
  };
  await finished(run[0]?.firstRow ?? 0);
  for await (const { page, offset, skip } of pages) {
    const end = offset + page.rowCount;
    for (let k = i; k < run.length && run[k]!.firstRow < end; k++) {
      const part = run[k]!;
      const from = Math.max(part.firstRow, offset + skip);
      const to = Math.min(end, part.firstRow + part.rows);
      if (to <= from) continue;
      // A page reaching past the part in the making (parts smaller than a page) waits for it to be handed over.
      if (k > i) await finished(part.firstRow);
      staged.push(await stage(page, offset, from - offset, to - from));
    }
    await finished(end);
  }
  while (i < run.length) await finished(Number.POSITIVE_INFINITY);
}
