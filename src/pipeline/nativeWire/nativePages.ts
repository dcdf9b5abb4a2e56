import { InvalidResponseError, type ErrorContext } from '../../client/errors.ts';
import type { KeepCoded } from '../../client/transport.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_PREFETCH, fetchOrdered, type OrderedPage, type PageShape } from '../fetchOrdered.ts';
import type { RangeClient, RangeReader } from '../stream.ts';
import type { NativePages } from './duckdbColumns.ts';
import { pageRows } from './pageRows.ts';
import { zstdHead, zstdIncomplete } from './zstdFrames.ts';

/** A page as DuckDB reads it: the JSON body's rows array, or the CSV page whole (its header line included). */
export interface NativePage extends PageShape {
  readonly bytes: Uint8Array;
  /** The content coding `bytes` are still in (a CSV page as it came off the wire): DuckDB decodes it. */
  readonly coding?: 'zstd' | undefined;
}

/**
 * How CSV pages are asked for unless the client's compression is off: in zstd (alone where the
 * client asks for no compression of its own, as on loopback), kept as they come: DuckDB's CSV
 * reader decodes zstd at about no cost beside the parsing, so the client never decodes, joins or
 * frees the page's text, a fifth of the bytes. Each is walked whole first (zstdFrames.ts). A page
 * in another coding (gzip, which DuckDB would read without checking it whole) is decoded as usual.
 */
export const KEEP_ZSTD: KeepCoded = { codings: ['zstd'], whole: (_coding, body) => zstdIncomplete(body) };

/** Where the pages come from and in which encoding. */
export interface PageSource {
  readonly client: RangeClient;
  readonly reader: RangeReader;
  readonly pages: NativePages;
  /** The result's column names: the header every CSV page must start with, in this order. */
  readonly columns: readonly string[];
  readonly signal?: AbortSignal | undefined;
}

/**
 * The pages holding rows `[firstRow, firstRow + rows)`, on the stream's page grid (the first may
 * start before `firstRow`), fetched bounded and in order.
 */
export function rangePages(source: PageSource, firstRow: number, rows: number): AsyncIterable<OrderedPage<NativePage>> {
  const o = source.reader.options;
  const pageSize = o.pageSize ?? rows;
  return fetchOrdered<NativePage>((request, signal) => (source.pages === 'csv' ? csvPage(source, request, signal) : jsonPage(source, request, signal)), {
    start: Math.floor(firstRow / pageSize) * pageSize,
    pageSize,
    totalRows: firstRow + rows,
    endOffset: firstRow + rows,
    concurrency: o.concurrency ?? DEFAULT_CONCURRENCY,
    // Each page goes to disk as soon as it is handed over, so the pages held beyond those in
    // flight are not for a slow consumer but for pages that come in out of order: without room
    // for them, a page done before the one at the cursor holds its request's place, and fewer
    // requests are in flight until that one comes in (on a link of some latency, most of the time).
    prefetch: o.prefetch ?? DEFAULT_PREFETCH,
    signal: source.signal,
  });
}

/** A page request's options, shaped as the stream's reads are: its columns, its order, partial results. */
export function shapedPage(o: { readonly columns?: string[] | undefined; readonly sortBy?: string | undefined; readonly allowPartialResults?: boolean | undefined }, request: { offset: number; limit?: number | undefined }, signal: AbortSignal) {
  return {
    offset: request.offset,
    ...(request.limit === undefined ? {} : { limit: request.limit }),
    ...(o.columns === undefined ? {} : { columns: o.columns }),
    ...(o.sortBy === undefined ? {} : { sortBy: o.sortBy }),
    ...(o.allowPartialResults ? { allowPartialResults: true } : {}),
    signal,
  };
}

async function jsonPage(source: PageSource, request: { offset: number; limit: number }, signal: AbortSignal): Promise<NativePage> {
  const { client, reader } = source;
  const ctx: ErrorContext = { method: 'writeNativeParts', executionId: reader.executionId };
  const answer = await client.getResultsWire(reader.executionId, { ...shapedPage(source.reader.options, request, signal), accept: 'json' });
  if (answer.format !== 'json') throw new InvalidResponseError('asked for a JSON page, got Arrow', ctx);
  const { page, rows } = pageRows(answer.body, answer.context ?? ctx);
  const result = page.result;
  if (result === undefined) throw new InvalidResponseError(`result page of a ${page.state} execution has no result`, ctx);
  reader.page(result.metadata.row_count, result.metadata.result_set_bytes, answer.decodedBytes, answer.bytes);
  return { bytes: rows, rowCount: result.metadata.row_count, nextOffset: page.next_offset };
}

/**
 * A CSV page. It tells its rows only by where the next page starts (`x-service-next-offset`; the
 * last page runs to the end of the result): the part's statement checks the rows it wrote against
 * that count. Its header must be the result's column names in their order, as DuckDB reads the
 * columns by position.
 */
async function csvPage(source: PageSource, request: { offset: number; limit: number }, signal: AbortSignal): Promise<NativePage> {
  const { client, reader } = source;
  let sizes: [number, number] = [0, 0];
  const keep = reader.connection.compression === 'off' ? {} : { keepCoded: KEEP_ZSTD };
  // The first page may be under way already, asked for while the stream learnt the columns.
  const ahead = await reader.csvHead?.take(request, signal);
  if (ahead !== undefined) sizes = [ahead.wireBytes, ahead.decodedBytes];
  const page = ahead?.page ?? (await client.getResultsCsv(reader.executionId, { ...shapedPage(source.reader.options, request, signal), ...keep, onBodyBytes: (wire, decoded) => (sizes = [wire, decoded]) }));
  const coding = page.coding === 'zstd' ? 'zstd' : undefined;
  const head = coding === undefined ? page.body : csvHead(page.body);
  const header = csvHeaderOf(head);
  if (header === undefined || header.length !== source.columns.length || header.some((name, i) => name !== source.columns[i])) {
    throw new InvalidResponseError(
      `the CSV page at row ${request.offset} starts with ${JSON.stringify(head.subarray(0, 200).toString('utf8').split('\n')[0])}, not the result's columns ${JSON.stringify(source.columns.join(','))}`,
      { method: 'writeNativeParts', executionId: reader.executionId },
    );
  }
  const end = page.nextOffset ?? reader.totalRows;
  const rowCount = Math.max(0, end - request.offset);
  reader.page(rowCount, sizes[1], sizes[1], sizes[0]);
  return { bytes: page.body, coding, rowCount, nextOffset: page.nextOffset };
}

/** The start of a zstd page, decoded: enough for its header line. */
function csvHead(body: Buffer): Buffer {
  const head = zstdHead(body, 64 * 1024);
  return head.includes(0x0a) ? head : zstdHead(body, 1 << 20);
}

/**
 * The fields of a CSV page's header line, RFC 4180 (a field quoted or not, `""` a quote inside
 * quotes), or undefined when the page has no complete line.
 */
export function csvHeaderOf(body: Buffer): string[] | undefined {
  const text = body.subarray(0, Math.min(body.length, 1 << 20)).toString('utf8');
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (text[i] === '"') {
      for (i++; ; i++) {
        if (i >= text.length) return undefined;
        if (text[i] !== '"') field += text[i];
        else if (text[i + 1] === '"') field += text[i++];
        else break;
      }
      i++;
    } else {
      const end = text.slice(i).search(/[,\r\n]/);
      if (end < 0) return undefined;
      field = text.slice(i, i + end);
      i += end;
    }
    fields.push(field);
    if (text[i] === ',') i++;
    else return text[i] === '\n' || text[i] === '\r' ? fields : undefined;
  }
}
