import { Readable } from 'node:stream';
import { RecordBatch, RecordBatchReader, RecordBatchStreamWriter, type Schema } from 'apache-arrow';
import { AbortedError, InvalidArgumentError, InvalidResponseError, type ErrorContext } from '../client/errors.ts';
import type { ClientOptions } from '../client/config.ts';
import type { ServiceClient, Wire } from '../client/serviceClient.ts';
import type { ExecutionStatus, ResultMetadata, ResultPage } from '../protocol/index.ts';
import { arrowSchema, type ArrowTypeOptions } from '../types/arrow.ts';
import { type BatchBuilder, compileJsonRowAppender, compileTextBatchReader, createBatchBuilder, restartRowOffset, type TextBatchReader } from '../types/batch.ts';
import { compileRowDecoder, sameColumns, type ColumnSpec, type DecodeOptions, type Row } from '../types/decode.ts';
import { compileTextRows, type TextRead, type TextReader } from '../types/textRows.ts';
import { toDataFrame, type PolarsDataFrame } from './dataFrame.ts';
import { startCsvHead, type CsvHead } from './nativeWire/csvHead.ts';
import { releaseBody } from '../client/pageBody.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_PREFETCH, fetchOrdered, type OrderedPage, type PageRequest, type PageShape } from './fetchOrdered.ts';
import { ProgressTracker, type Progress, type ProgressListener } from './progress.ts';
import { resolveSource, type ResolvedSource, type StreamClient, type StreamSource } from './source.ts';

/**
 * Arrow pages when the service offers them, else JSON (the real service answers JSON to any Accept).
 * The local service pre-encodes Arrow pages as it does JSON ones, and `.batches()` and exports read
 * them several times as fast as JSON pages (the figures: docs/performance.md, from
 * `npm run bench -- parallel`); values are the same on either wire.
 */
export const DEFAULT_WIRE: Wire = 'auto';

export interface StreamOptions {
  /** Page requests in flight at most (default 4). */
  concurrency?: number;
  /** Pages fetched ahead beyond `concurrency`, waiting for a slow consumer (default 2). */
  prefetch?: number;
  /** Rows per page asked for; the service may lower it. Default: the service's page cap. */
  pageSize?: number;
  /**
   * Deliver rows from this offset of the result on (a resumed export). Pages stay on the grid
   * of `pageSize` when it is given: the page holding `startOffset` is read from its start and
   * its leading rows skipped, so batches are cut where a read from row 0 cuts them.
   */
  startOffset?: number;
  /**
   * Deliver only the rows before this offset of the result (one part of an export): pages are
   * planned up to it and the read ends there. Pages stay on the grid of `pageSize` as for `startOffset`.
   */
  endOffset?: number;
  /** Only these columns, in this order. */
  columns?: string[];
  /** Server-side filter (protocol.md section 4). */
  filters?: string;
  /** Server-side order, `col [asc|desc], ...`. */
  sortBy?: string;
  /** Stops waiting and every page request; the stream rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** On abort, also cancel the execution if it is still running (default false). */
  cancelOnAbort?: boolean;
  /** Read a COMPLETED_PARTIAL (truncated) result instead of failing with PartialResultError. */
  allowPartialResults?: boolean;
  /** Called after every page handed to the consumer. */
  onProgress?: ProgressListener;
  /** Called once the execution is known (started or found), before waiting for it: to log or cancel it. */
  onExecution?: (executionId: string, how: { started: boolean }) => void;
  /** `date` values in rows as `YYYY-MM-DD` strings (default) or Dates at UTC midnight. */
  dates?: DecodeOptions['dates'];
  /**
   * Timestamps in rows as Dates (`auto`, the default: milliseconds; a zoneless timestamp(p > 3) as
   * its exact text), or exactly: `micros` / `nanos`, a bigint count since the epoch (UTC);
   * `string`, the wire text. Batches keep every digit whatever this says.
   */
  timestamps?: DecodeOptions['timestamps'];
  /** uint256 / int256 in Arrow as Utf8 text (default) or Decimal256(76, 0). */
  int256As?: ArrowTypeOptions['int256As'];
  /**
   * Result pages of `batches()` as Arrow streams when the service offers them (`auto`: JSON from a
   * service that answers JSON or 406), only Arrow (`arrow`: a service without Arrow pages is an
   * error), or only JSON (`json`). The default is `auto` (see `DEFAULT_WIRE`). Batches hold the same values
   * whichever wire carried them. `rows()` reads JSON pages, and so does `batches({ batchSize })`
   * under `auto` (it re-cuts batches across pages).
   */
  wire?: Wire;
  /**
   * @deprecated Accepted and ignored, with one `DeprecationWarning` per process: pages are decoded on
   * the calling thread (decode threads took longer, and more CPU, than the calling thread alone).
   * To use more cores, run a job sharded (`sluice run --processes N`).
   */
  decodeThreads?: number;
}

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

export interface BatchOptions {
  /** Rows per RecordBatch; default: one batch per page. */
  batchSize?: number;
}

export interface NodeStreamOptions extends BatchOptions {
  /** Arrow RecordBatches instead of rows (`batchSize` then applies). */
  batches?: boolean;
}

/** The execution, once its result can be read. */
export interface Ready {
  readonly executionId: string;
  /** This stream (or, for an execution id, the caller earlier) started it; false for a stored result reused. */
  readonly started: boolean;
  readonly status: ExecutionStatus;
}

interface Resolution extends Ready {
  readonly resolved: ResolvedSource;
}

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

/** One page as the pipeline passes it on: raw rows of the wire, and where they sit in the result. */
interface RawPage extends PageShape {
  /** The page's rows as the JSON wire sent them; empty when they came decoded (`ipc`). */
  readonly rows: readonly unknown[];
  /** The page's rows as an Arrow IPC stream, from the Arrow wire. */
  readonly ipc: Uint8Array | undefined;
  /** The page's typed rows read from its text on this thread (`rows[i - from]` is row i), for `rows()`. */
  readonly typed?: TypedRows | undefined;
  /** The page's rows from its row `from` on, read from its text into one batch, for `batches()`. */
  readonly batch?: TextBatch | undefined;
  /** `result_set_bytes`: the service's count of the values as text. */
  readonly bytes: number;
  /** The HTTP body, decoded from its content coding. */
  readonly httpBytes: number;
  /** The HTTP body as it crossed the wire (compressed, when it was). */
  readonly wireBytes: number;
  readonly metadata: ResultMetadata;
}

interface Fetched {
  readonly page: ResultPage;
  readonly httpBytes: number;
  readonly wireBytes: number;
  readonly ipc?: Uint8Array | undefined;
  readonly typed?: TypedRows | undefined;
  readonly batch?: TextBatch | undefined;
}

/** Typed rows of a page from its row `from` on. */
interface TypedRows {
  readonly from: number;
  readonly rows: readonly Row[];
}

/** A page's rows from its row `from` on, as one batch. */
interface TextBatch {
  readonly from: number;
  readonly batch: RecordBatch;
}

/**
 * How this thread reads JSON pages whose columns it knows: straight from the text into typed rows
 * or into a batch (no parsed page in between). A page of another shape is parsed the general way;
 * after a few such pages the stream stops trying.
 */
class TextPages {
  readonly #read: TextReader<Row[]> | undefined;
  readonly #batch: TextBatchReader | undefined;
  #misses = 0;
  #hits = 0;

  constructor(read: { rows: TextReader<Row[]> } | { batch: TextBatchReader }) {
    this.#read = 'rows' in read ? read.rows : undefined;
    this.#batch = 'batch' in read ? read.batch : undefined;
  }

  /** Worth trying on the next page: not given up after pages of another shape. */
  get live(): boolean {
    return this.#misses < 3 || this.#misses <= this.#hits;
  }

  /** Reads rows `from` to `to - 1` of the page at `offset` from the answer's text; undefined: parse it. */
  read(answer: { parseText?: <T>(read: (text: string) => TextRead<T> | undefined) => { page: ResultPage; value: T } | undefined }, offset: number, from: number, to: number): Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined {
    let got: Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined;
    if (this.#read !== undefined) {
      const read = this.#read;
      const r = answer.parseText?.((text) => read(text, from, to));
      if (r !== undefined) got = { page: r.page, typed: { from, rows: r.value } };
    } else if (this.#batch !== undefined) {
      const batch = this.#batch;
      const r = answer.parseText?.((text) => batch(text, from, to, offset + from));
      if (r !== undefined) got = { page: r.page, batch: { from, batch: r.value } };
    }
    if (got === undefined) this.#misses++;
    else this.#hits++;
    return got;
  }
}

/** How pages are read: JSON pages (read from their text, or parsed), or Arrow pages. */
type PageMode = 'rows' | 'arrow';

/** The first page asked for before the execution's status was known (`#firstPageEarly`). */
interface EarlyPage {
  /** When it was requested: the first read's rates count from there when it is used. */
  readonly requestedAt: number;
  /** Stops the request (its answer is not wanted). */
  stop(): void;
  /** The page, when the execution's final `status` lets it stand for the first page; else undefined (stopped). */
  usable(status: ExecutionStatus): Promise<Fetched | undefined>;
}

interface Started {
  readonly info: ResultInfo;
  readonly resolved: ResolvedSource;
  /** Kept for the first read only, then dropped: nothing holds pages the consumer has had. */
  first: RawPage | undefined;
  /** Where the first page starts: `startOffset`, or the start of the page of the grid holding it. */
  readonly firstOffset: number;
  /** When the first page was requested: the first read's rates count from there. */
  firstRequestedAt: number | undefined;
}

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
  #ready: Promise<Resolution> | undefined;
  #started: Promise<Started> | undefined;
  #schema: Schema | undefined;
  #progress: ProgressTracker | undefined;
  /** Whether the service answered the first page with Arrow (known once the first page arrived). */
  #arrowOffered = false;
  /** `headStart()` was called: the first CSV page is asked for with the first page. */
  #headWanted = false;
  #csvHead: CsvHead | undefined;

  constructor(client: StreamClient, source: StreamSource, options: StreamOptions = {}) {
    checkOptions(options);
    this.#client = client;
    this.#source = source;
    this.#options = { ...options };
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
   * (the embedded service) asks for none, since that service would encode CSV pages no output
   * reads. Only before the first page was read, and where
   * rows can be read by range over JSON pages (no `filters`, not `wire: arrow`, a client that reads
   * CSV pages).
   */
  headStart(): void {
    this.#headWanted = this.#started === undefined && this.#wire() !== 'arrow' && this.#options.filters === undefined && this.#client.getResultsCsv !== undefined && this.#client.connectionOptions !== undefined && this.#client.connectionOptions().servesArrowPages !== true;
  }

  /** The first CSV page's request, when `headStart()` asked for it and the execution's result can be read. */
  #startHead(executionId: string, offset: number, total: () => number | undefined): CsvHead | undefined {
    if (!this.#headWanted) return undefined;
    const client = this.#client;
    const o = this.#options;
    this.#csvHead = startCsvHead(this.#rangeClient()!, {
      executionId,
      offset,
      limit: o.pageSize,
      columns: o.columns,
      sortBy: o.sortBy,
      allowPartialResults: o.allowPartialResults,
      compressionOff: client.connectionOptions!().compression === 'off',
      ahead: o.concurrency ?? DEFAULT_CONCURRENCY,
      total,
      signal: o.signal,
    });
    return this.#csvHead;
  }

  /** The stream's own client as range reads use it, when it reads CSV pages. */
  #rangeClient(): RangeClient | undefined {
    const client = this.#client;
    const csv = client.getResultsCsv?.bind(client);
    return csv === undefined ? undefined : { getResultsWire: client.getResultsWire.bind(client), getResultsCsv: csv };
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
    const reader = compileTextRows(started.info.columns, typing);
    const text = reader === undefined ? undefined : new TextPages({ rows: reader });
    for await (const { page, offset, skip, take } of this.#pages(started, 'rows', text)) {
      const typed = page.typed;
      if (typed !== undefined) {
        const { from, rows } = typed;
        yield { at: (i) => rows[i - from]!, next: skip, end: take };
        continue;
      }
      const rows = page.rows;
      yield { at: (i) => decode(rows[i], offset + i), next: skip, end: take };
    }
  }

  /** Arrow RecordBatches, all with the one schema of `schema()`. */
  async *batches(options: BatchOptions = {}): AsyncGenerator<RecordBatch, void, undefined> {
    const batchSize = options.batchSize;
    checkBatchSize(batchSize, this.#wire());
    const started = await this.#start();
    const mode: PageMode = this.#arrowOffered && batchSize === undefined ? 'arrow' : 'rows';
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
    const o = this.#options;
    const total = info.totalRows;
    const progress = new ProgressTracker(o.onProgress);
    this.#progress = progress;
    return {
      connection: client.connectionOptions(),
      client: this.#rangeClient(),
      csvHead: this.#csvHead,
      executionId: info.executionId,
      totalRows: total,
      wireChosen: this.#wire() === 'auto',
      options: {
        wire: this.#arrowOffered ? 'arrow' : 'json',
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
    const { signal, cancelOnAbort, allowPartialResults } = this.#options;
    let resolved: ResolvedSource | undefined;
    try {
      const found = await resolveSource(this.#client, this.#source, {
        signal,
        allowPartialResults,
        onExecution: (r) => {
          resolved = r;
          this.#options.onExecution?.(r.execution.id, { started: r.started });
        },
      });
      return { executionId: found.resolved.execution.id, started: found.resolved.started, status: found.status, resolved: found.resolved };
    } catch (error) {
      // Only an execution still running is worth cancelling: a finished one has nothing to stop.
      if (signal?.aborted && cancelOnAbort && resolved !== undefined) await cancelQuietly(resolved);
      // A later call must not see this failure cached: let it try again.
      this.#ready = undefined;
      throw abortError(error, signal, 'stream');
    }
  }

  /**
   * The wire to read. A service's Arrow pages carry the default mapping (uint256/int256 as text):
   * with `int256As: 'decimal256'` only the JSON wire gives the batches asked for, so `auto` reads
   * JSON, and an explicit `arrow` is refused instead of failing on the first page.
   */
  #wire(): Wire {
    const wire = this.#options.wire ?? DEFAULT_WIRE;
    if (this.#options.int256As !== 'decimal256') return wire;
    if (wire === 'arrow') {
      throw new InvalidArgumentError(`int256As 'decimal256' is built from JSON pages, which the Arrow wire does not carry: use wire 'auto' or 'json'`, { method: 'stream' });
    }
    return 'json';
  }

  async #begin(): Promise<Started> {
    const { signal } = this.#options;
    const start = this.#options.startOffset ?? 0;
    const firstOffset = this.#options.pageSize === undefined ? start : start - (start % this.#options.pageSize);
    let early: EarlyPage | undefined;
    let head: CsvHead | undefined;
    try {
      early = this.#firstPageEarly(firstOffset);
      // With the early page (an execution id, its status not known yet), the first CSV page too.
      // No page is asked for ahead past the result's end, once the status tells it.
      let total: number | undefined;
      const totalRows = () => total;
      if (early !== undefined) head = this.#startHead((this.#source as { executionId: string }).executionId, firstOffset, totalRows);
      let found: Resolution;
      try {
        found = await this.#resolution();
      } catch (error) {
        // Nothing waits for the early pages once the wait has failed: stop them.
        early?.stop();
        throw error;
      }
      const resolved = found.resolved;
      total = found.status.result_metadata?.total_row_count;
      // Pages of an execution whose result cannot be read (not finished, partial) are not wanted.
      if (found.status.state !== 'QUERY_STATE_COMPLETED' && !(found.status.state === 'QUERY_STATE_COMPLETED_PARTIAL' && this.#options.allowPartialResults)) head?.stop();
      else head ??= this.#startHead(resolved.execution.id, firstOffset, totalRows);
      const earlyPage = await early?.usable(found.status);
      const firstRequestedAt = earlyPage === undefined ? performance.now() : early!.requestedAt;
      const firstPage = earlyPage ?? (await this.#fetchFirst(resolved.execution.id, firstOffset, signal));
      // Over Arrow pages, nothing is exported natively: the CSV page is not wanted.
      if (this.#arrowOffered) head?.stop();
      const first = this.#check(resolved, firstPage, undefined);
      checkUniqueNames(first.metadata.column_names, resolved.execution.id);
      const metadata = first.metadata;
      const columns = metadata.column_names.map((name, i) => ({ name, type: metadata.column_types[i] ?? 'varchar' }));
      // The first page tells the real page size: the service may have lowered the limit asked for.
      const pageSize = first.nextOffset !== undefined && first.rowCount > 0 ? first.rowCount : (this.#options.pageSize ?? Math.max(1, first.rowCount));
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
      this.#csvHead = undefined;
      // A later call must not see this failure cached: let it try again.
      this.#started = undefined;
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
  #firstPageEarly(offset: number): EarlyPage | undefined {
    const source = this.#source;
    if (this.#ready !== undefined || !('executionId' in source) || typeof source.executionId !== 'string' || source.executionId === '') return undefined;
    const controller = new AbortController();
    const signal = this.#options.signal === undefined ? controller.signal : AbortSignal.any([this.#options.signal, controller.signal]);
    const requestedAt = performance.now();
    const fetched: Promise<Fetched | undefined> = this.#fetchFirst(source.executionId, offset, signal).then(
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

  /** The first page: on the JSON wire, or asking for Arrow (which tells whether the service serves it). */
  #fetchFirst(executionId: string, offset: number, signal: AbortSignal | undefined): Promise<Fetched> {
    return this.#wire() === 'json' ? this.#fetch(executionId, { offset, limit: this.#options.pageSize }, signal) : this.#fetchFirstArrow(executionId, offset, signal);
  }

  async *#pages(started: Started, mode: PageMode, text?: TextPages) {
    const { signal } = this.#options;
    const { info, resolved } = started;
    let first = started.first;
    started.first = undefined;
    const progress = new ProgressTracker(this.#options.onProgress, started.firstRequestedAt);
    started.firstRequestedAt = undefined;
    this.#progress = progress;
    const start = this.#options.startOffset ?? 0;
    const firstOffset = started.firstOffset;
    // With filters, total_row_count counts every row, not the matches: no estimate of time left.
    // A resumed read counts what is left from `startOffset`.
    const end = this.#options.endOffset ?? Number.POSITIVE_INFINITY;
    const total = this.#options.filters === undefined ? Math.max(0, Math.min(info.totalRows, end) - start) : undefined;
    /** Rows of a page at `offset` still before `end`: the read delivers no row past it. */
    const upTo = (offset: number, rowCount: number) => Math.max(0, Math.min(rowCount, end - offset));
    try {
      first ??= this.#check(resolved, await this.#fetch(resolved.execution.id, { offset: firstOffset, limit: info.pageSize }, signal, mode, text), info.columns);
      const firstTake = upTo(firstOffset, first.rowCount);
      const skip = Math.min(start - firstOffset, firstTake);
      progress.page(firstTake - skip, first.bytes, total, first.httpBytes, first.wireBytes);
      const firstOut = skip < firstTake ? { page: first, offset: firstOffset, skip, take: firstTake } : undefined;
      if (first.nextOffset === undefined || firstOffset + first.rowCount >= end) {
        if (firstOut !== undefined) yield firstOut;
        return;
      }

      const fetchPage = async (request: PageRequest, pageSignal: AbortSignal) =>
        this.#check(resolved, await this.#fetch(resolved.execution.id, request, pageSignal, mode, text), info.columns);
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
        concurrency: this.#options.concurrency ?? DEFAULT_CONCURRENCY,
        prefetch: this.#options.prefetch ?? DEFAULT_PREFETCH,
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

  /**
   * The first page, asking for Arrow: the answer tells whether the service serves Arrow pages. A JSON
   * answer is parsed here (it is one page), and settles the wire: JSON for `auto`, an error for `arrow`.
   */
  async #fetchFirstArrow(executionId: string, offset: number, signal: AbortSignal | undefined): Promise<Fetched> {
    const answer = await this.#client.getResultsWire(executionId, { ...this.#resultOptions({ offset, limit: this.#options.pageSize }, signal), accept: 'arrow' });
    if (answer.format === 'arrow') {
      this.#arrowOffered = true;
      return { page: answer.page, httpBytes: answer.decodedBytes, wireBytes: answer.bytes, ipc: answer.ipc };
    }
    const page = answer.parse();
    if (this.#options.wire === 'arrow' && (answer.refused || page.result !== undefined)) {
      throw new InvalidResponseError(
        `wire 'arrow' was asked for, but the service ${answer.refused ? 'refused Arrow pages (406)' : 'answered a result page as JSON'}: it does not serve Arrow pages; use wire 'auto' (Arrow when offered, else JSON) or 'json'`,
        { method: 'stream', executionId },
      );
    }
    return { page, httpBytes: answer.decodedBytes, wireBytes: answer.bytes };
  }

  async #fetch(
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
  #check(resolved: ResolvedSource, { page, httpBytes, wireBytes, ipc, typed, batch }: Fetched, columns: readonly ColumnSpec[] | undefined): RawPage {
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
    return { rows: result.rows, ipc, typed, batch, rowCount: m.row_count, nextOffset: page.next_offset, bytes: m.result_set_bytes, httpBytes, wireBytes, metadata: m };
  }
}

/** `batches()`'s options, checked before anything is read. */
function checkBatchSize(batchSize: number | undefined, wire: Wire): void {
  if (batchSize !== undefined && !(Number.isInteger(batchSize) && batchSize > 0)) {
    throw new InvalidArgumentError(`batchSize must be a positive integer, got ${batchSize}`, { method: 'batches' });
  }
  if (wire === 'arrow' && batchSize !== undefined) {
    throw new InvalidArgumentError(`batchSize re-cuts batches across pages, which the Arrow wire does not do: leave batchSize out or use wire 'auto' or 'json'`, {
      method: 'batches',
    });
  }
}

/**
 * A page's batch read from its text, from the read's row `skip` on. The batch starts where this
 * read starts in the page, unless the page before ran past its limit (a service may send more rows
 * than asked): then rows already delivered are cut.
 */
function fromSkip({ from, batch }: { readonly from: number; readonly batch: RecordBatch }, skip: number): RecordBatch {
  if (skip === from) return batch;
  const kept = new RecordBatch(batch.schema, compact(batch.slice(skip - from)).data);
  (kept as unknown as { schema: Schema }).schema = batch.schema;
  return kept;
}

/**
 * Rows `[skip, take)` of a page through the builder (`append(from, to)` appends those rows): with
 * `batchSize`, a batch each time the builder fills (the rest stays for the next page), in runs that
 * end where a batch fills, so batches are cut where a row-by-row loop cuts them; without, one batch.
 */
function* builtBatches(builder: BatchBuilder, append: (from: number, to: number) => void, skip: number, take: number, batchSize: number | undefined): Generator<RecordBatch, void, undefined> {
  for (let i = skip; i < take; ) {
    const end = batchSize === undefined ? take : Math.min(take, i + batchSize - builder.length);
    append(i, end);
    i = end;
    if (builder.length === batchSize) yield builder.flush();
  }
  if (batchSize === undefined && builder.length > 0) yield builder.flush();
}

/**
 * The batches of a page that came as Arrow, on the stream's one
 * schema, without the first `skip` rows. The stream's schema is the truth: a page whose columns have
 * other Arrow types, or whose row count differs from its envelope's, is refused.
 */
function* pageBatches(page: RawPage, schema: Schema, skip: number, take: number, ctx: ErrorContext): Generator<RecordBatch, void, undefined> {
  let rows = 0;
  let toSkip = skip;
  /** Rows still to deliver (the page may run past the read's `endOffset`). */
  let left = take - skip;
  const reader = RecordBatchReader.from(page.ipc!);
  const fields = schema.fields;
  let checked = false;
  // The page's batches are views of its bytes: all are read, and the page's row count checked,
  // before the first is delivered, so a page refused delivers no row (as a JSON page does).
  const kept: RecordBatch[] = [];
  for (const batch of reader) {
    if (!checked) {
      const got = batch.schema.fields;
      const same = got.length === fields.length && got.every((f, i) => f.name === fields[i]!.name && String(f.type) === String(fields[i]!.type));
      if (!same) {
        throw new InvalidResponseError(
          `Arrow page at offset ${page.nextOffset === undefined ? 'end' : page.nextOffset - page.rowCount} has columns (${got.map((f) => `${f.name} ${f.type}`).join(', ')}), ` +
            `but the result's columns map to (${fields.map((f) => `${f.name} ${f.type}`).join(', ')})`,
          ctx,
        );
      }
      checked = true;
    }
    rows += batch.numRows;
    if (toSkip >= batch.numRows || left <= 0) {
      toSkip -= Math.min(toSkip, batch.numRows);
      continue;
    }
    // A slice keeps its parent's buffers with an offset, which not every Arrow consumer honours:
    // written out and read back, it is a batch of its own (rare: a read starting or ending mid-page).
    const count = Math.min(batch.numRows - toSkip, left);
    const part = toSkip > 0 || count < batch.numRows ? compact(batch.slice(toSkip, toSkip + count)) : batch;
    toSkip = 0;
    left -= count;
    const out = new RecordBatch(schema, part.data);
    // The constructor rebuilds an equal Schema; put the shared one back (as the batch builder does).
    (out as unknown as { schema: Schema }).schema = schema;
    kept.push(out);
  }
  if (rows !== page.rowCount) throw new InvalidResponseError(`Arrow page holds ${rows} rows but its row count says ${page.rowCount}`, ctx);
  yield* kept;
}

function compact(batch: RecordBatch): RecordBatch {
  const [copy] = RecordBatchReader.from(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true)).readAll();
  return copy!;
}

/** The rows of one page for `rows()`: row i is `at(i)` for i in `[next, end)`. */
interface RowPage {
  readonly at: (i: number) => Row;
  next: number;
  readonly end: number;
}

const DONE: IteratorResult<Row, void> = Object.freeze({ done: true, value: undefined });

/**
 * The rows of a stream as an async generator, served from the current page without the machinery
 * of an async generator per row (measured: a generator's `yield` costs about twice a settled
 * promise, some 0.2 s per million rows). Calls are handled in order as a generator handles them;
 * a failure (a value that does not decode, a page that cannot be read) ends it, and closing it
 * (`return`, a `break` out of `for await`) closes the pages underneath, which stops their requests.
 */
class RowCursor implements AsyncGenerator<Row, void, undefined> {
  readonly #pages: AsyncGenerator<RowPage, void, undefined>;
  #page: RowPage | undefined;
  #done = false;
  /** The call still running (a page being read, the pages being closed); later calls wait for it. */
  #queue: Promise<unknown> | undefined;

  constructor(pages: AsyncGenerator<RowPage, void, undefined>) {
    this.#pages = pages;
  }

  next(): Promise<IteratorResult<Row, void>> {
    const page = this.#page;
    if (this.#queue === undefined && !this.#done && page !== undefined && page.next < page.end) {
      let value: Row;
      try {
        value = page.at(page.next++);
      } catch (error) {
        return this.#enqueue(() => this.#fail(error));
      }
      return Promise.resolve({ done: false, value });
    }
    return this.#enqueue(() => this.#advance());
  }

  return(): Promise<IteratorResult<Row, void>> {
    return this.#enqueue(async () => {
      await this.#close();
      return DONE;
    });
  }

  throw(error: unknown): Promise<IteratorResult<Row, void>> {
    return this.#enqueue(() => this.#fail(error));
  }

  /** Ends the cursor and closes the pages underneath (which stops their requests). */
  async #close(): Promise<void> {
    this.#done = true;
    this.#page = undefined;
    await this.#pages.return(undefined);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = (this.#queue ?? Promise.resolve()).then(step);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#queue = settled;
    void settled.then(() => {
      if (this.#queue === settled) this.#queue = undefined;
    });
    return run;
  }

  async #advance(): Promise<IteratorResult<Row, void>> {
    for (;;) {
      if (this.#done) return DONE;
      const page = this.#page;
      if (page !== undefined && page.next < page.end) {
        let value: Row;
        try {
          value = page.at(page.next++);
        } catch (error) {
          return this.#fail(error);
        }
        return { done: false, value };
      }
      let got: IteratorResult<RowPage, void>;
      try {
        got = await this.#pages.next();
      } catch (error) {
        this.#done = true;
        this.#page = undefined;
        throw error;
      }
      if (got.done) {
        this.#done = true;
        this.#page = undefined;
        return DONE;
      }
      this.#page = got.value;
    }
  }

  /** Ends the rows with `error`, once the pages are closed (their requests stopped). */
  async #fail(error: unknown): Promise<never> {
    await this.#close();
    throw error;
  }
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

function describeColumns(columns: readonly ColumnSpec[]): string {
  return `(${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`;
}

/** After an abort, every failure is reported as one `AbortError` (the client's, wrapped once). */
function abortError(error: unknown, signal: AbortSignal | undefined, method: string): unknown {
  if (!signal?.aborted || error instanceof AbortedError) return error;
  return new AbortedError('aborted by the caller', { method, cause: signal.reason });
}

async function cancelQuietly(resolved: ResolvedSource): Promise<void> {
  try {
    // The caller's signal has fired; the cancel gets its own short deadline instead.
    await resolved.execution.cancel({ signal: AbortSignal.timeout(5_000) });
  } catch {
    // Best effort: the abort is what the caller asked for and what they get; a cancel that failed
    // leaves the execution to finish on its own (it costs what it would have cost anyway).
  }
}

/** Whether the process was already told that `decodeThreads` is ignored (Node warns of a deprecation once). */
let decodeThreadsWarned = false;

function checkOptions(options: StreamOptions): void {
  if (options.decodeThreads !== undefined && !decodeThreadsWarned) {
    decodeThreadsWarned = true;
    process.emitWarning(
      'stream option decodeThreads is ignored: pages are decoded on the calling thread. Remove the option; to use more cores, run a job sharded (sluice run --processes N).',
      { type: 'DeprecationWarning', code: 'SLUICE_DECODE_THREADS' },
    );
  }
  const positive = (name: string, v: number | undefined) => {
    if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new InvalidArgumentError(`${name} must be a positive integer, got ${v}`, { method: 'stream' });
  };
  positive('concurrency', options.concurrency);
  positive('pageSize', options.pageSize);
  if (options.startOffset !== undefined && !(Number.isInteger(options.startOffset) && options.startOffset >= 0)) {
    throw new InvalidArgumentError(`startOffset must be a non-negative integer, got ${options.startOffset}`, { method: 'stream' });
  }
  if (options.endOffset !== undefined && !(Number.isInteger(options.endOffset) && options.endOffset > (options.startOffset ?? 0))) {
    throw new InvalidArgumentError(`endOffset must be an integer above startOffset (${options.startOffset ?? 0}), got ${options.endOffset}`, { method: 'stream' });
  }
  if (options.prefetch !== undefined && !(Number.isInteger(options.prefetch) && options.prefetch >= 0)) {
    throw new InvalidArgumentError(`prefetch must be a non-negative integer, got ${options.prefetch}`, { method: 'stream' });
  }
}
