import type { CsvPage } from '../../client/serviceClient.ts';
import type { RangeClient } from '../stream.ts';
import { KEEP_ZSTD } from './nativePages.ts';

/** The first CSV page, asked for ahead of the range read that wants it, and its sizes on the wire and decoded. */
export interface HeadPage {
  readonly page: CsvPage;
  readonly wireBytes: number;
  readonly decodedBytes: number;
}

/**
 * The CSV page a native export reads first, asked for while the stream still learns the result's
 * columns from its first JSON page (which the CSV pages do not need): the page's round trip and
 * transfer overlap that page's instead of following them. The request is an ordinary one (the key's
 * rate governor counts it, its retries are the client's); a request that failed, or was stopped, is
 * simply not used: the range read asks for the page again and meets whatever error it meets.
 */
export interface CsvHead {
  /** The page's first row, and the `limit` it was asked with (undefined: the service's cap). */
  readonly offset: number;
  readonly limit: number | undefined;
  /**
   * The page, once, for a request of the range read at `offset` asking `limit` rows (undefined: no
   * usable page; ask for it). Later calls, and a request of other rows, get undefined.
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
  readonly signal?: AbortSignal | undefined;
}

/** Asks for the CSV page of `request` now (as `csvPage` of nativePages.ts would), kept for the range read. */
export function startCsvHead(client: RangeClient, request: CsvHeadRequest): CsvHead {
  const controller = new AbortController();
  const signal = request.signal === undefined ? controller.signal : AbortSignal.any([request.signal, controller.signal]);
  let sizes: [number, number] = [0, 0];
  // Dropped once taken or stopped: nothing holds the page after the range read has it.
  let fetched: Promise<HeadPage | undefined> | undefined = client
    .getResultsCsv(request.executionId, {
      offset: request.offset,
      ...(request.limit === undefined ? {} : { limit: request.limit }),
      ...(request.columns === undefined ? {} : { columns: request.columns }),
      ...(request.sortBy === undefined ? {} : { sortBy: request.sortBy }),
      ...(request.allowPartialResults ? { allowPartialResults: true } : {}),
      ...(request.compressionOff ? {} : { keepCoded: KEEP_ZSTD }),
      onBodyBytes: (wire, decoded) => (sizes = [wire, decoded]),
      signal,
    })
    .then(
      (page) => ({ page, wireBytes: sizes[0], decodedBytes: sizes[1] }),
      () => undefined,
    );
  const stop = () => {
    fetched = undefined;
    controller.abort();
  };
  return {
    offset: request.offset,
    limit: request.limit,
    take: async (wanted, signal) => {
      const page = fetched;
      // Without a limit the service's cap was asked for: the page size the range read then asks for.
      const same = wanted.offset === request.offset && (request.limit === undefined || request.limit === wanted.limit);
      // The range read asks for its first page first: one of other rows means this one is not wanted.
      if (page === undefined || !same) {
        stop();
        return undefined;
      }
      fetched = undefined;
      // The range read stopped (its export did): so does the request it waits for.
      const onAbort = () => controller.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        return await page;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
    stop,
  };
}
