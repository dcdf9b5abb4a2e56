import { availableParallelism, tmpdir } from 'node:os';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { ServiceClient } from '../../client/service-client.ts';
import { InvalidResponseError } from '../../client/errors.ts';
import { compileRowDecoder, type ColumnSpec } from '../../types/decode.ts';
import { parseJsonLossless } from '../../types/json.ts';
import { DEFAULT_CONCURRENCY, DEFAULT_PREFETCH, fetchOrdered, type OrderedPage, type PageShape } from '../fetchOrdered.ts';
import type { RangeReader } from '../stream.ts';
import { quoteIdentifier, quoteString, readColumns, type NativeColumn } from './duckdbColumns.ts';
import { pageRows } from './pageRows.ts';

/** One part of the output: rows `[firstRow, firstRow + rows)` of the result, written to one file. */
export interface NativePart {
  readonly index: number;
  readonly firstRow: number;
  readonly rows: number;
}

/** The Parquet settings DuckDB writes a part with (the parquet format's own, where DuckDB has them). */
export interface NativeParquet {
  readonly compression: 'zstd' | 'snappy' | 'gzip' | 'none';
  readonly rowGroupSize: number;
  readonly rowGroupBytes?: number | undefined;
  /** Key-value metadata of each file (`ARROW:schema`, so that Arrow readers see the same schema). */
  readonly metadata: Readonly<Record<string, string>>;
}

export interface NativePartsInput {
  /** How to read row ranges of the result (the stream's page grid, columns, order, the service's address). */
  readonly reader: RangeReader;
  /** The result's columns as the service reported them (for messages naming a value that does not fit). */
  readonly specs: readonly ColumnSpec[];
  /** The same columns as DuckDB reads them (`nativeColumns`). */
  readonly columns: readonly NativeColumn[];
  readonly parts: readonly NativePart[];
  readonly parquet: NativeParquet;
  /** Takes a written part (a local file, removed once this resolves): stores it and records it. */
  readonly store: (part: NativePart, file: string) => Promise<void>;
  readonly signal?: AbortSignal | undefined;
  /** DuckDB's threads (default: one per core). */
  readonly threads?: number | undefined;
  /** DuckDB's memory limit; beyond it, it spills to its folder (default 160MB). */
  readonly memoryLimit?: string | undefined;
}

interface Page extends PageShape {
  readonly rows: Uint8Array;
}

/** A page's rows in a file of the engine's folder, and which of them the part takes. */
interface StagedPage {
  readonly file: string;
  /** The page's `row_count`. */
  readonly rowCount: number;
  /** The page's first row in the result. */
  readonly offset: number;
  readonly skip: number;
  readonly take: number;
}

/**
 * Writes parts of a result read over JSON pages to Parquet with DuckDB: each page's rows are cut
 * from its body unparsed (`pageRows`) into a file of a private folder, and once a part's pages are
 * in, one `COPY` reads them with DuckDB's JSON reader, typed from `column_types` (`nativeColumns`),
 * into DuckDB's Parquet writer. The next part's pages are fetched (bounded, in order) while DuckDB
 * writes and the caller stores the part before. One COPY per part rather than one INSERT per page:
 * per-page statements cost more CPU than the JS decoders they replace (docs/performance.md).
 * Parts are written in the order given, one file each; the pages on disk are removed as each part is written.
 */
export async function writeNativeParts(input: NativePartsInput): Promise<void> {
  const engine = await NativeEngine.open(input);
  const client = new ServiceClient(input.reader.connection);
  // The part DuckDB writes and stores while the next part's pages come in.
  let writing: Promise<void> | undefined;
  try {
    for (const part of input.parts) {
      input.signal?.throwIfAborted();
      const pages: StagedPage[] = [];
      for await (const { page, offset, skip } of partPages(client, input, part)) {
        const first = Math.max(part.firstRow, offset + skip);
        const take = Math.min(page.rowCount, part.firstRow + part.rows - offset) - (first - offset);
        if (take > 0) pages.push(await engine.stage(page, offset, first - offset, take));
      }
      await writing;
      writing = (async () => {
        const file = await engine.write(part, pages);
        try {
          await input.store(part, file);
        } finally {
          await rm(file, { force: true });
        }
      })();
    }
    await writing;
  } catch (error) {
    await writing?.catch(() => undefined);
    throw error;
  } finally {
    await client.close();
    await engine.close();
  }
}

/** The pages holding a part's rows, on the stream's page grid (the first may start before the part). */
function partPages(client: ServiceClient, input: NativePartsInput, part: NativePart): AsyncIterable<OrderedPage<Page>> {
  const { reader } = input;
  const pageSize = reader.options.pageSize ?? part.rows;
  const start = Math.floor(part.firstRow / pageSize) * pageSize;
  const o = reader.options;
  return fetchOrdered<Page>(
    async (request, signal) => {
      const answer = await client.getResultsWire(reader.executionId, {
        offset: request.offset,
        limit: request.limit,
        accept: 'json',
        ...(o.columns === undefined ? {} : { columns: o.columns }),
        ...(o.sortBy === undefined ? {} : { sortBy: o.sortBy }),
        ...(o.allowPartialResults ? { allowPartialResults: true } : {}),
        signal,
      });
      if (answer.format !== 'json') throw new InvalidResponseError('asked for a JSON page, got Arrow', { method: 'writeNativeParts', executionId: reader.executionId });
      const { page, rows } = pageRows(answer.body, answer.context ?? { method: 'writeNativeParts', executionId: reader.executionId });
      const result = page.result;
      if (result === undefined) throw new InvalidResponseError(`result page of a ${page.state} execution has no result`, { method: 'writeNativeParts', executionId: reader.executionId });
      reader.page(result.metadata.row_count, result.metadata.result_set_bytes, answer.decodedBytes, answer.bytes);
      return { rows, rowCount: result.metadata.row_count, nextOffset: page.next_offset };
    },
    {
      start,
      pageSize,
      totalRows: part.firstRow + part.rows,
      concurrency: o.concurrency ?? DEFAULT_CONCURRENCY,
      prefetch: o.prefetch ?? DEFAULT_PREFETCH,
      signal: input.signal,
    },
  );
}

/** One DuckDB for the export, and the folder its pages and parts are staged in. */
class NativeEngine {
  readonly #instance: DuckDBInstance;
  readonly #connection: DuckDBConnection;
  readonly #dir: string;
  readonly #input: NativePartsInput;
  readonly #select: string;
  #pageFiles = 0;

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection, dir: string, input: NativePartsInput) {
    this.#instance = instance;
    this.#connection = connection;
    this.#dir = dir;
    this.#input = input;
    this.#select = input.columns.map((c) => c.select).join(', ');
  }

  static async open(input: NativePartsInput): Promise<NativeEngine> {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-native-'));
    try {
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const instance = await DuckDBInstance.create(':memory:', {
        threads: String(input.threads ?? availableParallelism()),
        memory_limit: input.memoryLimit ?? '160MB',
        temp_directory: join(dir, 'spill'),
        preserve_insertion_order: 'true',
        autoinstall_known_extensions: 'false',
        autoload_known_extensions: 'false',
      });
      const connection = await instance.connect();
      await connection.run(`SET TimeZone = 'UTC'`);
      return new NativeEngine(instance, connection, dir, input);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Stores a page's rows in this engine's folder, for the part that takes rows `[skip, skip + take)` of it. */
  async stage(page: Page, offset: number, skip: number, take: number): Promise<StagedPage> {
    const file = join(this.#dir, `page-${this.#pageFiles++}.json`);
    await writeFile(file, page.rows);
    return { file, rowCount: page.rowCount, offset, skip, take };
  }

  /**
   * Writes a part from its staged pages to a Parquet file of this engine's folder (returned): one
   * statement reading every page, so DuckDB reads them side by side. A page DuckDB refuses is
   * looked for and named (`#misfit`); row counts are checked against the pages' `row_count`.
   */
  async write(part: NativePart, pages: readonly StagedPage[]): Promise<string> {
    const file = join(this.#dir, `part-${part.index}.parquet`);
    try {
      const whole = pages.every((p) => p.skip === 0 && p.take === p.rowCount);
      const skip = pages[0]?.skip ?? 0;
      const query = pages.length === 0 ? `SELECT ${this.#emptySelect()} LIMIT 0` : `${this.#query(pages.map((p) => p.file))}${whole ? '' : ` LIMIT ${part.rows} OFFSET ${skip}`}`;
      let written: number;
      // An abort stops the statement too: DuckDB checks for an interrupt between chunks.
      const interrupt = () => this.#connection.interrupt();
      this.#input.signal?.addEventListener('abort', interrupt, { once: true });
      try {
        written = (await this.#connection.run(`COPY (${query}) TO ${quoteString(file)} (${this.#copyOptions()})`)).rowsChanged;
      } catch (error) {
        this.#input.signal?.throwIfAborted();
        throw await this.#misfit(pages, error);
      } finally {
        this.#input.signal?.removeEventListener('abort', interrupt);
      }
      if (written !== part.rows) {
        throw new InvalidResponseError(`part ${part.index} should hold ${part.rows} rows from row ${part.firstRow}, its pages held ${written}`, {
          method: 'writeNativeParts',
          executionId: this.#input.reader.executionId,
        });
      }
      return file;
    } finally {
      await Promise.all(pages.map((p) => rm(p.file, { force: true })));
    }
  }

  #copyOptions(): string {
    const p = this.#input.parquet;
    return [
      'FORMAT parquet',
      `COMPRESSION ${p.compression === 'none' ? 'uncompressed' : p.compression}`,
      `ROW_GROUP_SIZE ${p.rowGroupSize}`,
      ...(p.rowGroupBytes === undefined ? [] : [`ROW_GROUP_SIZE_BYTES ${p.rowGroupBytes}`]),
      ...(Object.keys(p.metadata).length === 0 ? [] : [`KV_METADATA {${Object.entries(p.metadata).map(([k, v]) => `${quoteString(k)}: ${quoteString(v)}`).join(', ')}}`]),
    ].join(', ');
  }

  /** NULLs of the columns' types: the select of a part with no rows (the file still has the columns). */
  #emptySelect(): string {
    return this.#input.columns.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdentifier(c.name)}`).join(', ');
  }

  #query(files: readonly string[]): string {
    return `SELECT ${this.#select} FROM read_json([${files.map(quoteString).join(', ')}], format = 'array', columns = ${readColumns(this.#input.columns)})`;
  }

  /**
   * The error for pages DuckDB refused: the first value the general decoders refuse, named with its
   * column, row and value (a `ValueDecodeError`); if they take every value, DuckDB's own message.
   */
  async #misfit(pages: readonly StagedPage[], cause: unknown): Promise<Error> {
    const decode = compileRowDecoder(this.#input.specs);
    for (const { file, offset } of pages) {
      try {
        const rows = parseJsonLossless(await readFile(file, 'utf8'));
        if (Array.isArray(rows)) rows.forEach((row, i) => decode(row, offset + i));
      } catch (error) {
        return error as Error;
      }
    }
    const message = cause instanceof Error ? cause.message : String(cause);
    return new InvalidResponseError(`DuckDB could not read the result's pages: ${message}`, { method: 'writeNativeParts', executionId: this.#input.reader.executionId, cause });
  }

  async close(): Promise<void> {
    this.#connection.closeSync();
    this.#instance.closeSync();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
