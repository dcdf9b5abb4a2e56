/**
 * One result page asked for as the stream wants it (its wire, columns, order, the rows it reads of
 * the page), and checked to be a page of the stream's result: the first page's request, which tells
 * whether the service serves Arrow pages, and every other page's.
 */
import { InvalidResponseError } from '../../client/errors.ts';
import { releaseBody } from '../../client/pageBody.ts';
import type { WirePage } from '../../client/serviceClient.ts';
import { sameColumns, type ColumnSpec } from '../../types/decode.ts';
import type { ResolvedSource, StreamClient } from '../source.ts';
import { learnArrowServed } from './arrowServed.ts';
import { streamWire, type StreamOptions } from './options.ts';
import type { Fetched, PageMode, RawPage } from './rawPage.ts';
import { locatedRows } from './textPageRows.ts';
import type { TextPages } from './textPages.ts';

/** Asks the service for pages of one stream, with its options; learns from the first page whether the service serves Arrow. */
export class PageFetcher {
  readonly #client: StreamClient;
  /** The stream's options, the same object (`seek()` changes it before the first page). */
  readonly #options: StreamOptions;
  #arrowOffered = false;

  constructor(client: StreamClient, options: StreamOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** Whether the service answered the first page with Arrow (known once the first page arrived). */
  get arrowOffered(): boolean {
    return this.#arrowOffered;
  }

  /** The first page: on the JSON wire, or asking for Arrow (which tells whether the service serves it). */
  fetchFirst(executionId: string, offset: number, signal: AbortSignal | undefined): Promise<Fetched> {
    return streamWire(this.#options) === 'json' ? this.#fetchFirstJson(executionId, offset, signal) : this.#fetchFirstArrow(executionId, offset, signal);
  }

  /** The first page on the JSON wire (see {@link firstJson}). */
  async #fetchFirstJson(executionId: string, offset: number, signal: AbortSignal | undefined): Promise<Fetched> {
    const answer = await this.#client.getResultsWire(executionId, { ...this.#resultOptions({ offset, limit: this.#options.pageSize }, signal), accept: 'json' });
    if (answer.format === 'arrow') {
      throw new InvalidResponseError('response does not match the protocol: JSON was asked for and an Arrow stream came back', { method: 'getResults', executionId });
    }
    return firstJson(answer);
  }

  /**
   * The first page, asking for Arrow: the answer tells whether the service serves Arrow pages. A JSON
   * answer is parsed here (it is one page), and settles the wire: JSON for `auto`, an error for `arrow`.
   */
  async #fetchFirstArrow(executionId: string, offset: number, signal: AbortSignal | undefined): Promise<Fetched> {
    const answer = await this.#client.getResultsWire(executionId, { ...this.#resultOptions({ offset, limit: this.#options.pageSize }, signal), accept: 'arrow' });
    if (answer.format === 'arrow') {
      this.#arrowOffered = true;
      learnArrowServed(this.#client);
      return { page: answer.page, httpBytes: answer.decodedBytes, wireBytes: answer.bytes, ipc: answer.ipc };
    }
    const first = firstJson(answer);
    if (this.#options.wire === 'arrow' && (answer.refused || first.page.result !== undefined)) {
      throw new InvalidResponseError(
        `wire 'arrow' was asked for, but the service ${answer.refused ? 'refused Arrow pages (406)' : 'answered a result page as JSON'}: it does not serve Arrow pages; use wire 'auto' (Arrow when offered, else JSON) or 'json'`,
        { method: 'stream', executionId },
      );
    }
    return first;
  }

  /**
   * The page of `request`: Arrow pages (`arrow`), or JSON pages (`rows`), read from their text by
   * `text` while it is live, else parsed.
   */
  async fetch(
    executionId: string,
    request: { offset: number; limit: number | undefined },
    signal: AbortSignal | undefined,
    mode: PageMode = 'rows',
    text?: TextPages,
  ): Promise<Fetched> {
    const options = this.#resultOptions(request, signal);
    if (mode === 'rows' && text?.live) {
      const answer = await this.#client.getResultsWire(executionId, { ...options, accept: 'json' });
      if (answer.format === 'arrow') {
        throw new InvalidResponseError('response does not match the protocol: JSON was asked for and an Arrow stream came back', { method: 'getResults', executionId });
      }
      const { skip, take } = this.#wanted(request.offset);
      const read = text.read(answer, request.offset, skip, take) ?? { page: answer.parse() };
      releaseBody(answer.body);
      return { ...read, httpBytes: answer.decodedBytes, wireBytes: answer.bytes };
    }
    if (mode === 'rows') {
      let httpBytes = 0;
      let wireBytes = 0;
      const page = await this.#client.getResults(executionId, { ...options, onBodyBytes: (wire, decoded) => ((wireBytes = wire), (httpBytes = decoded)) });
      return { page, httpBytes, wireBytes };
    }
    const answer = await this.#client.getResultsWire(executionId, { ...options, accept: 'arrow' });
    if (answer.format === 'arrow') return { page: answer.page, httpBytes: answer.decodedBytes, wireBytes: answer.bytes, ipc: answer.ipc };
    return { page: answer.parse(), httpBytes: answer.decodedBytes, wireBytes: answer.bytes };
  }

  /**
   * The rows of the page at `offset` this read wants, page-relative: from where the read starts in
   * the page to where it ends. No row before or after is decoded (if a page before ran past its
   * limit, the consumer cuts the rows it already had).
   */
  #wanted(offset: number): { skip: number; take: number } {
    const o = this.#options;
    return { skip: Math.max(0, (o.startOffset ?? 0) - offset), take: (o.endOffset ?? Number.MAX_SAFE_INTEGER) - offset };
  }

  #resultOptions(request: { offset: number; limit: number | undefined }, signal: AbortSignal | undefined) {
    const o = this.#options;
    return {
      offset: request.offset,
      ...(request.limit === undefined ? {} : { limit: request.limit }),
      ...(o.columns === undefined ? {} : { columns: o.columns }),
      ...(o.filters === undefined ? {} : { filters: o.filters }),
      ...(o.sortBy === undefined ? {} : { sortBy: o.sortBy }),
      ...(o.allowPartialResults ? { allowPartialResults: true } : {}),
      ...(signal === undefined ? {} : { signal }),
    };
  }

  /** A page with a result, and the same columns as the first page: one schema for the whole stream. */
  check(resolved: ResolvedSource, { page, httpBytes, wireBytes, ipc, typed, batch, later }: Fetched, columns: readonly ColumnSpec[] | undefined): RawPage {
    const result = page.result;
    const ctx = { method: 'stream', executionId: resolved.execution.id };
    if (result === undefined) {
      resolved.execution.settle(page, 'stream', this.#options.allowPartialResults ?? false);
      throw new InvalidResponseError(`result page of a ${page.state} execution has no result`, ctx);
    }
    const m = result.metadata;
    if (m.column_names.length !== m.column_types.length) {
      throw new InvalidResponseError(`result page has ${m.column_names.length} column_names but ${m.column_types.length} column_types`, ctx);
    }
    if (columns !== undefined && !sameColumns(columns, m.column_names, m.column_types)) {
      throw new InvalidResponseError(
        `columns changed between pages: first ${describeColumns(columns)}, now ${describeColumns(m.column_names.map((name, i) => ({ name, type: m.column_types[i]! })))}`,
        ctx,
      );
    }
    const checked = { ipc, typed, batch, later, rowCount: m.row_count, nextOffset: page.next_offset, bytes: m.result_set_bytes, httpBytes, wireBytes, metadata: m };
    if (later === undefined) return { rows: result.rows, ...checked };
    // Rows left in the text are parsed only if something asks for them parsed (the general path).
    let parsed: readonly unknown[] | undefined;
    return {
      get rows() {
        return (parsed ??= later.parse().result?.rows ?? []);
      },
      ...checked,
    };
  }
}

/**
 * A first page that came as JSON: its rows located in its text and left there (`later`), its
 * envelope validated as a parse validates it; parsed whole when its rows cannot be located. Its
 * columns are not known yet: parsing a page of a few MB here would cost the time of reading its
 * rows from the text, and hold back the requests of the pages after it.
 */
function firstJson(answer: Extract<WirePage, { format: 'json' }>): Fetched {
  const bytes = { httpBytes: answer.decodedBytes, wireBytes: answer.bytes };
  const r = locatedRows(answer);
  if (r === undefined) return { page: answer.parse(), ...bytes };
  return { page: r.page, later: { text: r.text, where: r.where, parse: () => answer.parse() }, ...bytes };
}

function describeColumns(columns: readonly ColumnSpec[]): string {
  return `(${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`;
}
