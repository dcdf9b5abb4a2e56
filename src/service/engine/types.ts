// The narrow seam between the HTTP service and the SQL engine: the service calls the engine
// only through these types, so the engine can be swapped or faked without touching routes.
import type { SqlDialect } from './dialect/dialects.ts';

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
  /**
   * Engine memory and temporary disk the execution may use (its tier's); beyond them it fails
   * with EngineError kind 'capacity'. DuckDB bounds memory per instance, not per query: the
   * engine's limits are the sum over the executions running (resourceBounds.ts).
   */
  bounds?: { memoryBytes: number; tempBytes: number; tier: string };
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
  /**
   * The team's storage quota, when SQL that writes `service.<team>` must keep within it. Such SQL
   * then runs in one transaction; when the team's tables (teamTableBytes) plus `otherBytes` (its
   * views and uploads) would exceed `limitBytes`, nothing it wrote is kept and the execution fails
   * with EngineError kind 'capacity'.
   */
  storageQuota?: { limitBytes: number; otherBytes: number };
  /** The SQL's dialect: DuneSQL is translated to DuckDB SQL first (dialect/). Default: duckdb. */
  dialect?: SqlDialect;
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

/** Columns and row count of a table made from uploaded CSV. */
export interface IngestedCsv {
  /** The header's names, each with the DuckDB type its values were given (BIGINT, DOUBLE, ..., VARCHAR). */
  columns: { name: string; type: string }[];
  rowCount: number;
}

/**
 * The service's own tables, `service.<team>.<name>` (materialized views, uploaded datasets), which
 * user SQL reads. Each write replaces the table atomically: a query sees the old table or the new
 * one, never a mix or none; a failed write leaves the old one.
 */
/** A column of a table created through the uploads API. */
export interface UploadTableColumn {
  name: string;
  type: string;
  nullable: boolean;
}

export interface ServiceTables {
  /** Replaces the table by the rows of a stored result, in result order, with these column names. */
  replaceFromResult(team: string, name: string, resultId: string, columnNames: readonly string[]): Promise<void>;
  /**
   * Replaces the table by CSV text (header first, RFC 4180, comma) whose header holds
   * `columnNames`; each column gets the narrowest type all its values fit. A malformed text is
   * EngineError 'bad_request' naming the line.
   */
  ingestCsv(team: string, name: string, csv: string, columnNames: readonly string[]): Promise<IngestedCsv>;
  /** Creates the empty table `service.<team>.<name>` of these columns (upload types: varchar, bigint, ...). */
  createTable(team: string, name: string, columns: readonly UploadTableColumn[]): Promise<void>;
  /**
   * Appends CSV (header first, naming the table's columns in any order) or NDJSON rows to the
   * table, all or none, each value cast to its column's type. A malformed or mistyped row, or a
   * NULL in a NOT NULL column, is EngineError 'bad_request' saying which.
   */
  insertRows(team: string, name: string, columns: readonly UploadTableColumn[], rows: { format: 'csv' | 'ndjson'; data: Uint8Array; header?: readonly string[] }): Promise<{ rowsWritten: number }>;
  /** Removes every row of the table. */
  clearTable(team: string, name: string): Promise<void>;
  /** Renames the table, if it exists. */
  rename(team: string, from: string, to: string): Promise<void>;
  /** Drops the table, if it exists. */
  drop(team: string, name: string): Promise<void>;
  exists(team: string, name: string): Promise<boolean>;
  /** Drops the work tables a crash left half-written; returns their full names. */
  dropStagingLeftovers(): Promise<string[]>;
  /**
   * Bytes (CSV text of the rows, as result_set_bytes) of the tables the team's own SQL created in
   * `service.<team>`; the service's views and datasets are not among them.
   */
  teamTableBytes(team: string): Promise<number>;
}

/** What classify found: each statement (1-based line and column of its start) and the first denial. */
export interface SqlClassification {
  statements: { line: number; column: number; writes: boolean }[];
  denial?: { message: string; line: number; column: number };
}

export interface SqlEngine {
  /** The service's own tables (views, uploads): copies and ingests run by the engine, never user SQL. */
  readonly tables: ServiceTables;
  /** Runs the SQL and stores its result durably under dataDir. */
  execute(sql: string, opts: ExecuteOptions): Promise<ResultInfo>;
  /**
   * Judges the SQL as execute would, running none of it: per statement, whether it writes (by the
   * sandbox's own reading of it), and the first denial execute would fail with.
   */
  classify(sql: string, opts: Pick<ExecuteOptions, 'team' | 'canRead'>): Promise<SqlClassification>;
  page(resultId: string, req: PageRequest): Promise<Page>;
  csvPage(resultId: string, req: PageRequest): Promise<CsvPage>;
  /** The page as an Arrow IPC stream (same rows and parameters as page). */
  arrowPage(resultId: string, req: PageRequest): Promise<ArrowPage>;
  /**
   * An unfiltered page of all columns from the result's pre-encoded form, as a byte range to
   * stream; undefined while the result is not encoded yet (serve it with page/csvPage then).
   */
  encodedPage(resultId: string, offset: number, limit: number, format: 'json' | 'csv'): Promise<import('./encoding/encodedResult.ts').EncodedPage | undefined>;
  /**
   * An Arrow page of all columns, unfiltered, from the pre-encoded form (schema, the batches of the
   * chunks the page spans, end of stream); undefined while the result is not encoded or when the
   * page does not start and end on chunks (serve it with arrowPage then).
   */
  encodedArrowPage(resultId: string, offset: number, limit: number): Promise<import('./encoding/arrowEncoding.ts').EncodedArrowPage | undefined>;
  /**
   * Where the compressed frames of the result's encoded pages are kept (inside its encoding, so
   * dropped with it), and the scratch path prefix a frame is written under before it is renamed
   * there (scratch files a crash left are removed at start). See src/service/http/compressedFrames.ts.
   */
  frameStore(resultId: string): { dir: string; scratch: string };
  /** Bytes on disk of each stored result (its file, encodings and frames), by result id. */
  resultStoreBytes(): Promise<Map<string, number>>;
  /**
   * Opens the teams' own instances now (engine/teams/), so that no team's first execution waits
   * for its instance; nothing to do when teams share one instance.
   */
  openTeams?(teams: readonly string[]): Promise<void>;
  /** `listener` is called when the stored results grew after a result was stored (an encoding written on a first read). */
  onResultStoreGrew?(listener: () => void): void;
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
  | 'not_found'
  /** A value the requested encoding (Arrow) cannot hold; the JSON page can. */
  | 'unrepresentable';

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
  /** Told what starting did that a user should hear of (sample data generated or rebuilt). */
  onNotice?: (message: string) => void;
  sampleRows?: number;
  /** Transactions of the Dune-shaped sample tables (ethereum.*, erc20_ethereum.*, tokens.erc20, prices.usd); loaded with 'sample'. */
  duneSampleTransactions?: number;
  /** Results of at least this many result_set_bytes get pre-encoded pages (default 64 KiB). */
  encodeMinBytes?: number;
  /**
   * When they are written: each format when a reader first asks for it (default), every format as
   * the execution's last step, or every format in the background once the service is idle.
   */
  encodeResults?: 'on_first_read' | 'at_completion' | 'when_idle';
  /**
   * Rows per pre-encoded Arrow chunk of a result with that many columns: the page size clients
   * read by (an Arrow page of whole chunks is served from the encoding). Default: 32,000 rows, at
   * most 250,000 values.
   */
  arrowChunkRows?: (columnCount: number) => number;
  /** DuckDB threads for the instance (default: DuckDB's default, the core count). */
  defaultThreads?: number;
  /** DuckDB's memory_limit: bytes, or a size with a unit (`128MiB`). Default: DuckDB's (80% of RAM). */
  memoryLimit?: number | string;
  /** Where DuckDB spills what exceeds memoryLimit (default: dataDir/tmp). */
  tempDirectory?: string;
  /** Most disk the spilled data may take (bytes, or a size with a unit). Default: DuckDB's (90% of free disk). */
  maxTempDirectorySize?: number | string;
  /**
   * How executions running at once share the memory: 'share' (default) bounds them together by
   * the sum of their tiers' bounds; 'reserve' starts one only when its bound fits beside the
   * running ones' (resourceBounds.ts).
   */
  memoryAdmission?: 'share' | 'reserve';
  /** When the engine gives idle memory back (memoryTrim.ts); tests make it eager. */
  trim?: TrimOptions;
  /** Results larger than this (result_set_bytes, default 1 GiB; rows, default 10M) are encoded when idle even with encodeResults 'at_completion'. */
  encodeAtCompletionMax?: { bytes?: number; rows?: number };
  /**
   * Each team's SQL on a DuckDB instance of its own, attaching only the team's own file
   * (teams/<team>.duckdb) and snapshots of other teams' public objects (engine/teams/); an
   * existing service.duckdb is split into the teams' files at the first start. Default false.
   */
  walledTeams?: boolean;
}

/** When an instance gives its idle memory back (memoryTrim.ts). */
export interface TrimOptions {
  /** After no connection of the instance has been open for this long (default 1 s). */
  afterIdleMs?: number;
  /** Before encoding a result of at least this many result_set_bytes, if nothing else runs (default 16 MiB). */
  beforeEncodingBytes?: number;
  /** Encode a result of at least this many result_set_bytes in two passes with a trim between (default 64 MiB). */
  encodeApartBytes?: number;
}
