/** How far a stream has got, as of the last page handed to the consumer. */
export interface Progress {
  /** Pages delivered (the first page included). */
  readonly pages: number;
  /** Rows delivered. */
  readonly rows: number;
  /** Result bytes delivered, as the service counts them (`result_set_bytes`: values as text, no JSON overhead). */
  readonly bytes: number;
  /**
   * HTTP body bytes of the pages delivered, decoded (JSON overhead included; retried attempts not
   * counted); a page the native path hands to DuckDB in zstd, as received.
   */
  readonly httpBytes: number;
  /** The same bodies' bytes as they crossed the wire: fewer than `httpBytes` when the service compressed them. */
  readonly wireBytes: number;
  /** `total_row_count`, when the service reported it. */
  readonly totalRows: number | undefined;
  /** Since the first page was requested. */
  readonly elapsedMs: number;
  readonly rowsPerSecond: number;
  /** Time left at the current rate; undefined until a rate is known, 0 when done. */
  readonly etaMs: number | undefined;
}

export type ProgressListener = (progress: Progress) => void;

/** Counts delivered pages and derives rates; one per read of a result. */
export class ProgressTracker {
  #pages = 0;
  #rows = 0;
  #bytes = 0;
  #httpBytes = 0;
  #wireBytes = 0;
  #totalRows: number | undefined;
  readonly #started: number;
  readonly #listener: ProgressListener | undefined;
  readonly #now: () => number;

  /** `startedAt` (on the `now` clock): when the first page was requested, if before this tracker was made. */
  constructor(listener?: ProgressListener, startedAt?: number, now: () => number = performance.now.bind(performance)) {
    this.#listener = listener;
    this.#now = now;
    this.#started = startedAt ?? now();
  }

  /** Records one delivered page and tells the listener. */
  page(rows: number, bytes: number, totalRows: number | undefined, httpBytes = 0, wireBytes = httpBytes): void {
    this.#pages++;
    this.#rows += rows;
    this.#bytes += bytes;
    this.#httpBytes += httpBytes;
    this.#wireBytes += wireBytes;
    if (totalRows !== undefined) this.#totalRows = totalRows;
    this.#listener?.(this.snapshot());
  }

  snapshot(): Progress {
    const elapsedMs = this.#now() - this.#started;
    const rowsPerSecond = elapsedMs > 0 ? (this.#rows * 1000) / elapsedMs : 0;
    const total = this.#totalRows;
    let etaMs: number | undefined;
    if (total !== undefined && this.#rows >= total) etaMs = 0;
    else if (total !== undefined && rowsPerSecond > 0) etaMs = ((total - this.#rows) * 1000) / rowsPerSecond;
    return { pages: this.#pages, rows: this.#rows, bytes: this.#bytes, httpBytes: this.#httpBytes, wireBytes: this.#wireBytes, totalRows: total, elapsedMs, rowsPerSecond, etaMs };
  }
}
