import type { RecordBatch, Schema } from 'apache-arrow';
import type { z } from 'zod';

/**
 * Turns Arrow batches into the bytes of one file. `encode` pulls batches as it needs them and
 * yields bytes as they are ready, so a caller that consumes slowly slows the source down:
 * no format holds more than its own unit of work (a batch, a row group) in memory.
 */
export interface Format {
  /** File name extension without the dot: `parquet`, `arrow`, `csv`, `ndjson`. */
  readonly extension: string;
  readonly contentType: string;
  /**
   * Encodes `batches` (all with `schema`) as one complete file. An empty iterable still yields
   * a valid file carrying the schema (a header row, a parquet footer) when the format has one.
   */
  encode(schema: Schema, batches: AsyncIterable<RecordBatch>, signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /** @deprecated No longer called: it preloaded a format in part threads, which were removed. */
  load?(): Promise<void>;
}

export interface FormatDescriptor<C extends z.ZodType = z.ZodType> {
  readonly type: string;
  readonly description: string;
  /** Validates `format_options`; strict (unknown fields rejected) and described per field. */
  readonly config: C;
  /**
   * Whether the files of one output may differ by columns a later file adds: readers of the format
   * merge files by column name and read a column a file lacks as NULL (Parquet with DuckDB's
   * `union_by_name`, NDJSON objects). Appending a result with a new column needs it. Default false.
   */
  readonly addsColumns?: boolean;
  /** @deprecated No longer read: it told part threads, which were removed, where to load the format from. */
  readonly module?: string;
  /** Pure: no I/O, so `validate` can build a Format to check a job without running it. */
  create(config: z.output<C>): Format;
}

export function defineFormat<C extends z.ZodType>(descriptor: FormatDescriptor<C>): FormatDescriptor<C> {
  return Object.freeze(descriptor);
}
