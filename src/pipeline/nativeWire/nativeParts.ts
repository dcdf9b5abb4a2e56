import { availableParallelism, tmpdir } from 'node:os';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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

/**
 * Writes parts of a result read over JSON pages to Parquet with DuckDB: each page's rows are cut
 * from its body unparsed (`pageRows`), handed to DuckDB's JSON reader typed from `column_types`
 * (`nativeColumns`), and each part is written by DuckDB's Parquet writer once its last page is in.
 * Pages are fetched ahead (bounded, in order) while DuckDB reads the ones before; a part is stored
 * while the next one's pages come in. Parts are written in the order given, one file each.
 */
export async function writeNativeParts(input: NativePartsInput): Promise<void> {
  const engine = await NativeEngine.open(input);
  const client = new ServiceClient(input.reader.connection);
  let storing: Promise<void> | undefined;
  try {
    for (const part of input.parts) {
      input.signal?.throwIfAborted();
      await engine.begin();
      for await (const { page, offset, skip } of partPages(client, input, part)) {
        const first = Math.max(part.firstRow, offset + skip);
        const take = Math.min(page.rowCount, part.firstRow + part.rows - offset) - (first - offset);
        if (take <= 0) continue;
        await engine.ingest(page, offset, first - offset, take);
      }
      const file = await engine.finish(part);
      await storing;
      storing = input.store(part, file).finally(() => rm(file, { force: true }));
    }
    await storing;
  } catch (error) {
    await storing?.catch(() => undefined);
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

/** One DuckDB for the export: a table the pages of the current part go into, copied to Parquet at its end. */
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

  /** Starts a part: an empty table of the result's columns. */
  async begin(): Promise<void> {
    const columns = this.#input.columns.map((c) => `${quoteIdentifier(c.name)} ${c.type}`).join(', ');
    await this.#connection.run(`CREATE OR REPLACE TABLE part (${columns})`);
  }

  /** Reads rows `[skip, skip + take)` of one page into the part's table; the page starts at row `offset` of the result. */
  async ingest(page: Page, offset: number, skip: number, take: number): Promise<void> {
    const file = join(this.#dir, `page-${this.#pageFiles++}.json`);
    await writeFile(file, page.rows);
    try {
      const whole = skip === 0 && take === page.rowCount;
      const sql = `INSERT INTO part ${this.#query(file)}${whole ? '' : ` LIMIT ${take} OFFSET ${skip}`}`;
      let inserted: number;
      try {
        inserted = (await this.#connection.run(sql)).rowsChanged;
      } catch (error) {
        throw this.#misfit(page, offset, error);
      }
      if (whole ? inserted !== page.rowCount : inserted !== take) {
        throw new InvalidResponseError(`the page at row ${offset} holds ${inserted + skip} rows but result.metadata.row_count says ${page.rowCount}`, {
          method: 'writeNativeParts',
          executionId: this.#input.reader.executionId,
        });
      }
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Writes the part's table to a Parquet file of this engine's folder; returns its path. */
  async finish(part: NativePart): Promise<string> {
    const file = join(this.#dir, `part-${part.index}.parquet`);
    const p = this.#input.parquet;
    const options = [
      'FORMAT parquet',
      `COMPRESSION ${p.compression === 'none' ? 'uncompressed' : p.compression}`,
      `ROW_GROUP_SIZE ${p.rowGroupSize}`,
      ...(p.rowGroupBytes === undefined ? [] : [`ROW_GROUP_SIZE_BYTES ${p.rowGroupBytes}`]),
      ...(Object.keys(p.metadata).length === 0 ? [] : [`KV_METADATA {${Object.entries(p.metadata).map(([k, v]) => `${quoteString(k)}: ${quoteString(v)}`).join(', ')}}`]),
    ];
    const written = (await this.#connection.run(`COPY part TO ${quoteString(file)} (${options.join(', ')})`)).rowsChanged;
    if (written !== part.rows) {
      throw new InvalidResponseError(`part ${part.index} should hold ${part.rows} rows from row ${part.firstRow}, the pages held ${written}`, {
        method: 'writeNativeParts',
        executionId: this.#input.reader.executionId,
      });
    }
    return file;
  }

  #query(file: string): string {
    return `SELECT ${this.#select} FROM read_json(${quoteString(file)}, format = 'array', columns = ${readColumns(this.#input.columns)})`;
  }

  /**
   * The error for a page DuckDB refused: the page decoded the general way names the column, row and
   * value that does not fit (a `ValueDecodeError`); if it decodes, DuckDB's own message.
   */
  #misfit(page: Page, offset: number, cause: unknown): Error {
    try {
      const rows = parseJsonLossless(Buffer.from(page.rows).toString('utf8'));
      if (Array.isArray(rows)) {
        const decode = compileRowDecoder(this.#input.specs);
        rows.forEach((row, i) => decode(row, offset + i));
      }
    } catch (error) {
      return error as Error;
    }
    const message = cause instanceof Error ? cause.message : String(cause);
    return new InvalidResponseError(`DuckDB could not read the page at row ${offset}: ${message}`, { method: 'writeNativeParts', executionId: this.#input.reader.executionId, cause });
  }

  async close(): Promise<void> {
    this.#connection.closeSync();
    this.#instance.closeSync();
    await rm(this.#dir, { recursive: true, force: true });
  }
}
