/**
 * The pages of one read, in order: the first page (kept from opening the read, or asked for again),
 * then the rest fetched ahead with bounded concurrency, each cut to the rows the read wants, and
 * counted in the read's progress as it is handed over.
 */
import { DEFAULT_CONCURRENCY, DEFAULT_PREFETCH, fetchOrdered, type OrderedPage, type PageRequest } from '../fetchOrdered.ts';
import { ProgressTracker } from '../progress.ts';
import { abortError } from './abort.ts';
import type { Started } from './firstPage.ts';
import type { StreamOptions } from './options.ts';
import type { PageFetcher } from './pageFetch.ts';
import type { PageMode, RawPage } from './rawPage.ts';
import type { TextPages } from './textPages.ts';

/** What a read's pages need of their stream. */
export interface PageSequence {
  readonly options: StreamOptions;
  readonly fetcher: PageFetcher;
  /** Takes the read's progress, which becomes the stream's `progress`. */
  track(progress: ProgressTracker): void;
}

export async function* pageSequence(read: PageSequence, started: Started, mode: PageMode, text?: TextPages) {
  const { options, fetcher } = read;
  const { signal } = options;
  const { info, resolved } = started;
  let first = started.first;
  started.first = undefined;
  const progress = new ProgressTracker(options.onProgress, started.firstRequestedAt);
  started.firstRequestedAt = undefined;
  read.track(progress);
  const start = options.startOffset ?? 0;
  const firstOffset = started.firstOffset;
  // With filters, total_row_count counts every row, not the matches: no estimate of time left.
  // A resumed read counts what is left from `startOffset`.
  const end = options.endOffset ?? Number.POSITIVE_INFINITY;
  const total = options.filters === undefined ? Math.max(0, Math.min(info.totalRows, end) - start) : undefined;
  /** Rows of a page at `offset` still before `end`: the read delivers no row past it. */
  const upTo = (offset: number, rowCount: number) => Math.max(0, Math.min(rowCount, end - offset));
  try {
    first ??= fetcher.check(resolved, await fetcher.fetch(resolved.execution.id, { offset: firstOffset, limit: info.pageSize }, signal, mode, text), info.columns);
    const firstTake = upTo(firstOffset, first.rowCount);
    const skip = Math.min(start - firstOffset, firstTake);
    progress.page(firstTake - skip, first.bytes, total, first.httpBytes, first.wireBytes);
    const firstOut = skip < firstTake ? { page: first, offset: firstOffset, skip, take: firstTake } : undefined;
    if (first.nextOffset === undefined || firstOffset + first.rowCount >= end) {
      if (firstOut !== undefined) yield firstOut;
      return;
    }

    const fetchPage = async (request: PageRequest, pageSignal: AbortSignal) =>
      fetcher.check(resolved, await fetcher.fetch(resolved.execution.id, request, pageSignal, mode, text), info.columns);
    // The fan-out starts before the first page is handed over, so the consumer's work on that page
    // overlaps the next pages' round trips. It has a controller of its own: a consumer that leaves
    // during the first page must not wait for a page download (a generator's return() waits for
    // the next() in progress) before the requests are stopped.
    const fanOut = new AbortController();
    const pages = fetchOrdered(fetchPage, {
      // A first page shorter than the grid leaves rows before `startOffset`: start there instead.
      start: Math.max(first.nextOffset, start),
      pageSize: info.pageSize,
      totalRows: Math.min(info.totalRows, end),
      concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
      prefetch: options.prefetch ?? DEFAULT_PREFETCH,
      signal: signal === undefined ? fanOut.signal : AbortSignal.any([signal, fanOut.signal]),
    });
    let primed: Promise<IteratorResult<OrderedPage<RawPage>, void>> | undefined = pages.next();
    primed.catch(() => undefined);
    first = undefined;
    try {
      if (firstOut !== undefined) yield firstOut;
      for (;;) {
        const got = await (primed ?? pages.next());
        primed = undefined;
        if (got.done) return;
        const ordered = got.value;
        const take = upTo(ordered.offset, ordered.page.rowCount);
        if (take <= ordered.skip) return;
        progress.page(take - ordered.skip, ordered.page.bytes, total, ordered.page.httpBytes, ordered.page.wireBytes);
        yield { ...ordered, take };
        if (ordered.offset + take >= end) return;
      }
    } finally {
      // Leaving ends the fetcher, which aborts and settles what it has in flight.
      if (primed !== undefined) fanOut.abort(new Error('page iteration ended'));
      await pages.return(undefined);
    }
  } catch (error) {
    throw abortError(error, signal, 'stream');
  }
}
