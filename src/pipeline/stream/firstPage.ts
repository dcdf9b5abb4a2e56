/**
 * Opening a read: the execution waited for, and its first page, which tells the columns, the total
 * and the real page size. For an execution id the first page (and the first CSV pages of `headStart()`)
 * is asked for while the status is still on its way.
 */
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { ColumnSpec } from '../../types/decode.ts';
import { InvalidResponseError } from '../../client/errors.ts';
import type { CsvHead } from '../nativeWire/csvHead.ts';
import type { ResolvedSource, StreamSource } from '../source.ts';
import { abortError } from './abort.ts';
import type { StreamOptions } from './options.ts';
import type { PageFetcher } from './pageFetch.ts';
import type { Fetched, RawPage } from './rawPage.ts';
import type { Resolution } from './resolution.ts';

/** What the first page told about the result. */
export interface ResultInfo {
  readonly executionId: string;
  readonly queryId: number | undefined;
  /** False when a stored result was reused (a query's latest result, or an execution id). */
  readonly started: boolean;
  readonly columns: readonly ColumnSpec[];
  /** `total_row_count` (with `filters`, the unfiltered total: the service does not count matches). */
  readonly totalRows: number;
  /** Rows per page the service actually returns. */
  readonly pageSize: number;
  readonly status: ExecutionStatus;
}

/** The first page asked for before the execution's status was known (`firstPageEarly`). */
interface EarlyPage {
  /** When it was requested: the first read's rates count from there when it is used. */
  readonly requestedAt: number;
  /** Stops the request (its answer is not wanted). */
  stop(): void;
  /** The page, when the execution's final `status` lets it stand for the first page; else undefined (stopped). */
  usable(status: ExecutionStatus): Promise<Fetched | undefined>;
}

/** A read opened: what the first page told, and that page, kept for the first read. */
export interface Started {
  readonly info: ResultInfo;
  readonly resolved: ResolvedSource;
  /** Kept for the first read only, then dropped: nothing holds pages the consumer has had. */
  first: RawPage | undefined;
  /** Where the first page starts: `startOffset`, or the start of the page of the grid holding it. */
  readonly firstOffset: number;
  /** When the first page was requested: the first read's rates count from there. */
  firstRequestedAt: number | undefined;
}

/** What opening a read needs of its stream. */
export interface Opening {
  readonly source: StreamSource;
  readonly options: StreamOptions;
  readonly fetcher: PageFetcher;
  /** The execution was looked for already (`ready()`): no page is asked for before its status is known. */
  readonly resolving: boolean;
  /** The execution, once its result can be read. */
  resolution(): Promise<Resolution>;
  /** The first CSV pages' requests, when `headStart()` asked for them. */
  startHead(executionId: string, offset: number, total: () => number | undefined): CsvHead | undefined;
  /** Opening failed: the stream forgets it (before the failure is thrown), so that a later call tries again. */
  failed(): void;
}

/** Waits for the execution and reads its first page; a failure stops the pages asked for early. */
export async function openRead(read: Opening): Promise<Started> {
  const { options, fetcher } = read;
  const { signal } = options;
  const start = options.startOffset ?? 0;
  const firstOffset = options.pageSize === undefined ? start : start - (start % options.pageSize);
  let early: EarlyPage | undefined;
  let head: CsvHead | undefined;
  try {
    early = firstPageEarly(read, firstOffset);
    // With the early page (an execution id, its status not known yet), the first CSV page too.
    // No page is asked for ahead past the result's end, once the status tells it.
    let total: number | undefined;
    const totalRows = () => total;
    if (early !== undefined) head = read.startHead((read.source as { executionId: string }).executionId, firstOffset, totalRows);
    let found: Resolution;
    try {
      found = await read.resolution();
    } catch (error) {
      // Nothing waits for the early pages once the wait has failed: stop them.
      early?.stop();
      throw error;
    }
    const resolved = found.resolved;
    total = found.status.result_metadata?.total_row_count;
    // Pages of an execution whose result cannot be read (not finished, partial) are not wanted.
    if (found.status.state !== 'QUERY_STATE_COMPLETED' && !(found.status.state === 'QUERY_STATE_COMPLETED_PARTIAL' && options.allowPartialResults)) head?.stop();
    else head ??= read.startHead(resolved.execution.id, firstOffset, totalRows);
    const earlyPage = await early?.usable(found.status);
    const firstRequestedAt = earlyPage === undefined ? performance.now() : early!.requestedAt;
    const firstPage = earlyPage ?? (await fetcher.fetchFirst(resolved.execution.id, firstOffset, signal));
    // Over Arrow pages, nothing is exported natively: the CSV page is not wanted.
    if (fetcher.arrowOffered) head?.stop();
    const first = fetcher.check(resolved, firstPage, undefined);
    checkUniqueNames(first.metadata.column_names, resolved.execution.id);
    const metadata = first.metadata;
    const columns = metadata.column_names.map((name, i) => ({ name, type: metadata.column_types[i] ?? 'varchar' }));
    // The first page tells the real page size: the service may have lowered the limit asked for.
    const pageSize = first.nextOffset !== undefined && first.rowCount > 0 ? first.rowCount : (options.pageSize ?? Math.max(1, first.rowCount));
    const queryId = resolved.queryId ?? (firstPage.page.query_id || undefined);
    const info: ResultInfo = {
      executionId: resolved.execution.id,
      queryId,
      started: resolved.started,
      columns,
      totalRows: metadata.total_row_count,
      pageSize,
      status: found.status,
    };
    return { info, resolved, first, firstOffset, firstRequestedAt };
  } catch (error) {
    head?.stop();
    read.failed();
    throw abortError(error, signal, 'stream');
  }
}

/**
 * For an execution id whose status is not known yet, the first page is asked for together with
 * the status instead of one round trip after it: a finished result then costs one round trip to
 * start, not two. The page is used only when the status says COMPLETED and the page holds a
 * result; anything else (still running, partial, failed, the request failing) drops it and the
 * first page is asked for again after the wait, exactly as without it. The early request is an
 * ordinary request: the key's rate governor counts it, and its retries are the client's.
 */
function firstPageEarly(read: Opening, offset: number): EarlyPage | undefined {
  const source = read.source;
  if (read.resolving || !('executionId' in source) || typeof source.executionId !== 'string' || source.executionId === '') return undefined;
  const controller = new AbortController();
  const signal = read.options.signal === undefined ? controller.signal : AbortSignal.any([read.options.signal, controller.signal]);
  const requestedAt = performance.now();
  const fetched: Promise<Fetched | undefined> = read.fetcher.fetchFirst(source.executionId, offset, signal).then(
    (f) => f,
    () => undefined,
  );
  return {
    requestedAt,
    stop: () => controller.abort(),
    usable: async (status) => {
      if (status.state !== 'QUERY_STATE_COMPLETED') {
        controller.abort();
        return undefined;
      }
      const got = await fetched;
      return got !== undefined && got.page.state === 'QUERY_STATE_COMPLETED' && got.page.result !== undefined ? got : undefined;
    },
  };
}

/**
 * JSON rows are objects keyed by column name, so two columns of one name arrive as one value (the
 * last): the other column's values are already lost. Refused rather than passed on as wrong data.
 */
function checkUniqueNames(names: readonly string[], executionId: string): void {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const name of names) (seen.has(name) ? repeated : seen).add(name);
  if (repeated.size === 0) return;
  const list = [...repeated].map((n) => JSON.stringify(n)).join(', ');
  // InvalidResponseError: a result the rows of the wire cannot represent faithfully. (Our service renames
  // duplicates, `a`, `a_1`, so only another implementation of the protocol sends them.)
  throw new InvalidResponseError(
    `column name${repeated.size > 1 ? 's' : ''} ${list} appear${repeated.size > 1 ? '' : 's'} more than once in the result; JSON rows hold one value per name, ` +
      `so all but the last such column would be wrong: give each column its own name (SELECT x AS a, y AS a_2)`,
    { method: 'stream', executionId },
  );
}
