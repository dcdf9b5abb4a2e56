// The Arrow chunks of a stored result, for its Arrow encoding (arrowEncoding.ts), from ONE scan of
// the result table: each DuckDB chunk of the scan is appended to the Arrow batch of the rows it
// holds (a DuckDB chunk of 2,048 rows may end one batch and start the next), so the encoder pays
// for one query, not one query and one sort a chunk. The scan returns the rows in their stored
// order (DuckDB keeps insertion order in a plain scan; the rowid of every DuckDB chunk is checked
// against it). Each batch is the same as the Arrow page of its rows built per request
// (pages/arrowBatch.ts): same layout, same bytes.
//
// The scan does not count its chunks for the forced collections of memory/chunkGarbage.ts: each
// chunk's Arrow buffers, allocated in JS and about as large as the DuckDB chunks they copy, make V8
// collect on its own, incrementally, often enough to finalize the chunks fetched (measured on the
// first Arrow read of 4M rows x 9 columns: the service's RSS while read 297 MB against 285 MB with
// the forced ones, which stopped the thread for 20-90 ms each and made the read 6.5 s against 8.4 s).
//
// A value a vector column refuses (a date outside years 1-9999) ends the scan: that chunk and the
// ones after it are built per chunk as pages are (`perChunk`), each with its own fallback.
import duckdb from '@duckdb/node-bindings';
import type { DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import { ArrowBatch, batchLayout, ipcPieces, type BatchLayout } from '../pages/arrowBatch.ts';
import type { StoredColumns } from '../pages/pageQuery.ts';

/** One chunk of the Arrow encoding: its IPC schema message and its record batch message. */
export interface ArrowChunk {
  schema: Uint8Array;
  /** The record batch message, in pieces (written one after the other). */
  batch: Uint8Array[];
  batchBytes: number;
  rowCount: number;
}

/** Builds the chunk of rows [offset, offset + limit) on its own (a page query). */
export type ChunkBuilder = (offset: number, limit: number) => Promise<ArrowChunk>;

/**
 * The chunks of `chunkRows` rows of the `rowCount` rows of `stored`, in order, every column. The
 * scan runs on `conn` while the generator is read (nothing else may use the connection meanwhile).
 */
export async function* arrowChunks(conn: DuckDBConnection, stored: StoredColumns, chunkRows: number, rowCount: number, perChunk: ChunkBuilder): AsyncGenerator<ArrowChunk> {
  const columns = { stored, cols: stored.names.map((_, i) => i), columnNames: stored.names, columnTypes: stored.protocolTypes };
  const layout = batchLayout(columns, true);
  let offset = 0;
  const scan = new ChunkScan(conn, stored, layout, rowCount);
  try {
    for (; offset < rowCount; offset += chunkRows) {
      const limit = Math.min(chunkRows, rowCount - offset);
      const batch = await scan.fill(new ArrowBatch(layout, limit), limit);
      if (batch === undefined) break;
      yield { ...(await ipcPieces(batch.finish(), layout.schema)), rowCount: batch.rowCount };
    }
  } finally {
    await scan.close();
  }
  for (; offset < rowCount; offset += chunkRows) yield perChunk(offset, Math.min(chunkRows, rowCount - offset));
}

/** The scan of the whole table, handed out row range by row range. */
class ChunkScan {
  readonly #conn: DuckDBConnection;
  readonly #sql: string;
  readonly #rowidColumn: number;
  readonly #rowCount: number;
  #result: Awaited<ReturnType<DuckDBConnection['stream']>> | undefined;
  /** The next DuckDB chunk, asked for while the current one is copied. */
  #next: Promise<DuckDBDataChunk | null> | undefined;
  #chunk: DuckDBDataChunk | undefined;
  /** Rows of #chunk taken so far, and the row number of its first row. */
  #taken = 0;
  #first = 0;
  #rowsSeen = 0;

  constructor(conn: DuckDBConnection, stored: StoredColumns, layout: BatchLayout, rowCount: number) {
    this.#conn = conn;
    this.#rowidColumn = layout.columns.cols.length;
    this.#sql = `SELECT ${layout.select}, rowid AS __rn FROM ${stored.table}`;
    this.#rowCount = rowCount;
  }

  /** Appends the next `limit` rows to `batch`; undefined when a vector column refused one (the scan then ends). */
  async fill(batch: ArrowBatch, limit: number): Promise<ArrowBatch | undefined> {
    while (batch.rowCount < limit) {
      const chunk = await this.#current();
      const n = Math.min(chunk.rowCount - this.#taken, limit - batch.rowCount);
      if (!batch.append(chunk, this.#taken, n)) return undefined;
      this.#taken += n;
    }
    return batch;
  }

  /** The DuckDB chunk with rows not taken yet. */
  async #current(): Promise<DuckDBDataChunk> {
    if (this.#chunk !== undefined && this.#taken < this.#chunk.rowCount) return this.#chunk;
    this.#result ??= await this.#conn.stream(this.#sql);
    const chunk = await (this.#next ?? this.#fetch());
    if (chunk === null || chunk.rowCount === 0) throw new Error(`Arrow encoding: the scan of the result ended after ${this.#rowsSeen} rows, not ${this.#rowCount}`);
    this.#first = this.#rowsSeen;
    this.#rowsSeen += chunk.rowCount;
    checkRowids(chunk, this.#rowidColumn, this.#first);
    this.#chunk = chunk;
    this.#taken = 0;
    // DuckDB's threads make the next chunk while this one is copied.
    this.#next = this.#rowsSeen < this.#rowCount ? this.#fetch() : undefined;
    return chunk;
  }

  #fetch(): Promise<DuckDBDataChunk | null> {
    const next = this.#result!.fetchChunk();
    // Read or not (the scan may end first), a failed fetch is not an unhandled rejection.
    next.catch(() => undefined);
    return next;
  }

  /** Ends the scan: the fetch running ahead, if any, is waited for (the connection runs one query at a time). */
  async close(): Promise<void> {
    await this.#next?.catch(() => undefined);
    this.#next = undefined;
    this.#chunk = undefined;
  }
}

/** Throws unless the chunk's rows are rows first, first + 1, ... of the table (their rowid, as stored). */
function checkRowids(chunk: DuckDBDataChunk, column: number, first: number): void {
  const n = chunk.rowCount;
  const ids = duckdb.vector_get_data(duckdb.data_chunk_get_vector(chunk.chunk, column), n * 8);
  const view = new DataView(ids.buffer, ids.byteOffset, n * 8);
  const head = Number(view.getBigInt64(0, true));
  const last = Number(view.getBigInt64((n - 1) * 8, true));
  if (head !== first || last !== first + n - 1) throw new Error(`Arrow encoding: the scan of the result returned rows ${head}..${last} where rows ${first}..${first + n - 1} were due`);
}
