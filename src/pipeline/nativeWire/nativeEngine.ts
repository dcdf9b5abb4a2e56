import { availableParallelism, tmpdir } from 'node:os';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { InvalidResponseError } from '../../client/errors.ts';
import { compileRowDecoder } from '../../types/decode.ts';
import { ValueDecodeError } from '../../types/errors.ts';
import { parseJsonLossless } from '../../types/json.ts';
import { pagesSelect, quoteIdentifier, quoteString, readColumns, readPages } from './duckdbColumns.ts';
import type { NativePage } from './nativePages.ts';
import type { NativePart, NativePartsInput } from './nativeParts.ts';

/** A page's rows in a file of the engine's folder, and which of them the part takes. */
export interface StagedPage {
  readonly file: string;
  /** The page's rows. */
  readonly rowCount: number;
  /** The page's first row in the result. */
  readonly offset: number;
  readonly skip: number;
  readonly take: number;
}

/**
 * DuckDB's threads when the caller sets none: one per core but one, which fetches and stages the
 * pages (how the export scales with DuckDB's threads: docs/performance.md).
 */
export function defaultThreads(): number {
  return Math.max(1, availableParallelism() - 1);
}

/** DuckDB's memory limit when the caller sets none; beyond it, it spills to the engine's folder. */
const DEFAULT_MEMORY_MB = 128;

/** DuckDB's threads and memory limit for a statement. */
export interface EngineSettings {
  readonly threads: number;
  readonly memoryLimit: string;
}

/**
 * DuckDB's settings for the last part over CSV pages, when the caller sets neither threads nor a
 * memory limit: once its pages are in, the link and the service are idle, and its statement is the
 * export's tail alone (unless it waited for a connection: then DuckDB is behind the pages, and the
 * part before is written beside it on the other core). DuckDB's CSV reader reads the part's page
 * files side by side (a file each), the same bytes as with one thread; its Parquet writer runs
 * threads only as its memory limit allows them (at 128 MB, two ran as one). A 250,000-row part of
 * sample.events: 0.20 s with two threads and 160 MB against 0.30 s with one (docs/performance.md).
 */
export function tailSettings(input: Pick<NativePartsInput, 'pages' | 'threads' | 'memoryLimit'>): EngineSettings | undefined {
  if (input.threads !== undefined || input.memoryLimit !== undefined || input.pages !== 'csv') return undefined;
  const threads = Math.max(defaultThreads(), Math.min(4, availableParallelism()));
  return { threads, memoryLimit: `${DEFAULT_MEMORY_MB + 32 * (threads - 1)}MB` };
}

/**
 * DuckDB's connections, each running one statement at once: over CSV pages two where there are two
 * cores, so that two parts are written side by side (nativeParts.ts), each on one thread (its CSV
 * reader splits no page file; it reads the files side by side where it has more threads), and
 * the same statement on another connection writes the same bytes. Over JSON pages one: two of
 * DuckDB's JSON statements at once took the peak RSS of a 1M-row export past 300 MB
 * (docs/performance.md).
 */
export function defaultStatements(input: Pick<NativePartsInput, 'pages' | 'statements'>): number {
  return Math.max(1, input.statements ?? (input.pages === 'csv' ? Math.min(2, availableParallelism()) : 1));
}

/** One DuckDB for the export, and the folder its pages and parts are staged in. */
export class NativeEngine {
  /** DuckDB, opening while the first pages are fetched and staged (which does not need it). */
  readonly #duck: Promise<OpenDuckDb>;
  readonly #dir: string;
  readonly #input: NativePartsInput;
  #pageFiles = 0;
  /** DuckDB's settings, once `write` changed them for a part. */
  #settings: EngineSettings | undefined;
  /** Connections no statement runs on, and the writes waiting for one (in the order they asked). */
  #idle: DuckDBConnection[] | undefined;
  readonly #waiting: ((connection: DuckDBConnection) => void)[] = [];

  private constructor(duck: Promise<OpenDuckDb>, dir: string, input: NativePartsInput) {
    this.#duck = duck;
    // Awaited by write and close; a failure to open is theirs to report.
    duck.catch(() => undefined);
    this.#dir = dir;
    this.#input = input;
  }

  /**
   * The engine's folder at once, and DuckDB opening in the background: its start (loading the
   * module, creating the instance) overlaps the first part's page requests instead of preceding
   * them. A DuckDB that cannot open fails the first part's write.
   */
  static async open(input: NativePartsInput): Promise<NativeEngine> {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-native-'));
    return new NativeEngine(openDuckDb(input, dir), dir, input);
  }

  /** Stores a page's rows in this engine's folder, for the part that takes rows `[skip, skip + take)` of it. */
  async stage(page: NativePage, offset: number, skip: number, take: number): Promise<StagedPage> {
    // DuckDB's readers take a file's compression from its name.
    const file = join(this.#dir, `page-${this.#pageFiles++}.${this.#input.pages ?? 'json'}${page.coding === 'zstd' ? '.zst' : ''}`);
    await writeFile(file, page.bytes);
    return { file, rowCount: page.rowCount, offset, skip, take };
  }

  /**
   * Writes a part from its staged pages to a Parquet file of this engine's folder (returned): one
   * statement reading every page, so DuckDB reads them side by side. A page DuckDB refuses is
   * looked for and named (`#misfit`); row counts are checked against the pages' row counts.
   * `stop` (the failure of a part written beside it) or the export's signal stops it, its reason
   * the error. `settings` raise DuckDB's for the statement unless it waited for a connection.
   */
  async write(part: NativePart, pages: readonly StagedPage[], stop?: AbortSignal, settings?: EngineSettings): Promise<string> {
    const file = join(this.#dir, `part-${part.index}.parquet`);
    try {
      const whole = pages.every((p) => p.skip === 0 && p.take === p.rowCount);
      const skip = pages[0]?.skip ?? 0;
      const query = pages.length === 0 ? `SELECT ${this.#emptySelect()} LIMIT 0` : `${this.#query(pages.map((p) => p.file))}${whole ? '' : ` LIMIT ${part.rows} OFFSET ${skip}`}`;
      let written: number;
      const signal = AbortSignal.any([this.#input.signal, stop].filter((s) => s !== undefined));
      const { connection, waited } = await this.#lease();
      // A part that waited for a connection finds DuckDB behind the pages, every core on a
      // statement: more threads would only share them (on loopback the last part with two threads
      // beside the part before took 5 % more time and CPU), so its settings are not raised.
      const raise = waited ? undefined : settings;
      // An abort stops the statement too: DuckDB checks for an interrupt between chunks.
      const interrupt = () => connection.interrupt();
      signal.addEventListener('abort', interrupt, { once: true });
      try {
        // A part that waited for a connection is not written once stopped.
        signal.throwIfAborted();
        // DuckDB's settings are the instance's: a raise also serves a statement still running beside.
        if (raise !== undefined && raise !== this.#settings) {
          await connection.run(`SET threads = ${raise.threads}`);
          await connection.run(`SET memory_limit = ${quoteString(raise.memoryLimit)}`);
          this.#settings = raise;
        }
        written = (await connection.run(`COPY (${query}) TO ${quoteString(file)} (${this.#copyOptions()})`)).rowsChanged;
      } catch (error) {
        signal.throwIfAborted();
        throw await this.#misfit(connection, pages, error);
      } finally {
        signal.removeEventListener('abort', interrupt);
        this.#release(connection);
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

  /** A connection no statement runs on, once there is one (and whether it had to wait): writes get them in the order they asked. */
  async #lease(): Promise<{ connection: DuckDBConnection; waited: boolean }> {
    const { connections } = await this.#duck;
    this.#idle ??= [...connections];
    const idle = this.#idle.shift();
    if (idle !== undefined) return { connection: idle, waited: false };
    return new Promise((resolve) => this.#waiting.push((connection) => resolve({ connection, waited: true })));
  }

  #release(connection: DuckDBConnection): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#idle!.push(connection);
    else next(connection);
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
    return pagesSelect(this.#input.columns, files, this.#input.pages ?? 'json');
  }

  /**
   * The error for pages DuckDB refused: the first value the general decoders refuse, named with its
   * column, row and value (a `ValueDecodeError`); if they take every value, DuckDB's own message.
   */
  async #misfit(connection: DuckDBConnection, pages: readonly StagedPage[], cause: unknown): Promise<Error> {
    const found = this.#input.pages === 'csv' ? await this.#csvMisfit(connection, pages, cause) : await this.#jsonMisfit(pages);
    if (found !== undefined) return found;
    const message = cause instanceof Error ? cause.message : String(cause);
    return new InvalidResponseError(`DuckDB could not read the result's pages: ${message}`, { method: 'writeNativeParts', executionId: this.#input.reader.executionId, cause });
  }

  async #jsonMisfit(pages: readonly StagedPage[]): Promise<Error | undefined> {
    const decode = compileRowDecoder(this.#input.specs);
    for (const { file, offset } of pages) {
      try {
        const rows = parseJsonLossless(await readFile(file, 'utf8'));
        if (Array.isArray(rows)) rows.forEach((row, i) => decode(row, offset + i));
      } catch (error) {
        return error as Error;
      }
    }
    return undefined;
  }

  /**
   * A value of a CSV page that does not fit its column: the column and text the statement's
   * `error()` named (duckdbColumns.ts), found again in the pages for its row.
   */
  async #csvMisfit(connection: DuckDBConnection, pages: readonly StagedPage[], cause: unknown): Promise<Error | undefined> {
    const message = cause instanceof Error ? cause.message : String(cause);
    for (const spec of this.#input.specs) {
      const named = new RegExp(`column "${escapeRegExp(spec.name)}" \\((.+?)\\): (.*) is not a valid \\1`, 's').exec(message);
      if (named === null) continue;
      const [, type, value] = named as unknown as [string, string, string];
      const id = quoteIdentifier(spec.name);
      const text = readColumns(this.#input.columns.map((c) => ({ ...c, read: 'VARCHAR' })));
      const sql = `SELECT n FROM (SELECT row_number() OVER () - 1 AS n, ${id} AS v FROM ${readPages(pages.map((p) => p.file), text, this.#input.pages ?? 'json')}) WHERE v = ${quoteString(value)} LIMIT 1`;
      const rows = (await connection.runAndReadAll(sql)).getRows();
      const n = rows[0]?.[0];
      if (n === undefined) continue;
      return new ValueDecodeError({ column: spec.name, type: spec.type, rowOffset: pages[0]!.offset + Number(n), path: '', value, reason: `is not a valid ${type}` });
    }
    return undefined;
  }

  async close(): Promise<void> {
    try {
      const { instance, connections } = await this.#duck;
      for (const connection of connections) connection.closeSync();
      instance.closeSync();
    } catch {
      // It never opened: its error was the write's to report (or nothing was written).
    } finally {
      await rm(this.#dir, { recursive: true, force: true });
    }
  }
}

interface OpenDuckDb {
  readonly instance: DuckDBInstance;
  /** One per part written at once (`statements`). */
  readonly connections: readonly DuckDBConnection[];
}

async function openDuckDb(input: NativePartsInput, dir: string): Promise<OpenDuckDb> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const threads = input.threads ?? defaultThreads();
  const memoryLimit = input.memoryLimit ?? `${DEFAULT_MEMORY_MB}MB`;
  const instance = await DuckDBInstance.create(':memory:', {
    threads: String(threads),
    memory_limit: memoryLimit,
    temp_directory: join(dir, 'spill'),
    preserve_insertion_order: 'true',
    // Memory DuckDB frees goes back to the system past 16 MB held, not its default 128 MB: the
    // peak of a long export stays some 40 MB lower (docs/performance.md).
    allocator_flush_threshold: '16MB',
    allocator_bulk_deallocation_flush_threshold: '16MB',
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  }).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`the native export's DuckDB did not start (threads ${threads}, memory_limit ${JSON.stringify(memoryLimit)}): ${message}`, { cause: error });
  });
  const connections: DuckDBConnection[] = [];
  try {
    for (let i = 0; i < defaultStatements(input); i++) {
      const connection = await instance.connect();
      connections.push(connection);
      await connection.run(`SET TimeZone = 'UTC'`);
    }
    return { instance, connections };
  } catch (error) {
    for (const connection of connections) connection.closeSync();
    instance.closeSync();
    throw error;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
