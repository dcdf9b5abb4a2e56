import { SluiceError } from '../errors.ts';

/** What the fetcher needs to know of a page: how many rows it holds and where the next one starts. */
export interface PageShape {
  readonly rowCount: number;
  /** The service's `next_offset`; undefined on the last page. */
  readonly nextOffset: number | undefined;
}

export interface PageRequest {
  readonly offset: number;
  readonly limit: number;
}

/**
 * The seam between the fetcher and the network: one page request. It must settle soon after
 * `signal` aborts (the fetcher waits for every request it started before it returns).
 */
export type FetchPage<P extends PageShape> = (request: PageRequest, signal: AbortSignal) => Promise<P>;

/** A page handed to the consumer: its rows from `skip` on are the next rows of the result, in order. */
export interface OrderedPage<P> {
  readonly page: P;
  /** Offset of the page's first row in the whole result. */
  readonly offset: number;
  /** Rows at the start of the page already delivered by the page before (only when the service overshot). */
  readonly skip: number;
}

export interface FetchOrderedOptions {
  /** Offset of the first row to deliver, where page planning starts (after a first page read separately, its `next_offset`; a resumed read, its `startOffset`). */
  start: number;
  /** Rows per request: the page size the service actually returned. */
  pageSize: number;
  /**
   * `total_row_count`, when known: pages are planned up to it, and no further. Were it too low, the
   * pages' `next_offset` is still followed, one request at a time.
   */
  totalRows?: number | undefined;
  /** Requests in flight at most. */
  concurrency?: number | undefined;
  /** Pages beyond `concurrency` that may be fetched ahead of the consumer. */
  prefetch?: number | undefined;
  signal?: AbortSignal | undefined;
}

export const DEFAULT_CONCURRENCY = 4;
export const DEFAULT_PREFETCH = 2;

interface Slot<P> {
  readonly offset: number;
  readonly limit: number;
  readonly controller: AbortController;
  state: 'planned' | 'fetching' | 'done';
  page?: P;
  settled?: Promise<void>;
}

/**
 * Reads pages `start, start + pageSize, ...` with up to `concurrency` requests in flight and yields
 * them strictly in offset order. At most `concurrency + prefetch` pages are in flight or fetched and
 * not yet handed over: a consumer that stops pulling stops the fetching (p-map's `pMapIterable` does
 * the same with its `backpressure` option).
 *
 * The offsets are a plan, not a promise: the service may return fewer rows than asked before the end,
 * so each page's `next_offset` is checked against the plan. A short page leaves a gap that is fetched
 * before the planned page after it; a page that overshoots makes the next one start mid-page (`skip`).
 * A row is never lost or delivered twice, whatever the service does with `limit`.
 *
 * When a request fails, the requests for pages after it are aborted and no page is planned; the
 * pages before it are still fetched and handed over in order, then the iteration rejects with the
 * failure, as a consumer reading page by page would have met it. When `signal` aborts or the
 * consumer stops early, every request in flight is aborted. Either way all are awaited before the
 * iteration ends (lib-storage's `Upload` waits for all part uploads before aborting the upload):
 * nothing is left running and no rejection is left unhandled.
 */
export async function* fetchOrdered<P extends PageShape>(
  fetchPage: FetchPage<P>,
  options: FetchOrderedOptions,
): AsyncGenerator<OrderedPage<P>, void, undefined> {
  const concurrency = positiveInt('concurrency', options.concurrency ?? DEFAULT_CONCURRENCY);
  const prefetch = nonNegativeInt('prefetch', options.prefetch ?? DEFAULT_PREFETCH);
  const pageSize = positiveInt('pageSize', options.pageSize);
  const maxAhead = concurrency + prefetch;
  const totalRows = options.totalRows;
  const signal = options.signal;

  const window: Slot<P>[] = [];
  let inFlight = 0;
  /** The first failed page (by offset): pages before it are still handed over, then this is thrown. */
  let failure: { error: unknown; offset: number } | undefined;
  /** Where the next planned page starts; pages are only planned below `planEnd`. */
  let planFrom = options.start;
  let planEnd = totalRows ?? Number.POSITIVE_INFINITY;
  /** Requests of pages given up on (a gap came first): aborted, and awaited before returning. */
  const detached = new Set<Promise<void>>();
  let cursor: number | undefined = options.start;
  let wake: (() => void) | undefined;

  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };

  const launch = (slot: Slot<P>) => {
    slot.state = 'fetching';
    inFlight++;
    slot.settled = fetchPage({ offset: slot.offset, limit: slot.limit }, slot.controller.signal).then(
      (page) => {
        inFlight--;
        slot.state = 'done';
        slot.page = page;
        // A page without next_offset is the end, whatever total_row_count said.
        if (page.nextOffset === undefined) markEnd(slot.offset + page.rowCount);
        fill();
        notify();
      },
      (error: unknown) => {
        inFlight--;
        slot.state = 'done';
        // A request aborted because its page became useless (or the iteration is ending) is not a failure.
        if (!slot.controller.signal.aborted && (failure === undefined || slot.offset < failure.offset)) {
          failure = { error, offset: slot.offset };
          for (const later of window) if (later.offset > slot.offset) later.controller.abort(error);
        }
        notify();
      },
    );
  };

  const fill = () => {
    while (failure === undefined && !signal?.aborted && inFlight < concurrency) {
      let next = window.find((s) => s.state === 'planned');
      if (next === undefined) {
        if (window.length >= maxAhead || planFrom >= planEnd) return;
        next = { offset: planFrom, limit: Math.min(pageSize, planEnd - planFrom), controller: new AbortController(), state: 'planned' };
        planFrom += next.limit;
        window.push(next);
      }
      launch(next);
    }
  };

  const abortAll = (reason: unknown) => {
    for (const slot of window) slot.controller.abort(reason);
  };

  const onAbort = () => {
    abortAll(signal?.reason);
    notify();
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  try {
    while (cursor !== undefined) {
      if (signal?.aborted) throw signal.reason;
      const c: number = cursor;

      // Pages that end at or before the cursor will never be needed (the service overshot the plan).
      while (window.length > 0 && window[0]!.offset + window[0]!.limit <= c) drop(window.shift()!);
      const head = window[0];
      // After a failure only pages already asked for, before the failed one, are still handed over.
      const coming = head !== undefined && head.offset <= c && (head.state === 'fetching' || head.page !== undefined);
      if (failure !== undefined && !(coming && head.offset < failure.offset)) throw failure.error;
      if (head === undefined || head.offset > c) {
        // A gap: the page before was shorter than planned. Fetch it first, keeping the bound on pages
        // held by giving up the furthest planned page (it is planned again later).
        const limit = Math.min(pageSize, (head?.offset ?? Number.POSITIVE_INFINITY) - c);
        if (window.length >= maxAhead) {
          const last = window.pop()!;
          drop(last);
          planFrom = last.offset;
        }
        window.unshift({ offset: c, limit, controller: new AbortController(), state: 'planned' });
        // Nothing planned after it: the plan starts over from the cursor.
        if (head === undefined) planFrom = c + limit;
        fill();
        continue;
      }

      fill();
      if (head.state !== 'done') {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        continue;
      }
      if (head.page === undefined) continue; // aborted, or failed: the checks at the top decide

      window.shift();
      const page = head.page;
      const skip = c - head.offset;
      if (skip >= page.rowCount && page.nextOffset !== undefined) {
        // The page does not reach the cursor although the result goes on: ask again from the cursor.
        continue;
      }
      if (page.nextOffset !== undefined && page.nextOffset <= c) {
        throw new PageSequenceError(head.offset, page.nextOffset);
      }
      cursor = page.nextOffset;
      fill();
      if (skip < page.rowCount) yield { page, offset: head.offset, skip };
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    const reason = failure?.error ?? signal?.reason ?? new Error('page iteration ended');
    abortAll(reason);
    await Promise.allSettled([...window.map((s) => s.settled), ...detached]);
  }

  function markEnd(end: number): void {
    planEnd = Math.min(planEnd, end);
  }

  function drop(slot: Slot<P>): void {
    slot.controller.abort(new Error('page no longer needed'));
    const settled = slot.settled;
    if (settled === undefined) return;
    detached.add(settled);
    void settled.then(() => detached.delete(settled));
  }
}

/** The service's `next_offset` does not move forward: following it would loop forever. */
export class PageSequenceError extends SluiceError {
  readonly code = 'PAGE_SEQUENCE';
  readonly offset: number;
  readonly nextOffset: number;
  constructor(offset: number, nextOffset: number) {
    super(`result page at offset ${offset} gave next_offset ${nextOffset}, which does not move forward`);
    this.offset = offset;
    this.nextOffset = nextOffset;
  }
}

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

function nonNegativeInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  return value;
}
