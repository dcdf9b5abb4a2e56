/**
 * What a stream hands the native path (src/export/nativeExport.ts), which reads row ranges of the
 * result itself: the range reader, and the first CSV pages asked for ahead of it (`headStart()`).
 */
import type { ClientOptions } from '../../client/config.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import { DEFAULT_CONCURRENCY } from '../fetchOrdered.ts';
import { startCsvHead, type CsvHead } from '../nativeWire/csvHead.ts';
import type { ProgressTracker } from '../progress.ts';
import type { StreamClient } from '../source.ts';
import type { ResultInfo } from './firstPage.ts';
import { arrowServedTo } from './arrowServed.ts';
import { streamWire, type StreamOptions } from './options.ts';

/** What a range read asks the service for: result pages, JSON or CSV. */
export type RangeClient = Pick<ServiceClient, 'getResultsWire' | 'getResultsCsv'>;

/** What a reader of row ranges (the native path) needs to read rows `[first, end)` of a result as the stream that made it would. */
export interface RangeReader {
  /** A client to the same service (holds the key: keep it in this process). */
  readonly connection: ClientOptions;
  /**
   * The stream's own client, when it reads CSV pages too: range reads go over its connections,
   * already open (a client made from `connection` opens its own, a round trip each before the first
   * page). Closing it stays its owner's.
   */
  readonly client?: RangeClient | undefined;
  /** The first CSV page, asked for ahead (`ResultStream.headStart()`), for the range read that starts there. */
  readonly csvHead?: CsvHead | undefined;
  readonly executionId: string;
  readonly totalRows: number;
  /** The wire was chosen by the stream (`auto`: Arrow when the service serves it, else JSON), not asked for. */
  readonly wireChosen?: boolean;
  /** The stream's options for the read: the wire the first page settled on, its page grid, columns, order. */
  readonly options: Pick<StreamOptions, 'wire' | 'pageSize' | 'concurrency' | 'prefetch' | 'columns' | 'sortBy' | 'allowPartialResults' | 'int256As'>;
  /** Counts pages a range read delivered in this stream's `progress` (and its `onProgress`). */
  page(rows: number, bytes: number, httpBytes: number, wireBytes: number): void;
}

/** The stream's own client as range reads use it, when it reads CSV pages. */
export function rangeClientOf(client: StreamClient): RangeClient | undefined {
  const csv = client.getResultsCsv?.bind(client);
  return csv === undefined ? undefined : { getResultsWire: client.getResultsWire.bind(client), getResultsCsv: csv };
}

/**
 * Whether the first CSV pages can be asked for ahead: where rows can be read by range over JSON
 * pages (no `filters`, not `wire: arrow`, a client that reads CSV pages), and not from a service
 * known to serve Arrow pages, which would encode CSV pages no output reads: the client was told so
 * (the embedded service), or, under `auto` (whose first page such a service answers as Arrow, which
 * stops them), an earlier page of this client came as Arrow.
 */
export function headWanted(client: StreamClient, options: StreamOptions): boolean {
  const wire = streamWire(options);
  if (wire === 'arrow' || options.filters !== undefined || client.getResultsCsv === undefined || client.connectionOptions === undefined) return false;
  return client.connectionOptions().servesArrowPages !== true && !(wire === 'auto' && arrowServedTo(client));
}

/** Asks for the first CSV page at `offset` of the execution, and the pages after it, as the stream's range read would. */
export function startStreamHead(client: StreamClient, options: StreamOptions, executionId: string, offset: number, total: () => number | undefined): CsvHead {
  return startCsvHead(rangeClientOf(client)!, {
    executionId,
    offset,
    limit: options.pageSize,
    columns: options.columns,
    sortBy: options.sortBy,
    allowPartialResults: options.allowPartialResults,
    compressionOff: client.connectionOptions!().compression === 'off',
    ahead: options.concurrency ?? DEFAULT_CONCURRENCY,
    total,
    signal: options.signal,
  });
}

/** How the stream read its first page, for the range reader to read as it would. */
export interface RangeStart {
  readonly connection: ClientOptions;
  readonly info: ResultInfo;
  readonly csvHead: CsvHead | undefined;
  /** The service answered the first page with Arrow. */
  readonly arrowOffered: boolean;
  /** Counts the range read's pages: the stream's progress. */
  readonly progress: ProgressTracker;
}

/** The range reader of a stream whose first page was read (`start`), with the stream's client and options. */
export function rangeReaderOf(client: StreamClient, options: StreamOptions, start: RangeStart): RangeReader {
  const { info, progress } = start;
  const o = options;
  const total = info.totalRows;
  return {
    connection: start.connection,
    client: rangeClientOf(client),
    csvHead: start.csvHead,
    executionId: info.executionId,
    totalRows: total,
    wireChosen: streamWire(o) === 'auto',
    options: {
      wire: start.arrowOffered ? 'arrow' : 'json',
      pageSize: info.pageSize,
      ...(o.concurrency === undefined ? {} : { concurrency: o.concurrency }),
      ...(o.prefetch === undefined ? {} : { prefetch: o.prefetch }),
      ...(o.columns === undefined ? {} : { columns: o.columns }),
      ...(o.sortBy === undefined ? {} : { sortBy: o.sortBy }),
      ...(o.allowPartialResults ? { allowPartialResults: true } : {}),
      ...(o.int256As === undefined ? {} : { int256As: o.int256As }),
    },
    page: (rows, bytes, httpBytes, wireBytes) => progress.page(rows, bytes, total, httpBytes, wireBytes),
  };
}
