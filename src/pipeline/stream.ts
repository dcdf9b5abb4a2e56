/**
 * A result as a stream: `stream()` and `ResultStream`, which reads an execution (or SQL, a saved
 * query, a view refresh) as typed rows, Arrow batches, a Node stream or a DataFrame, and hands the
 * native path its range reader. Its parts live in ./stream/: the options (options.ts), the source
 * resolved (resolution.ts), the first page (firstPage.ts), one page's request (pageFetch.ts), the
 * pages of a read (pageSequence.ts), rows read from a page's text (textPages.ts), batches
 * (arrowBatches.ts), the row cursor (rowCursor.ts), the range reader (rangeReader.ts) and what a
 * client's service was seen to serve (arrowServed.ts).
 */
import { Readable } from 'node:stream';
import type { RecordBatch, Schema } from 'apache-arrow';
import { InvalidArgumentError } from '../client/errors.ts';
import { arrowSchema } from '../types/arrow.ts';
import { compileJsonRowAppender, compileTextBatchReader, createBatchBuilder, restartRowOffset } from '../types/batch.ts';
import { compileRowDecoder, type Row, type RowDecoder } from '../types/decode.ts';
import { compileTextRowReader, type TextRowReader } from '../types/textRowReader.ts';
import { compileTextRows } from '../types/textRows.ts';
import { toDataFrame, type PolarsDataFrame } from './dataFrame.ts';
import type { CsvHead } from './nativeWire/csvHead.ts';
import { ProgressTracker, type Progress } from './progress.ts';
import type { StreamClient, StreamSource } from './source.ts';
import { builtBatches, fromSkip, pageBatches } from './stream/arrowBatches.ts';
import { openRead, type ResultInfo, type Started } from './stream/firstPage.ts';
import { checkBatchSize, checkOptions, streamWire, type BatchOptions, type NodeStreamOptions, type StreamOptions } from './stream/options.ts';
import { PageFetcher } from './stream/pageFetch.ts';
import { pageSequence } from './stream/pageSequence.ts';
import { headWanted, rangeReaderOf, startStreamHead, type RangeReader } from './stream/rangeReader.ts';
import type { PageMode, RawPage, RowsLater } from './stream/rawPage.ts';
import { resolveReady, type Ready, type Resolution } from './stream/resolution.ts';
import { RowCursor, type RowPage } from './stream/rowCursor.ts';
import { TextPageRows } from './stream/textPageRows.ts';
import { TextPages } from './stream/textPages.ts';

// The types of the stream's API, where its callers find them.
export { DEFAULT_WIRE, type BatchOptions, type NodeStreamOptions, type StreamOptions } from './stream/options.ts';
export type { RangeClient, RangeReader } from './stream/rangeReader.ts';
export type { Ready } from './stream/resolution.ts';
export type { ResultInfo } from './stream/firstPage.ts';

/**
 * Streams the result of `source` as typed rows. Nothing is requested until the stream is consumed
 * (or `schema()` / `info()` is asked). Each consumption reads the result again from the service; the
 * execution is found or started only once.
 *
 * ```ts
 * for await (const row of stream(client, { sql: 'SELECT ...' }, { concurrency: 4 })) ...
 * ```
 */
export function stream(client: StreamClient, source: StreamSource, options: StreamOptions = {}): ResultStream {
  return new ResultStream(client, source, options);
}

export class ResultStream implements AsyncIterable<Row> {
  readonly #client: StreamClient;
  readonly #source: StreamSource;
  readonly #options: StreamOptions;
  /** Asks for pages; knows whether the service answered the first page with Arrow. */
  readonly #fetcher: PageFetcher;
  #ready: Promise<Resolution> | undefined;
  #started: Promise<Started> | undefined;
  #schema: Schema | undefined;
  #progress: ProgressTracker | undefined;
  /** `headStart()` was called: the first CSV page is asked for with the first page. */
  #headWanted = false;
  #csvHead: CsvHead | undefined;

  constructor(client: StreamClient, source: StreamSource, options: StreamOptions = {}) {
    checkOptions(options);
    this.#client = client;
    this.#source = source;
    this.#options = { ...options };
    this.#fetcher = new PageFetcher(client, this.#options);
  }

  /**
   * Finds or starts the execution and waits until its result can be read, reading no page: for a
   * caller that decides, from the execution's status, what to read (a job's budget, its outputs
   * already committed). On abort while waiting, `cancelOnAbort` cancels the execution.
   */
  async ready(): Promise<Ready> {
    const { executionId, started, status } = await this.#resolution();
    return { executionId, started, status };
  }

  #resolution(): Promise<Resolution> {
    this.#ready ??= this.#resolve();
    return this.#ready;
  }

  /**
   * Where the read starts (a resumed export): `startOffset` and `pageSize` as in the options.
   * Only before the first page was read (`schema`, `info`, rows or batches).
   */
  seek(position: Pick<StreamOptions, 'startOffset' | 'pageSize'>): void {
    if (this.#started !== undefined) throw new InvalidArgumentError('seek must come before the first page is read', { method: 'seek' });
    checkOptions(position);
    if (position.startOffset !== undefined) this.#options.startOffset = position.startOffset;
    if (position.pageSize !== undefined) this.#options.pageSize = position.pageSize;
  }

  /**
   * For a caller about to export natively over CSV pages (src/export/nativeExport.ts): the first
   * CSV page is asked for together with the first page (which tells the columns), not one round trip
   * and a page's transfer after it, then the pages after it up to `concurrency` (nativeWire/csvHead.ts),
   * and `rangeReader()` hands them to the range read starting there. Pages not used (the export
   * took another path) cost their requests; under `auto`, a service that
   * answers the first page as Arrow has it stopped; a client told its service serves Arrow pages
   * (the embedded service), or under `auto` one whose service answered an earlier page as Arrow
   * (stream/arrowServed.ts), asks for none, since that service would encode CSV pages no output
   * reads. Only before the first page was read, and where
   * rows can be read by range over JSON pages (no `filters`, not `wire: arrow`, a client that reads
   * CSV pages).
   */
  headStart(): void {
    this.#headWanted = this.#started === undefined && headWanted(this.#client, this.#options);
  }

  /** The first CSV page's request, when `headStart()` asked for it and the execution's result can be read. */
  #startHead(executionId: string, offset: number, total: () => number | undefined): CsvHead | undefined {
    if (!this.#headWanted) return undefined;
    this.#csvHead = startStreamHead(this.#client, this.#options, executionId, offset, total);
    return this.#csvHead;
  }

  /** Typed rows, keyed by column name in `column_names` order. */
  [Symbol.asyncIterator](): AsyncIterator<Row> {
    return this.rows();
  }

  rows(): AsyncGenerator<Row, void, undefined> {
    return new RowCursor(this.#rowPages());
  }

  /** The pages of `rows()`, each a way to build its rows. */
  async *#rowPages(): AsyncGenerator<RowPage, void, undefined> {
    const started = await this.#start();
    // A first page that came as Arrow has no JSON rows: it is read again as JSON.
    if (started.first?.ipc !== undefined) started.first = undefined;
    const typing = { dates: this.#options.dates, timestamps: this.#options.timestamps };
    const decode = compileRowDecoder(started.info.columns, typing);
    const reader = compileTextRowReader(started.info.columns, typing);
    const text = reader === undefined ? undefined : new TextPages({ rows: reader, eager: compileTextRows(started.info.columns, typing), decode });
    for await (const { page, offset, skip, take } of this.#pages(started, 'rows', text)) {
      const typed = page.typed ?? (page.later === undefined || reader === undefined ? undefined : laterRows(reader, page, page.later, decode, offset));
      if (typed !== undefined) {
        yield { at: typed.at, next: skip, end: take };
        continue;
      }
      const rows = page.rows;
      yield { at: (i) => decode(rows[i], offset + i), next: skip, end: take };
    }
  }

  /** Arrow RecordBatches, all with the one schema of `schema()`. */
  async *batches(options: BatchOptions = {}): AsyncGenerator<RecordBatch, void, undefined> {
    const batchSize = options.batchSize;
    checkBatchSize(batchSize, streamWire(this.#options));
    const started = await this.#start();
    const mode: PageMode = this.#fetcher.arrowOffered && batchSize === undefined ? 'arrow' : 'rows';
    if (mode === 'rows' && started.first?.ipc !== undefined) started.first = undefined;
    const schema = this.#arrowSchema(started.info);
    // Rows reach the builder contiguously from startOffset: its count is then the row's offset in the result.
    const builder = createBatchBuilder(schema, { firstRowOffset: this.#options.startOffset ?? 0 });
    const append = compileJsonRowAppender(builder, started.info.columns);
    const ctx = { method: 'batches', executionId: started.info.executionId };
    // Page by page, JSON pages go from their text into a batch of their own, with no parsed rows.
    const reader = mode === 'rows' && batchSize === undefined ? compileTextBatchReader(schema, started.info.columns) : undefined;
    const text = reader === undefined ? undefined : new TextPages({ batch: reader });
    for await (const { page, offset, skip, take } of this.#pages(started, mode, text)) {
      if (page.ipc !== undefined) {
        yield* pageBatches(page, schema, skip, take, ctx);
      } else if (page.batch !== undefined) {
        const kept = fromSkip(page.batch, skip);
        if (kept.numRows > 0) yield kept;
      } else {
        // Pages read from their text did not go through the builder: it counts from this page.
        if (text !== undefined) restartRowOffset(builder, offset + skip);
        yield* builtBatches(builder, (from, to) => append(page.rows, from, to, offset), skip, take, batchSize);
      }
    }
    if (builder.length > 0) yield builder.flush();
  }

  /**
   * How a row range of this result is read as this stream would read it (the same execution,
   * wire, page grid, columns and order): for an export whose parts read their own rows (the native
   * path, src/export/nativeExport.ts). Reads
   * the first page if it was not read yet. Undefined when rows cannot be addressed by offset
   * (`filters`: the service does not count the matching rows) or the client cannot be copied.
   */
  async rangeReader(): Promise<RangeReader | undefined> {
    const client = this.#client;
    if (this.#options.filters !== undefined || client.connectionOptions === undefined) return undefined;
    const { info } = await this.#start();
    const progress = new ProgressTracker(this.#options.onProgress);
    this.#progress = progress;
    return rangeReaderOf(client, this.#options, { connection: client.connectionOptions(), info, csvHead: this.#csvHead, arrowOffered: this.#fetcher.arrowOffered, progress });
  }

  /** The Arrow schema of the result (reads the first page if it was not read yet). */
  async schema(): Promise<Schema> {
    return this.#arrowSchema((await this.#start()).info);
  }

  /** Execution, columns, total and page size (reads the first page if it was not read yet). */
  async info(): Promise<ResultInfo> {
    return (await this.#start()).info;
  }

  /** Progress of the current (or last) read. */
  get progress(): Progress | undefined {
    return this.#progress?.snapshot();
  }

  /**
   * An object-mode Readable for `stream.pipeline`: typed rows, or with `{ batches: true }` Arrow
   * RecordBatches (as `batches()` makes them). Destroying it stops the fetching.
   */
  toNodeStream(options: NodeStreamOptions = {}): Readable {
    // A batch is already many rows: buffering one ahead is enough to keep the fetcher busy.
    if (options.batches) return Readable.from(this.batches(options), { objectMode: true, highWaterMark: 1 });
    return Readable.from(this.rows(), { objectMode: true, highWaterMark: 64 });
  }

  /**
   * The whole result as a nodejs-polars DataFrame, built from Arrow IPC (building Series from JS
   * arrays page by page leaks native memory in polars). nodejs-polars is an optional peer dependency.
   */
  async toDataFrame(options: BatchOptions = {}): Promise<PolarsDataFrame> {
    return toDataFrame(await this.schema(), this.batches(options));
  }

  #arrowSchema(info: ResultInfo): Schema {
    const source = this.#source;
    this.#schema ??= arrowSchema(
      info.columns,
      {
        executionId: info.executionId,
        ...(info.queryId === undefined ? {} : { queryId: info.queryId }),
        ...('queryId' in source && source.parameters !== undefined ? { parameters: source.parameters } : {}),
        ...(info.status.execution_ended_at === undefined ? {} : { endedAt: info.status.execution_ended_at }),
      },
      this.#options.int256As === undefined ? {} : { int256As: this.#options.int256As },
    );
    return this.#schema;
  }

  #start(): Promise<Started> {
    this.#started ??= this.#begin();
    return this.#started;
  }

  async #resolve(): Promise<Resolution> {
    try {
      return await resolveReady(this.#client, this.#source, this.#options);
    } catch (error) {
      // A later call must not see this failure cached: let it try again.
      this.#ready = undefined;
      throw error;
    }
  }

  #begin(): Promise<Started> {
    return openRead({
      source: this.#source,
      options: this.#options,
      fetcher: this.#fetcher,
      resolving: this.#ready !== undefined,
      resolution: () => this.#resolution(),
      startHead: (executionId, offset, total) => this.#startHead(executionId, offset, total),
      failed: () => {
        this.#csvHead = undefined;
        // A later call must not see this failure cached: let it try again.
        this.#started = undefined;
      },
    });
  }

  #pages(started: Started, mode: PageMode, text?: TextPages) {
    return pageSequence({ options: this.#options, fetcher: this.#fetcher, track: (progress) => (this.#progress = progress) }, started, mode, text);
  }
}

/** The rows of a page left in its text (the first page), read from it as any other page's; parsed from the first row that is not. */
function laterRows(reader: TextRowReader, page: RawPage, later: RowsLater, decode: RowDecoder, offset: number): TextPageRows {
  return new TextPageRows(reader, later.text, later.where, page.rowCount, () => {
    const rows = page.rows;
    return (i) => decode(rows[i], offset + i);
  });
}
