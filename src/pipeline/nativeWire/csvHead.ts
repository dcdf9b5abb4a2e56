import type { CsvPage } from '../../client/serviceClient.ts';
import type { RangeClient } from '../stream/rangeReader.ts';
import { KEEP_ZSTD, shapedPage } from './nativePages.ts';

/** A CSV page asked for ahead of the range read that wants it, and its sizes on the wire and decoded. */
export interface HeadPage {
  readonly page: CsvPage;
  readonly wireBytes: number;
  readonly decodedBytes: number;
}

/**
 * The CSV pages a native export reads first, asked for while the stream still learns the result's
 * columns from its first JSON page (which the CSV pages do not need): their round trips and
 * transfers overlap that page's instead of following them. The requests are ordinary ones (the key's
 * rate governor counts them, their retries are the client's); a request that failed, or was stopped,
 * is simply not used: the range read asks for the page again and meets whatever error it meets.
 */
export interface CsvHead {
  /** The page's first row, and the `limit` it was asked with (undefined: the service's cap). */
  readonly offset: number;
  readonly limit: number | undefined;
  /**
   * The page asked for ahead at the request's offset, once, when it was asked with the request's
   * `limit` (the first page: or with none); undefined: no usable page, ask for it.
   */
  take(request: { readonly offset: number; readonly limit: number }, signal: AbortSignal): Promise<HeadPage | undefined>;
  /** Stops the request (the page is not wanted: the execution is not finished, or the read failed). */
  stop(): void;
}

export interface CsvHeadRequest {
  readonly executionId: string;
  readonly offset: number;
  readonly limit: number | undefined;
  readonly columns?: string[] | undefined;
  readonly sortBy?: string | undefined;
  readonly allowPartialResults?: boolean | undefined;
  /** The client's compression is off: the page comes decoded, as the range read's own request would. */
  readonly compressionOff: boolean;
  /** Pages asked for ahead at most, the first included (the range read's requests in flight). */
  readonly ahead: number;
  /** The result's rows, when known by the time the first page came in (no page is asked for past them). */
  readonly total?: (() => number | undefined) | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Asks for the CSV page of `request` now (as `csvPage` of nativePages.ts would), kept for the range
 * read; once it tells the page size (where the next page starts), the `ahead - 1` pages after it
 * too, as the range read's requests in flight would be, up to the result's end where `total` knows
 * it. A page the range read already asked for itself is not asked for again.
 */
export function startCsvHead(client: RangeClient, request: CsvHeadRequest): CsvHead {
  const controller = new AbortController();
  const signal = request.signal === undefined ? controller.signal : AbortSignal.any([request.signal, controller.signal]);
  // Dropped once taken or stopped: nothing holds a page after the range read has it.
  const pages = new Map<number, { readonly limit: number | undefined; readonly page: Promise<HeadPage | undefined> }>();
  /** Offsets the range read asked for. */
  const asked = new Set<number>();
  let live = true;
  const ask = (offset: number, limit: number | undefined) => {
    let sizes: [number, number] = [0, 0];
    const page = client
      .getResultsCsv(request.executionId, {
        ...shapedPage(request, { offset, limit }, signal),
        ...(request.compressionOff ? {} : { keepCoded: KEEP_ZSTD }),
        onBodyBytes: (wire, decoded) => (sizes = [wire, decoded]),
      })
      .then(
        (got) => ({ page: got, wireBytes: sizes[0], decodedBytes: sizes[1] }),
        () => undefined,
      );
    pages.set(offset, { limit, page });
    return page;
  };
  const first = ask(request.offset, request.limit);
  void first.then((got) => {
    const next = got?.page.nextOffset;
    if (!live || next === undefined || next <= request.offset) return;
    const size = next - request.offset;
    const end = request.total?.() ?? Number.POSITIVE_INFINITY;
    for (let k = 0, offset = next; k < request.ahead - 1 && offset < end && !asked.has(offset); k++, offset += size) ask(offset, size);
  });
  const stop = () => {
    live = false;
    pages.clear();
    controller.abort();
  };
  return {
    offset: request.offset,
    limit: request.limit,
    take: async (wanted, takeSignal) => {
      // The range read asks for its first page first: one of other rows means these are not wanted.
      if (asked.size === 0 && wanted.offset !== request.offset) stop();
      asked.add(wanted.offset);
      const entry = pages.get(wanted.offset);
      // Without a limit the service's cap was asked for: the page size the range read then asks for.
      if (entry === undefined || (entry.limit !== undefined && entry.limit !== wanted.limit)) return undefined;
      pages.delete(wanted.offset);
      // The range read stopped (its export did): so do the requests it waits for.
      const onAbort = () => controller.abort();
      takeSignal.addEventListener('abort', onAbort, { once: true });
      try {
        return await entry.page;
      } finally {
        takeSignal.removeEventListener('abort', onAbort);
      }
    },
    stop,
  };
}
