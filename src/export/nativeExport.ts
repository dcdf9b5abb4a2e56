import { createReadStream } from 'node:fs';
import { Table, tableToIPC, type Schema } from 'apache-arrow';
import type { Format } from '../kit/index.ts';
import type { RangeReader } from '../pipeline/stream.ts';
import { nativeColumns, type NativeColumn, type NativePages } from '../pipeline/nativeWire/duckdbColumns.ts';
import { writeNativeParts, type NativeParquet } from '../pipeline/nativeWire/nativeParts.ts';
import { TYPE_METADATA_KEY } from '../types/arrow.ts';
import type { ColumnSpec } from '../types/decode.ts';
import type { Transaction } from './destination.ts';
import { fileEntryOf, type JournalPart } from './journal.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { partFileName } from './partFileName.ts';
import { type FileEntry, storeFile } from './partFile.ts';
import { planParts } from './partPlan.ts';
import { serialReason } from './splitRule.ts';

/**
 * The native path of an export: a Parquet output of a service without Arrow pages is written by
 * DuckDB from the text of the service's CSV pages (or its JSON pages: src/pipeline/nativeWire), not
 * decoded row by row in JS and encoded by parquet-wasm. Taken automatically where it writes the
 * same values, else the general path; `nativeRoute` says which and why (`--plan` prints it).
 */
export type NativeRoute =
  | { readonly native: true; readonly pages: NativePages; readonly threads?: number | undefined; readonly columns: readonly NativeColumn[]; readonly specs: readonly ColumnSpec[] }
  | { readonly native: false; readonly reason: string };

/**
 * The pages the native path reads by default: the CSV endpoint's. They are half the bytes of the
 * JSON pages to fetch, stage and free, for about the same work in DuckDB (the figures:
 * docs/performance.md).
 */
export const NATIVE_PAGES: NativePages = 'csv';

/** Parquet settings DuckDB's writer has no counterpart for, and the value each must keep. */
const PARQUET_DEFAULTS: Readonly<Record<string, unknown>> = { dictionary: 'auto', data_page_size: 1_048_576, statistics: 'page' };

/** Why the output, whatever the result's columns, is not written natively (undefined: it may be). */
export function nativeOutputReason(output: ResolvedOutput): string | undefined {
  if (output.format.type !== 'parquet') return `the ${output.format.type} format is written by its own encoder (only Parquet is written natively)`;
  const split = serialReason(output);
  // A single file is written natively too: one part of every row.
  if (split !== undefined && !split.startsWith('without max_rows_per_file')) return split;
  if (output.table === 'iceberg') return 'the iceberg commit converts the rows of its data files';
  const config = output.formatConfig as Record<string, unknown>;
  for (const [key, value] of Object.entries(PARQUET_DEFAULTS)) if (config[key] !== value) return `format_options.${key} is set (DuckDB's Parquet writer has no such setting)`;
  if (config['auto_encodings'] !== undefined) return 'format_options.auto_encodings is set (DuckDB chooses its own encodings)';
  if (Object.keys((config['columns'] as object | undefined) ?? {}).length > 0) return 'format_options.columns is set (DuckDB chooses its own encodings)';
  return undefined;
}

/**
 * When the native path is taken: `auto` (the default), where the stream chose JSON pages because
 * the service serves no Arrow (the real service), so that a service offering both keeps one path;
 * `always` also where the caller asked for JSON pages; `never`. `csv` and `json` are `always`,
 * reading those pages (the default: `NATIVE_PAGES`); the object form is `always` with DuckDB's
 * threads set too (the bench measures how the export scales with them).
 */
export type NativeMode = 'auto' | 'always' | 'never' | NativePages | { readonly pages?: NativePages; readonly threads?: number };

/** The path the rows of `schema` take to `output` when read by `reader`. */
export function nativeRoute(output: ResolvedOutput, schema: Schema, reader: RangeReader | undefined, mode: NativeMode = 'auto'): NativeRoute {
  if (mode === 'never') return { native: false, reason: 'native: never' };
  if (reader === undefined) return { native: false, reason: 'the result cannot be read by row ranges' };
  if (reader.options.wire !== 'json') return { native: false, reason: 'the rows come over Arrow pages' };
  const settings = typeof mode === 'object' ? mode : mode === 'json' || mode === 'csv' ? { pages: mode } : {};
  if (mode === 'auto' && reader.wireChosen !== true) return { native: false, reason: 'JSON pages were asked for (wire: json); the native path is chosen with wire auto' };
  const why = nativeOutputReason(output);
  if (why !== undefined) return { native: false, reason: why };
  const specs = schema.fields.map((f) => ({ name: f.name, type: f.metadata.get(TYPE_METADATA_KEY) ?? 'unknown' }));
  const pages = settings.pages ?? NATIVE_PAGES;
  const columns = nativeColumns(specs, pages);
  return 'columns' in columns ? { native: true, pages, threads: settings.threads, columns: columns.columns, specs } : { native: false, reason: columns.reason };
}

export interface NativeExportOptions {
  readonly signal?: AbortSignal | undefined;
  readonly onProgress?: ((progress: { rows: number; bytes: number; files: number }) => void) | undefined;
  readonly kept: readonly JournalPart[];
  readonly record: ((part: JournalPart) => Promise<void>) | undefined;
}

/**
 * Writes the parts still missing natively, each through `tx` under the name the general path gives
 * it, and records each in the journal once stored (resume per part). Files in part order.
 */
export async function writeNativeExport(
  route: Extract<NativeRoute, { native: true }>,
  schema: Schema,
  executionId: string,
  reader: RangeReader,
  output: ResolvedOutput,
  format: Format,
  tx: Transaction,
  options: NativeExportOptions,
): Promise<FileEntry[]> {
  const perPart = Number.isFinite(output.maxRowsPerFile) ? output.maxRowsPerFile : Math.max(1, reader.totalRows);
  const parts = planParts(reader.totalRows, perPart, new Set(options.kept.map((p) => p.first_row / perPart)));
  const config = output.formatConfig as { compression: NativeParquet['compression']; row_group_size: number; row_group_bytes?: number };
  let rows = options.kept.reduce((n, p) => n + p.rows, 0);
  let bytes = options.kept.reduce((n, p) => n + p.bytes, 0);
  let files = options.kept.length;
  const written: { first: number; entry: FileEntry }[] = options.kept.map((p) => ({ first: p.first_row, entry: fileEntryOf(p) }));
  await writeNativeParts({
    reader,
    specs: route.specs,
    columns: route.columns,
    pages: route.pages,
    threads: route.threads,
    parts,
    parquet: { compression: config.compression, rowGroupSize: config.row_group_size, rowGroupBytes: config.row_group_bytes, metadata: { 'ARROW:schema': arrowSchemaMetadata(schema) } },
    signal: options.signal,
    store: async (part, file) => {
      const name = partFileName(executionId, part.index, format.extension);
      const stored = await storeFile(tx, name, createReadStream(file), format.contentType, options.signal, (n) => {
        bytes += n;
        options.onProgress?.({ rows, bytes, files });
      });
      await options.record?.({ path: name, first_row: part.firstRow, rows: part.rows, bytes: stored.bytes, sha256: stored.sha256 });
      rows += part.rows;
      files++;
      written.push({ first: part.firstRow, entry: { path: name, rows: part.rows, bytes: stored.bytes, sha256: stored.sha256, partition: {} } });
      options.onProgress?.({ rows, bytes, files });
    },
  });
  return written.sort((a, b) => a.first - b.first).map((e) => e.entry);
}

/**
 * The `ARROW:schema` entry Arrow's Parquet writers add: the IPC schema message, base64. Arrow
 * readers of a natively written file then see the schema the general path writes (field types,
 * `service.type` of each field, the execution's metadata).
 */
export function arrowSchemaMetadata(schema: Schema): string {
  const stream = tableToIPC(new Table(schema), 'stream');
  // The stream is the schema message, then the 8-byte end-of-stream marker.
  return Buffer.from(stream.subarray(0, stream.byteLength - 8)).toString('base64');
}
