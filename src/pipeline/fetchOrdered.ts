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
  /**
   * Where the read ends (a range of the result, such as one part of an export): pages are planned
   * up to this offset, and the iteration ends with the page that reaches it. Unlike `totalRows`, no
   * page past it is asked for, whatever the pages' `next_offset` says.
   */
  endOffset?: number | undefined;
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
  const window = new PageWindow(fetchPage, options);
  try {
    for (let page = await window.next(); page !== undefined; page = await window.next()) yield page;
  } finally {
    await window.close();
  }
}

/**
 * The pages `fetchOrdered` has planned, in flight or fetched and not yet handed over, in offset
 * order, and the cursor: the offset of the next row to hand over (undefined once the last page
 * was). `next` hands over the page at the cursor once it is fetched, planning and launching the
 * requests after it; `close` aborts and awaits every request still running.
 */
class PageWindow<P extends PageShape> {
  readonly #fetchPage: FetchPage<P>;
  readonly #concurrency: number;
  readonly #pageSize: number;
  readonly #maxAhead: number;
  readonly #signal: AbortSignal | undefined;
  readonly #slots: Slot<P>[] = [];
  #inFlight = 0;
  /** The first failed page (by offset): pages before it are still handed over, then this is thrown. */
  #failure: { error: unknown; offset: number } | undefined;
  /** Where the next planned page starts; pages are only planned below `planEnd`. */
  #planFrom: number;
  #planEnd: number;
  /** `endOffset`: the cursor never moves past it. */
  readonly #end: number;
  /** Requests of pages given up on (a gap came first): aborted, and awaited before returning. */
  readonly #detached = new Set<Promise<void>>();
  #cursor: number | undefined;
  #wake: (() => void) | undefined;
  readonly #onAbort = (): void => {
    this.#abortAll(this.#signal?.reason);
    this.#notify();
  };

  constructor(fetchPage: FetchPage<P>, options: FetchOrderedOptions) {
    this.#fetchPage = fetchPage;
    this.#concurrency = positiveInt('concurrency', options.concurrency ?? DEFAULT_CONCURRENCY);
    this.#pageSize = positiveInt('pageSize', options.pageSize);
    this.#maxAhead = this.#concurrency + nonNegativeInt('prefetch', options.prefetch ?? DEFAULT_PREFETCH);
    this.#signal = options.signal;
    this.#planFrom = options.start;
    this.#end = options.endOffset === undefined ? Number.POSITIVE_INFINITY : nonNegativeInt('endOffset', options.endOffset);
    this.#planEnd = Math.min(options.totalRows ?? Number.POSITIVE_INFINITY, this.#end);
    this.#cursor = options.start < this.#end ? options.start : undefined;
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** The next page in offset order, once fetched; undefined after the last. Rejects with the first failure once the pages before it are handed over. */
  async next(): Promise<OrderedPage<P> | undefined> {
    while (this.#cursor !== undefined) {
      if (this.#signal?.aborted) throw this.#signal.reason;
      const c: number = this.#cursor;
      // Pages that end at or before the cursor will never be needed (the service overshot the plan).
      while (this.#slots.length > 0 && this.#slots[0]!.offset + this.#slots[0]!.limit <= c) this.#drop(this.#slots.shift()!);
      const head = this.#slots[0];
      this.#throwUnlessComing(head, c);
      if (head === undefined || head.offset > c) {
        this.#planGap(head, c);
        continue;
      }
      this.#fill();
      if (head.state !== 'done') {
        await new Promise<void>((resolve) => (this.#wake = resolve));
        continue;
      }
      if (head.page === undefined) continue; // aborted, or failed: the checks at the top decide
      const page = this.#handOver(head, head.page, c);
      if (page !== undefined) return page;
    }
    return undefined;
  }

  /** Aborts every request still running and waits for all of them: nothing is left running, no rejection unhandled. */
  async close(): Promise<void> {
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#abortAll(this.#failure?.error ?? this.#signal?.reason ?? new Error('page iteration ended'));
    await Promise.allSettled([...this.#slots.map((s) => s.settled), ...this.#detached]);
  }

  /** After a failure only pages already asked for, before the failed one, are still handed over. */
  #throwUnlessComing(head: Slot<P> | undefined, c: number): void {
    if (this.#failure === undefined) return;
    const coming = head !== undefined && head.offset <= c && (head.state === 'fetching' || head.page !== undefined);
    if (!(coming && head.offset < this.#failure.offset)) throw this.#failure.error;
  }

  /**
   * A gap at the cursor: the page before was shorter than planned. Fetch it first, keeping the bound
   * on pages held by giving up the furthest planned page (it is planned again later).
   */
  #planGap(head: Slot<P> | undefined, c: number): void {
    const limit = Math.min(this.#pageSize, (head?.offset ?? Number.POSITIVE_INFINITY) - c, this.#end - c);
    if (this.#slots.length >= this.#maxAhead) {
      const last = this.#slots.pop()!;
      this.#drop(last);
      this.#planFrom = last.offset;
    }
    this.#slots.unshift({ offset: c, limit, controller: new AbortController(), state: 'planned' });
    // Nothing planned after it: the plan starts over from the cursor.
    if (head === undefined) this.#planFrom = c + limit;
    this.#fill();
  }

  /** Takes the fetched head page and moves the cursor past it: the page to hand over, or undefined when it holds no row at the cursor. */
  #handOver(head: Slot<P>, page: P, c: number): OrderedPage<P> | undefined {
    this.#slots.shift();
    const skip = c - head.offset;
    // The page does not reach the cursor although the result goes on: ask again from the cursor.
    if (skip >= page.rowCount && page.nextOffset !== undefined) return undefined;
    if (page.nextOffset !== undefined && page.nextOffset <= c) throw new PageSequenceError(head.offset, page.nextOffset);
    // At `endOffset` the read is over: no page after it is wanted.
    this.#cursor = page.nextOffset !== undefined && page.nextOffset < this.#end ? page.nextOffset : undefined;
    this.#fill();
    return skip < page.rowCount ? { page, offset: head.offset, skip } : undefined;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #launch(slot: Slot<P>): void {
    slot.state = 'fetching';
    this.#inFlight++;
    slot.settled = this.#fetchPage({ offset: slot.offset, limit: slot.limit }, slot.controller.signal).then(
      (page) => {
        this.#inFlight--;
        slot.state = 'done';
        slot.page = page;
        // A page without next_offset is the end, whatever total_row_count said.
        if (page.nextOffset === undefined) this.#planEnd = Math.min(this.#planEnd, slot.offset + page.rowCount);
        this.#fill();
        this.#notify();
      },
      (error: unknown) => {
        this.#inFlight--;
        slot.state = 'done';
        // A request aborted because its page became useless (or the iteration is ending) is not a failure.
        if (!slot.controller.signal.aborted && (this.#failure === undefined || slot.offset < this.#failure.offset)) {
          this.#failure = { error, offset: slot.offset };
          for (const later of this.#slots) if (later.offset > slot.offset) later.controller.abort(error);
        }
        this.#notify();
      },
    );
  }

  /** Launches planned pages, planning more up to `maxAhead`, while fewer than `concurrency` are in flight. */
  #fill(): void {
    while (this.#failure === undefined && !this.#signal?.aborted && this.#inFlight < this.#concurrency) {
      let next = this.#slots.find((s) => s.state === 'planned');
      if (next === undefined) {
        if (this.#slots.length >= this.#maxAhead || this.#planFrom >= this.#planEnd) return;
        next = { offset: this.#planFrom, limit: Math.min(this.#pageSize, this.#planEnd - this.#planFrom), controller: new AbortController(), state: 'planned' };
        this.#planFrom += next.limit;
        this.#slots.push(next);
      }
      this.#launch(next);
    }
  }

  #abortAll(reason: unknown): void {
    for (const slot of this.#slots) slot.controller.abort(reason);
  }

  #drop(slot: Slot<P>): void {
    slot.controller.abort(new Error('page no longer needed'));
    const settled = slot.settled;
    if (settled === undefined) return;
    this.#detached.add(settled);
    void settled.then(() => this.#detached.delete(settled));
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
