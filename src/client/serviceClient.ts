import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  CancelResponseSchema,
  ClassifyQueryRequestSchema,
  ClassifyResponseSchema,
  ClassifySqlRequestSchema,
  CreateQueryRequestSchema,
  CSV_NEXT_OFFSET_HEADER,
  CSV_NEXT_URI_HEADER,
  DeleteViewResponseSchema,
  ExecuteQueryRequestSchema,
  ExecuteResponseSchema,
  ExecuteSqlRequestSchema,
  ExecutionStatusSchema,
  PATHS,
  QueryIdResponseSchema,
  QuerySchema,
  RefreshViewRequestSchema,
  RefreshViewResponseSchema,
  UpdateQueryRequestSchema,
  UploadCsvRequestSchema,
  UploadCsvResponseSchema,
  UpsertViewRequestSchema,
  UpsertViewResponseSchema,
  UsageSchema,
  isArrowStreamContentType,
  ViewListSchema,
  ViewSchema,
  type ClassifyResponse,
  type CreateQueryRequest,
  type ExecuteResponse,
  type ExecutionStatus,
  type ParameterValue,
  type Performance,
  type Query,
  type ResultOptions,
  type ResultPage,
  type UpdateQueryRequest,
  type UploadCsvRequest,
  type UpsertViewRequest,
  type Usage,
  type View,
  type ViewList,
} from '../protocol/index.ts';
import { BadRequestError, InvalidArgumentError, InvalidResponseError, type ErrorContext } from './errors.ts';
import { MAX_PAGE_CONCURRENCY, resolveConfig, type ClientOptions, type ResolvedConfig } from './config.ts';
import { Execution, type ExecuteInput, type LatestResultOptions, type RunOptions } from './execution.ts';
import type { ClientStats } from './hooks.ts';
import { governorFor, type RateGovernor } from './governor.ts';
import { describeIssues, Http } from './http.ts';
import { parseResultPage, parseResultPageText } from './resultPage.ts';
import type { TextRead } from '../types/textRows.ts';
import type { Row } from '../types/decode.ts';
import { ACCEPT_ARROW, arrowPageEnvelope } from './arrowPage.ts';
import { resultParams } from './resultOptions.ts';
import { salvageExecuteResponse, salvageQueryIdResponse, salvageRefreshResponse } from './salvage.ts';
import { Transport, type KeepCoded, type RequestSpec } from './transport.ts';
import { Catalog } from './catalog.ts';

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ExecuteOptions extends CallOptions {
  performance?: Performance;
}

export interface ExecuteQueryOptions extends ExecuteOptions {
  parameters?: Record<string, ParameterValue>;
}

export interface ResultCallOptions extends ResultOptions, CallOptions {
  /**
   * Told the size in bytes of the response body once it has arrived (progress reporting): as it
   * crossed the wire (compressed, when it was), and decoded.
   */
  onBodyBytes?: (bytes: number, decodedBytes: number) => void;
}

export interface LatestResultPageOptions extends ResultCallOptions {
  /** Sent as `params.<name>=<value>`: the newest execution run with these values. */
  parameters?: Record<string, ParameterValue>;
}

/** A CSV page: the text (header row included) and where the next page starts, if there is one. */
export interface CsvPage {
  text: string;
  /** The same page as bytes (UTF-8): what a reader that takes bytes (DuckDB's CSV reader) is handed, undecoded. */
  body: Buffer;
  /** The content coding `body` is still in, when the call's `keepCoded` kept it (`text` is decoded). */
  coding?: string;
  nextOffset?: number;
  nextUri?: string;
}

/** Which encoding of result pages to read: Arrow when the service offers it (`auto`), or only one. */
export type Wire = 'auto' | 'json' | 'arrow';

/**
 * A result page as it came off the wire, not yet decoded: an Arrow IPC stream with its envelope
 * (from the headers), or a JSON body (parsed by whoever decodes it, maybe another thread).
 */
export type WirePage =
  | { readonly format: 'arrow'; readonly page: ResultPage; readonly ipc: Buffer; readonly bytes: number; readonly decodedBytes: number }
  | {
      readonly format: 'json';
      /** The bytes as received; `stream()` frees them (an empty buffer then) once it has read the page. */
      readonly body: Buffer;
      /** Body bytes as they crossed the wire (compressed, when they were). */
      readonly bytes: number;
      /** Body bytes decoded (`body.length` before it is freed). */
      readonly decodedBytes: number;
      /** The request, as errors about this answer name it (for a decoder elsewhere, such as a decode thread). */
      readonly context?: ErrorContext;
      /** Arrow was asked for and the service refused it with 406 (it does not serve Arrow pages). */
      readonly refused: boolean;
      /** Parses and validates the body (as `getResults` does). */
      parse(): ResultPage;
      /**
       * The envelope validated as `parse` validates it, and what `read` made of the rows straight
       * from the text; undefined when `read` gave up (then `parse`).
       */
      parseText?<T>(read: (text: string) => TextRead<T> | undefined): { page: ResultPage; value: T } | undefined;
    };

export interface WirePageOptions extends ResultCallOptions {
  /** `arrow` asks for an Arrow stream (a JSON answer still comes back as JSON); `json` asks for JSON. */
  accept: 'arrow' | 'json';
}

/** A row typed from `column_types`, as `stream()` types it (types.md). */
export type { Row };

/**
 * Client of the query service (protocol.md): one typed method per operation, plus `execute`, `run`
 * and `getLatestResult` on top. Layers: `Transport` (one undici attempt) -> `withRetry` -> `Http`
 * (parse and validate) -> these methods. Retry defaults: `DEFAULT_RETRY` in retryPolicy.ts; the rule
 * for requests that create executions is documented on `mayRetry` there.
 *
 * Without options it reads `SERVICE_API_KEY` and `SERVICE_BASE_URL` (origin plus `/api`).
 * Call `close()` when done (it closes the keep-alive connections the client opened).
 */
export class ServiceClient {
  /** Counters of HTTP attempts and retries, for observing retry behaviour. */
  readonly stats: ClientStats = { requests: 0, retries: 0 };
  readonly baseUrl: string;
  /** The key's request budget in this process, shared with every other client of the key. */
  readonly governor: RateGovernor;
  /** Saved queries listed, tables created and filled (uploads v2), datasets listed and searched. */
  readonly catalog: Catalog;
  readonly #config: ResolvedConfig;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #http: Http;

  readonly #servesArrowPages: boolean;

  constructor(options: ClientOptions = {}) {
    this.#config = resolveConfig(options);
    this.#servesArrowPages = options.servesArrowPages === true;
    this.baseUrl = this.#config.baseUrl;
    this.#ownsDispatcher = options.dispatcher === undefined;
    // Idle sockets are dropped well before common server keep-alive timeouts (Node's is 5 s; undici also
    // honours a `Keep-Alive: timeout=` hint): a submission sent on a socket the server is closing would
    // be lost after it was written, and the resubmission rule could then not resend it.
    // The per-attempt timeout counts from a request's dispatch on a connection, so connecting has a
    // bound of its own, the same (undici's default would be 10 s whatever timeoutMs says).
    this.#dispatcher =
      options.dispatcher ?? new Agent({ keepAliveTimeout: 4_000, connections: MAX_PAGE_CONCURRENCY, connect: { timeout: this.#config.timeoutMs } });
    const transport = new Transport(this.#config, this.#dispatcher, this.stats, options.onRequest, options.requestHeaders);
    this.governor = governorFor(this.#config.baseUrl, this.#config.apiKey, options.governor);
    if (this.#config.rateLimit !== undefined) this.governor.configure(this.#config.rateLimit, this.#config.rateShare);
    this.#http = new Http(transport, this.governor, this.#config, this.stats, options.onRetry, options.onThrottle);
    this.catalog = new Catalog(this.#http);
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /**
   * What another client of the same service needs (a worker thread cannot share this one's
   * connections): the key, where it came from, the URL, timeouts, retry policy and the shared
   * state of the key's rate governor (a SharedArrayBuffer: a worker thread takes from the same
   * budget). Holds the key.
   */
  connectionOptions(): ClientOptions {
    const c = this.#config;
    return { apiKey: c.apiKey, apiKeyFrom: c.apiKeyFrom, baseUrl: c.baseUrl, apiKeyIn: c.apiKeyIn, timeoutMs: c.timeoutMs, retry: { ...c.retry }, keepAlive: c.keepAlive, userAgent: c.userAgent, compression: c.compression, governor: this.governor.shared, servesArrowPages: this.#servesArrowPages, env: {} };
  }

  // ---- executions ----

  async executeSql(sql: string, options: ExecuteOptions = {}): Promise<ExecuteResponse> {
    const body = checkRequest('executeSql', ExecuteSqlRequestSchema, { sql, performance: options.performance });
    return this.#http.json(
      { operation: 'executeSql', httpMethod: 'POST', path: PATHS.executeSql(), body, idempotency: 'creates', signal: options.signal, salvage: salvageExecuteResponse },
      ExecuteResponseSchema,
    );
  }

  async executeQuery(queryId: number, options: ExecuteQueryOptions = {}): Promise<ExecuteResponse> {
    checkQueryId('executeQuery', queryId);
    const body = checkRequest('executeQuery', ExecuteQueryRequestSchema, { query_parameters: options.parameters, performance: options.performance });
    return this.#http.json(
      { operation: 'executeQuery', httpMethod: 'POST', path: PATHS.executeQuery(queryId), body, idempotency: 'creates', signal: options.signal, salvage: salvageExecuteResponse },
      ExecuteResponseSchema,
    );
  }

  /**
   * How the local service's sandbox reads SQL, judged as this key's execution would be, running
   * none of it (an extension: the official service answers 404). Classifying changes nothing.
   */
  async classifySql(sql: string, options: CallOptions = {}): Promise<ClassifyResponse> {
    const body = checkRequest('classifySql', ClassifySqlRequestSchema, { sql });
    return this.#http.json({ operation: 'classifySql', httpMethod: 'POST', path: PATHS.classifySql(), body, idempotency: 'idempotent', signal: options.signal }, ClassifyResponseSchema);
  }

  /** classifySql for a saved query's SQL with these parameter values. */
  async classifyQuery(queryId: number, options: CallOptions & { parameters?: Record<string, ParameterValue> } = {}): Promise<ClassifyResponse> {
    checkQueryId('classifyQuery', queryId);
    const body = checkRequest('classifyQuery', ClassifyQueryRequestSchema, { query_parameters: options.parameters });
    return this.#http.json({ operation: 'classifyQuery', httpMethod: 'POST', path: PATHS.classifyQuery(queryId), body, idempotency: 'idempotent', signal: options.signal }, ClassifyResponseSchema);
  }

  async getStatus(executionId: string, options: CallOptions = {}): Promise<ExecutionStatus> {
    return this.#http.json(this.#exec('getStatus', 'GET', PATHS.status(executionId), executionId, options), ExecutionStatusSchema);
  }

  /** True when the service accepted the cancel; cancelling twice is harmless, so it is retried like a read. */
  async cancel(executionId: string, options: CallOptions = {}): Promise<boolean> {
    const res = await this.#http.json(this.#exec('cancel', 'POST', PATHS.cancel(executionId), executionId, options), CancelResponseSchema);
    return res.success;
  }

  /** One JSON page, parsed losslessly (integers beyond 2^53 as bigint) and validated. */
  async getResults(executionId: string, options: ResultCallOptions = {}): Promise<ResultPage> {
    const spec = this.#exec('getResults', 'GET', PATHS.results(executionId), executionId, options);
    spec.query = resultParams('getResults', options);
    return this.#resultPage(spec, options.onBodyBytes);
  }

  /**
   * One result page, undecoded. Asking for Arrow, the answer is Arrow when the service serves it;
   * JSON when the page has no result, on an error answer (raised as for `getResults`), from a
   * service that only speaks JSON, and after a 406 (asked again as JSON, `refused` set).
   */
  async getResultsWire(executionId: string, options: WirePageOptions): Promise<WirePage> {
    const spec = this.#exec('getResults', 'GET', PATHS.results(executionId), executionId, options);
    spec.query = resultParams('getResults', options);
    let refused = false;
    let res;
    if (options.accept === 'arrow') {
      try {
        res = await this.#http.call({ ...spec, accept: ACCEPT_ARROW });
      } catch (error) {
        if (!(error instanceof BadRequestError && error.status === 406)) throw error;
        refused = true;
      }
    }
    res ??= await this.#http.call(spec);
    options.onBodyBytes?.(res.bytes, res.decodedBytes);
    const ctx = this.#http.context(spec);
    if (isArrowStreamContentType(header(res.headers['content-type']))) {
      return { format: 'arrow', page: arrowPageEnvelope(res.headers, ctx), ipc: res.body, bytes: res.bytes, decodedBytes: res.decodedBytes };
    }
    const answer = res;
    return {
      format: 'json',
      body: res.body,
      bytes: res.bytes,
      decodedBytes: res.decodedBytes,
      context: ctx,
      refused,
      parse: () => parseResultPage(answer, ctx),
      parseText: (read) => parseResultPageText(answer, ctx, read),
    };
  }

  async getResultsCsv(executionId: string, options: ResultCallOptions & { keepCoded?: KeepCoded } = {}): Promise<CsvPage> {
    const spec = this.#exec('getResultsCsv', 'GET', PATHS.resultsCsv(executionId), executionId, options);
    spec.query = resultParams('getResultsCsv', options);
    spec.keepCoded = options.keepCoded;
    return this.#csvPage(spec, options.onBodyBytes);
  }

  /** One page of the latest stored result of a saved query (no execution is started). */
  async getLatestResultPage(queryId: number, options: LatestResultPageOptions = {}): Promise<ResultPage> {
    return this.#resultPage(this.#latest('getLatestResultPage', queryId, PATHS.latestResults, options), options.onBodyBytes);
  }

  async getLatestResultCsv(queryId: number, options: LatestResultPageOptions = {}): Promise<CsvPage> {
    return this.#csvPage(this.#latest('getLatestResultCsv', queryId, PATHS.latestResultsCsv, options), options.onBodyBytes);
  }

  // ---- saved queries ----

  /** Not idempotent: a resend after a lost answer could create a second query, so it is not resent. */
  async createQuery(query: CreateQueryRequest, options: CallOptions = {}): Promise<z.output<typeof QueryIdResponseSchema>> {
    const body = checkRequest('createQuery', CreateQueryRequestSchema, query);
    return this.#http.json(
      { operation: 'createQuery', httpMethod: 'POST', path: PATHS.createQuery(), body, idempotency: 'creates', signal: options.signal, salvage: salvageQueryIdResponse },
      QueryIdResponseSchema,
    );
  }

  async getQuery(queryId: number, options: CallOptions = {}): Promise<Query> {
    checkQueryId('getQuery', queryId);
    return this.#http.json(this.#plain('getQuery', 'GET', PATHS.query(queryId), options), QuerySchema);
  }

  async updateQuery(queryId: number, patch: UpdateQueryRequest, options: CallOptions = {}): Promise<z.output<typeof QueryIdResponseSchema>> {
    checkQueryId('updateQuery', queryId);
    const spec = this.#plain('updateQuery', 'PATCH', PATHS.query(queryId), options);
    spec.body = checkRequest('updateQuery', UpdateQueryRequestSchema, patch);
    return this.#http.json(spec, QueryIdResponseSchema);
  }

  async archiveQuery(queryId: number, options: CallOptions = {}): Promise<z.output<typeof QueryIdResponseSchema>> {
    checkQueryId('archiveQuery', queryId);
    return this.#http.json(this.#plain('archiveQuery', 'POST', PATHS.archiveQuery(queryId), options), QueryIdResponseSchema);
  }

  async unarchiveQuery(queryId: number, options: CallOptions = {}): Promise<z.output<typeof QueryIdResponseSchema>> {
    checkQueryId('unarchiveQuery', queryId);
    return this.#http.json(this.#plain('unarchiveQuery', 'POST', PATHS.unarchiveQuery(queryId), options), QueryIdResponseSchema);
  }

  // ---- uploads, views, usage ----

  /**
   * Creates or replaces `dataset_<table_name>`: the service loads the CSV into a staging table and swaps
   * it in whole, so a resend (after a lost answer) leaves the same table; it is retried like a read.
   */
  async uploadCsv(upload: UploadCsvRequest, options: CallOptions = {}): Promise<z.output<typeof UploadCsvResponseSchema>> {
    const spec = this.#plain('uploadCsv', 'POST', PATHS.uploadCsv(), options);
    spec.body = checkRequest('uploadCsv', UploadCsvRequestSchema, upload);
    return this.#http.json(spec, UploadCsvResponseSchema);
  }

  /**
   * Creates or updates the view of `query_id`. It starts a refresh execution, so like execute it is
   * resent only when the first attempt provably changed nothing.
   */
  async upsertView(view: UpsertViewRequest, options: CallOptions = {}): Promise<z.output<typeof UpsertViewResponseSchema>> {
    const body = checkRequest('upsertView', UpsertViewRequestSchema, view);
    return this.#http.json(
      { operation: 'upsertView', httpMethod: 'POST', path: PATHS.views(), body, idempotency: 'creates', signal: options.signal },
      UpsertViewResponseSchema,
    );
  }

  async getView(fullName: string, options: CallOptions = {}): Promise<View> {
    return this.#http.json(this.#plain('getView', 'GET', PATHS.view(fullName), options), ViewSchema);
  }

  async listViews(options: CallOptions & { limit?: number; offset?: number } = {}): Promise<ViewList> {
    const spec = this.#plain('listViews', 'GET', PATHS.views(), options);
    spec.query = { limit: options.limit?.toString(), offset: options.offset?.toString() };
    return this.#http.json(spec, ViewListSchema);
  }

  async deleteView(fullName: string, options: CallOptions = {}): Promise<z.output<typeof DeleteViewResponseSchema>> {
    return this.#http.json(this.#plain('deleteView', 'DELETE', PATHS.view(fullName), options), DeleteViewResponseSchema);
  }

  /** Starts an execution: resent only when the first attempt provably started nothing. */
  async refreshView(name: string, options: ExecuteOptions = {}): Promise<z.output<typeof RefreshViewResponseSchema>> {
    const body = checkRequest('refreshView', RefreshViewRequestSchema, { performance: options.performance });
    return this.#http.json(
      { operation: 'refreshView', httpMethod: 'POST', path: PATHS.refreshView(name), body, idempotency: 'creates', signal: options.signal, salvage: salvageRefreshResponse },
      RefreshViewResponseSchema,
    );
  }

  async getUsage(options: CallOptions = {}): Promise<Usage> {
    return this.#http.json(this.#plain('getUsage', 'GET', PATHS.usage(), options), UsageSchema);
  }

  // ---- high level ----

  /** Submits SQL or a saved query and returns a handle on the new execution. */
  async execute(input: ExecuteInput, options: ExecuteOptions = {}): Promise<Execution> {
    const submitted =
      'sql' in input
        ? await this.executeSql(input.sql, options)
        : await this.executeQuery(input.queryId, { ...options, parameters: input.parameters });
    return new Execution(this, submitted.execution_id, 'sql' in input ? input.sql : undefined);
  }

  /** A handle on an execution that already exists. */
  execution(executionId: string, sql?: string): Execution {
    return Execution.fromId(this, executionId, sql);
  }

  /**
   * Submit, wait, and return every row (pages followed by `next_offset`), typed as `stream()` types
   * them (`dates`, `timestamps`). For a result of any size, `stream()` reads it without holding it.
   */
  async run(input: string | ExecuteInput, options: RunOptions = {}): Promise<Row[]> {
    const execution = await this.execute(typeof input === 'string' ? { sql: input } : input, options);
    await execution.wait(options);
    const rows: Row[] = [];
    for await (const row of execution.rows(options)) rows.push(row);
    return rows;
  }

  /**
   * The latest stored result of a saved query as an execution handle; a fresh execution is started
   * when there is none (404) or when it ended more than `maxAgeHours` ago (or did not complete).
   * `handle.reused` tells which.
   */
  async getLatestResult(queryId: number, options: LatestResultOptions = {}): Promise<Execution> {
    return Execution.latest(this, queryId, options);
  }

  // ---- internals ----

  #plain(operation: string, httpMethod: RequestSpec['httpMethod'], path: string, options: CallOptions): RequestSpec {
    return { operation, httpMethod, path, idempotency: 'idempotent', signal: options.signal };
  }

  #latest(operation: string, queryId: number, path: (queryId: number) => string, options: LatestResultPageOptions): RequestSpec {
    checkQueryId(operation, queryId);
    const spec = this.#plain(operation, 'GET', path(queryId), options);
    spec.query = resultParams(operation, options, options.parameters);
    return spec;
  }

  #exec(operation: string, httpMethod: RequestSpec['httpMethod'], path: string, executionId: string, options: CallOptions): RequestSpec {
    if (typeof executionId !== 'string' || executionId === '') {
      throw new InvalidArgumentError(`executionId must be a non-empty string, got ${JSON.stringify(executionId)}`, { method: operation });
    }
    return { ...this.#plain(operation, httpMethod, path, options), executionId };
  }

  async #resultPage(spec: RequestSpec, onBodyBytes: ResultCallOptions['onBodyBytes']): Promise<ResultPage> {
    const res = await this.#http.call(spec);
    onBodyBytes?.(res.bytes, res.decodedBytes);
    return parseResultPage(res, this.#http.context(spec));
  }

  async #csvPage(spec: RequestSpec, onBodyBytes: ResultCallOptions['onBodyBytes']): Promise<CsvPage> {
    const res = await this.#http.call(spec);
    onBodyBytes?.(res.bytes, res.decodedBytes);
    const page: CsvPage = {
      get text() {
        return res.text;
      },
      body: res.body,
      ...(res.coding === undefined ? {} : { coding: res.coding }),
    };
    const next = header(res.headers[CSV_NEXT_OFFSET_HEADER]);
    if (next !== undefined) {
      if (!/^\d+$/.test(next)) {
        throw new InvalidResponseError(`header ${CSV_NEXT_OFFSET_HEADER} is not a row offset: ${JSON.stringify(next)}`, this.#http.context(spec));
      }
      page.nextOffset = Number(next);
    }
    const uri = header(res.headers[CSV_NEXT_URI_HEADER]);
    if (uri !== undefined) page.nextUri = uri;
    return page;
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function checkRequest<S extends z.ZodType>(operation: string, schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(stripUndefined(value));
  if (!parsed.success) throw new InvalidArgumentError(`invalid request: ${describeIssues(parsed.error)}`, { method: operation });
  return parsed.data;
}

function stripUndefined(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

function checkQueryId(operation: string, queryId: number): void {
  if (!Number.isSafeInteger(queryId) || queryId < 0) {
    throw new InvalidArgumentError(`queryId must be a non-negative integer, got ${JSON.stringify(queryId)}`, { method: operation });
  }
}
