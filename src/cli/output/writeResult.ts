import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { formats } from '../../../connectors/index.ts';
import type { ResultStream } from '../../pipeline/stream.ts';
import type { FormatDescriptor } from '../../kit/index.ts';
import { UsageError } from '../usage-error.ts';
import { writeOut, type OutputStream } from '../io.ts';
import { renderTable } from './table.ts';

export const ROW_FORMATS = ['table', 'csv', 'ndjson', 'arrow', 'parquet'] as const;
export type RowFormat = (typeof ROW_FORMATS)[number];

/** `--format` if given, else the file's extension, else a table on a terminal and CSV in a pipe. */
export function chooseFormat(given: string | undefined, out: string | undefined, stdout: OutputStream): RowFormat {
  if (given !== undefined) {
    if (!(ROW_FORMATS as readonly string[]).includes(given)) throw new UsageError(`--format must be one of ${ROW_FORMATS.join(', ')}, got ${JSON.stringify(given)}`);
    if (given === 'table' && out !== undefined) throw new UsageError('--format table is for the terminal; with --out use csv, ndjson, arrow or parquet');
    return given as RowFormat;
  }
  const ext = out?.match(/\.([a-z]+)$/i)?.[1]?.toLowerCase();
  if (ext === 'csv' || ext === 'ndjson' || ext === 'parquet') return ext;
  if (ext === 'jsonl') return 'ndjson';
  if (ext === 'arrow' || ext === 'arrows' || ext === 'feather') return 'arrow';
  if (out !== undefined) return 'csv';
  return stdout.isTTY ? 'table' : 'csv';
}

export interface WriteResultOptions {
  readonly format: RowFormat;
  /** A file path; absent: standard output. */
  readonly out?: string | undefined;
  readonly stdout: OutputStream;
  /** Rows shown by the table format (the rest are counted, not shown). */
  readonly tableRows?: number;
  readonly signal: AbortSignal;
}

/**
 * Writes a result as rows. Files are written under a temporary name and renamed when complete,
 * so an interrupted `--out` never leaves a truncated file behind. Returns the rows written.
 */
export async function writeResult(result: ResultStream, options: WriteResultOptions): Promise<{ rows: number; bytes: number }> {
  if (options.format === 'table') return writeTable(result, options);
  const descriptor = formats.find((f) => f.type === options.format) as FormatDescriptor | undefined;
  if (!descriptor) throw new UsageError(`unknown format ${options.format}`);
  const format = descriptor.create(descriptor.config.parse({}));
  const schema = await result.schema();
  let rows = 0;
  const batches = (async function* () {
    for await (const batch of result.batches()) {
      rows += batch.numRows;
      yield batch;
    }
  })();
  let bytes = 0;
  if (options.out === undefined) {
    for await (const chunk of format.encode(schema, batches, options.signal)) {
      bytes += chunk.byteLength;
      await writeOut(options.stdout, chunk);
    }
    return { rows, bytes };
  }
  const tmp = `${options.out}.sluice-tmp-${process.pid}`;
  const file = createWriteStream(tmp);
  try {
    for await (const chunk of format.encode(schema, batches, options.signal)) {
      bytes += chunk.byteLength;
      if (!file.write(chunk)) await once(file, 'drain');
    }
    file.end();
    await once(file, 'finish');
    await rename(tmp, options.out);
    return { rows, bytes };
  } catch (error) {
    file.destroy();
    await rm(tmp, { force: true });
    throw error;
  }
}

async function writeTable(result: ResultStream, options: WriteResultOptions): Promise<{ rows: number; bytes: number }> {
  const limit = options.tableRows ?? 100;
  const info = await result.info();
  const shown: Record<string, unknown>[] = [];
  let rows = 0;
  for await (const row of result.rows()) {
    options.signal.throwIfAborted();
    if (shown.length < limit) shown.push(row);
    rows += 1;
    if (rows >= limit) break;
  }
  const text = renderTable(info.columns.map((c) => c.name), shown);
  const more = info.totalRows - shown.length;
  const footer = more > 0 ? `(${shown.length} of ${info.totalRows} rows shown; use --format csv or --out FILE for all)\n` : `(${info.totalRows} row${info.totalRows === 1 ? '' : 's'})\n`;
  await writeOut(options.stdout, text + footer);
  return { rows, bytes: text.length };
}
