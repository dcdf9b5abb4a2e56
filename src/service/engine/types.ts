// The narrow seam between the HTTP service and the SQL engine: the service calls the engine
// only through these types, so the engine can be swapped or faked without touching routes.

export interface ResultInfo {
  columnNames: string[];
  /** protocol.md section 5 names: 'bigint', 'decimal(38, 10)', 'array(row(a bigint))', 'uint256', ... */
  columnTypes: string[];
  /** Total rows stored (after truncation). */
  rowCount: number;
  /**
   * total_result_set_bytes: UTF-8 length of the CSV rendering of the whole result without
   * quoting: a header line (names joined by ',') plus one line per row (value texts joined by
   * ','; NULL is empty), every line ended by '\n'. A value's text is its CSV page text.
   */
  bytes: number;
  /** The result was cut to fit maxResultBytes: the execution is COMPLETED_PARTIAL. */
  truncated: boolean;
}

export interface ExecuteOptions {
  /** Where to store the result (the execution id); letters, digits, '_' and '-' only. */
  resultId: string;
  /** Abort interrupts the running DuckDB query and rejects with EngineError kind 'canceled'. */
  signal: AbortSignal;
  /**
   * Engine threads wanted. Accepted and ignored: DuckDB's `threads` is an instance-wide setting
   * (it cannot be set per connection, and the configuration is locked), see engine.ts.
   */
  threads?: number;
  /** Rejects with EngineError kind 'timeout' when exceeded. */
  timeoutMs?: number;
  /** Results larger than this (in ResultInfo.bytes terms) are cut and flagged truncated. */
  maxResultBytes?: number;
  /**
   * The team running the SQL: its schema `service.<team>` is created on demand, and is the only
   * schema of `service` the SQL may read or write (besides what canRead allows). Without a team,
   * no `service.*` object is visible.
   */
  team?: string;
  /**
   * Lets the SQL read `service.<owner>.<name>` of another team, e.g. a view that is not private.
   * Called while the SQL is checked, before it runs, once per reference; `owner` and `name` are
   * lowercased as DuckDB matches them. Absent: other teams' schemas are invisible. Writes to
   * another team's schema are never allowed.
   */
  canRead?: (owner: string, name: string) => boolean;
}

export interface PageRequest {
  offset: number;
  limit: number;
  /** Already-parsed column names; unknown names are EngineError kind 'bad_request'. */
  columns?: string[];
  /** Raw `filters` text of protocol.md section 4. */
  filters?: string;
  /** Raw `sort_by` text: `col [asc|desc], ...`. */
  sortBy?: string;
  /** Uniform random sample of about this many rows (never combined with offset/filters). */
  sampleCount?: number;
}

export interface Page {
  /** JSON array text of row objects, values encoded per protocol.md section 5. */
  rowsJson: string;
  /** Rows on this page. */
  rowCount: number;
  /** result_set_bytes of this page: header line + these rows, as ResultInfo.bytes defines. */
  bytes: number;
  /** Rows matching (after filters / sample), to compute next_offset. */
  totalRowCount: number;
  /** After the `columns` projection. */
  columnNames: string[];
  columnTypes: string[];
}

export interface ArrowPage {
  /** Arrow IPC stream: schema (as the connector's type mapping builds it), one batch, end. */
  arrow: Uint8Array;
  rowCount: number;
  /** result_set_bytes of this page, as Page.bytes. */
  bytes: number;
  totalRowCount: number;
  columnNames: string[];
  columnTypes: string[];
}

export interface CsvPage {
  /** Header row always, '\n' line ends, RFC 4180 quoting, NULL as an empty field. */
  csv: string;
  rowCount: number;
  totalRowCount: number;
}

export interface SqlEngine {
  /**
   * Runs `fn` on a connection of the engine's DuckDB instance (catalog `service` attached), closed
   * afterwards. For the service's own tables (materialized views, uploaded datasets): never user SQL.
   */
  withConnection<T>(fn: (conn: import('@duckdb/node-api').DuckDBConnection) => Promise<T>): Promise<T>;
  /** The DuckDB file of a stored result: table `result` with columns c0..cN-1 in result order. */
  resultPath(resultId: string): string;
  /** A path in the one directory the locked-down DuckDB may read files from (for CSV uploads). */
  scratchPath(name: string): string;
  /** Runs the SQL and stores its result durably under dataDir. */
  execute(sql: string, opts: ExecuteOptions): Promise<ResultInfo>;
  page(resultId: string, req: PageRequest): Promise<Page>;
  csvPage(resultId: string, req: PageRequest): Promise<CsvPage>;
  /** The page as an Arrow IPC stream (same rows and parameters as page). */
  arrowPage(resultId: string, req: PageRequest): Promise<ArrowPage>;
  /**
   * An unfiltered page of all columns from the result's pre-encoded form, as a byte range to
   * stream; undefined while the result is not encoded yet (serve it with page/csvPage then).
   */
  encodedPage(resultId: string, offset: number, limit: number, format: 'json' | 'csv'): Promise<import('./encodedResult.ts').EncodedPage | undefined>;
  /** Settles when the result's pre-encoding (scheduled when it was stored) has ended. */
  encodingSettled(resultId: string): Promise<void>;
  hasResult(resultId: string): Promise<boolean>;
  /** Metadata of a stored result (addition: lets the HTTP side rebuild status after restart). */
  resultInfo(resultId: string): Promise<ResultInfo>;
  /** Deletes the stored result and frees its disk space. */
  dropResult(resultId: string): Promise<void>;
  close(): Promise<void>;
}

export type EngineErrorKind =
  | 'syntax'
  | 'semantic'
  | 'internal'
  | 'capacity'
  | 'canceled'
  | 'timeout'
  | 'bad_request'
  | 'not_found';

export interface EngineErrorOptions {
  /** 1-based line in the submitted SQL text. */
  line?: number;
  /** 1-based column (in code points) in the submitted SQL text. */
  column?: number;
  /** 0-based position in the `filters` / `sort_by` text, for bad_request. */
  position?: number;
  cause?: unknown;
}

export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly kind: EngineErrorKind;
  readonly line?: number;
  readonly column?: number;
  readonly position?: number;

  constructor(kind: EngineErrorKind, message: string, options: EngineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    if (options.line !== undefined) this.line = options.line;
    if (options.column !== undefined) this.column = options.column;
    if (options.position !== undefined) this.position = options.position;
  }
}

export interface OpenEngineOptions {
  dataDir: string;
  /** Datasets to load on open (idempotent): 'sample'. */
  datasets?: string[];
  /** Rows of sample.events (default 1,000,000). */
  sampleRows?: number;
  /** Results of at least this many result_set_bytes get pre-encoded pages (default 64 KiB). */
  encodeMinBytes?: number;
  /** DuckDB threads for the instance (default: DuckDB's default, the core count). */
  defaultThreads?: number;
}
