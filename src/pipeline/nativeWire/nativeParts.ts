import { rm } from 'node:fs/promises';
import { ServiceClient } from '../../client/serviceClient.ts';
import type { ColumnSpec } from '../../types/decode.ts';
import type { RangeReader } from '../stream.ts';
import type { NativeColumn, NativePages } from './duckdbColumns.ts';
import { NativeEngine, type StagedPage } from './nativeEngine.ts';
import { rangePages, type PageSource } from './nativePages.ts';

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
  /** The same columns as DuckDB reads them from `pages` (`nativeColumns(specs, pages)`). */
  readonly columns: readonly NativeColumn[];
  /** The pages DuckDB reads: JSON result pages (the default) or the CSV endpoint's. */
  readonly pages?: NativePages | undefined;
  readonly parts: readonly NativePart[];
  readonly parquet: NativeParquet;
  /** Takes a written part (a local file, removed once this resolves): stores it and records it. */
  readonly store: (part: NativePart, file: string) => Promise<void>;
  readonly signal?: AbortSignal | undefined;
  /** DuckDB's threads (default: `defaultThreads()`, one per core but one). */
  readonly threads?: number | undefined;
  /** DuckDB's memory limit; beyond it, it spills to its folder (default 128MB). */
  readonly memoryLimit?: string | undefined;
}

/**
 * Writes parts of a result read over JSON or CSV pages to Parquet with DuckDB: each page's rows
 * (a JSON page's rows array cut from its body unparsed by `pageRows`, a CSV page whole) go into a
 * file of a private folder, and once a part's pages are in, one `COPY` reads them with DuckDB's
 * JSON or CSV reader, typed from `column_types` (`nativeColumns`), into DuckDB's Parquet writer.
 * The next part's pages are fetched (bounded, in order) while DuckDB writes and the caller stores
 * the part before. One COPY per part rather than one INSERT per page: per-page statements cost
 * more CPU than the JS decoders they replace (docs/performance.md). Parts are written in the order
 * given, one file each; the pages on disk are removed as each part is written.
 */
export async function writeNativeParts(input: NativePartsInput): Promise<void> {
  const engine = await NativeEngine.open(input);
  const client = new ServiceClient(input.reader.connection);
  const source: PageSource = { client, reader: input.reader, pages: input.pages ?? 'json', columns: input.specs.map((s) => s.name), signal: input.signal };
  // The part DuckDB writes and stores while the next part's pages come in.
  let writing: Promise<void> | undefined;
  try {
    for (const part of input.parts) {
      input.signal?.throwIfAborted();
      const pages: StagedPage[] = [];
      for await (const { page, offset, skip } of rangePages(source, part.firstRow, part.rows)) {
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
