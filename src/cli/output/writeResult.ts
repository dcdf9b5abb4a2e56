import { SluiceError } from '../../errors.ts';
import { writeFileAtomically } from '../../kit/atomicFile.ts';
import { DestinationError } from '../../kit/index.ts';
import type { ChosenFormat, OpenedTarget } from './outTarget.ts';
import { formats } from '../../../connectors/index.ts';
import type { ResultStream } from '../../pipeline/stream.ts';
import type { FormatDescriptor } from '../../kit/index.ts';
import { UsageError } from '../usageError.ts';
import { writeOut, type OutputStream } from '../io.ts';
import { renderTable } from './table.ts';

export interface WriteResultOptions {
  readonly format: ChosenFormat;
  /** Opened (and checked) before the query ran: standard output, a local file or an S3 object. */
  readonly target: OpenedTarget;
  readonly stdout: OutputStream;
  /** At most this many rows are written (the table format counts the rest). */
  readonly limit?: number;
  /** CSV records end with \r\n (RFC 4180) instead of \n. */
  readonly crlf?: boolean;
  readonly signal: AbortSignal;
}

/**
 * Writes a result as rows. A file is written under a temporary name next to it and renamed when
 * complete, an S3 object through a multipart upload that appears only when complete, so an
 * interrupted `--out` never leaves a truncated file behind. Returns the rows and bytes written.
 */
export async function writeResult(result: ResultStream, options: WriteResultOptions): Promise<{ rows: number; bytes: number }> {
  if (options.format.format === 'table') return writeTable(result, options);
  const descriptor = formats.find((f) => f.type === options.format.format) as FormatDescriptor | undefined;
  if (!descriptor) throw new UsageError(`unknown format ${options.format.format}`);
  const settings = options.format.format === 'csv' ? { line_terminator: options.crlf ? 'crlf' : 'lf' } : options.format.format === 'arrow' ? { container: options.format.arrowContainer } : {};
  const format = descriptor.create(descriptor.config.parse(settings));
  const schema = await result.schema();
  let rows = 0;
  let bytes = 0;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const batches = (async function* () {
    if (limit === 0) return;
    // Leaving the loop early closes the stream, which stops fetching pages.
    for await (const batch of result.batches()) {
      const take = Math.min(batch.numRows, limit - rows);
      rows += take;
      yield take === batch.numRows ? batch : batch.slice(0, take);
      if (rows >= limit) return;
    }
  })();
  const encoded = (async function* () {
    for await (const chunk of format.encode(schema, batches, options.signal)) {
      bytes += chunk.byteLength;
      yield chunk;
    }
  })();
  const { target } = options.target;
  if (target.kind === 'stdout') {
    for await (const chunk of encoded) await writeOut(options.stdout, chunk);
  } else if (target.kind === 's3') {
    try {
      await options.target.store!.put(target.key, encoded, { contentType: format.contentType, signal: options.signal });
    } catch (error) {
      throw asDestinationError(options.target.url, error, options.signal);
    }
  } else {
    try {
      await writeFileAtomically(target.path, encoded);
    } catch (error) {
      throw asDestinationError(options.target.url, error, options.signal);
    }
  }
  return { rows, bytes };
}

/** A failure of the store itself names the destination; what already says what failed (the query, an abort) passes unchanged. */
function asDestinationError(url: string, error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted || error instanceof SluiceError || (error instanceof Error && error.name === 'AbortError')) return error;
  return new DestinationError(url, 'writing', error);
}

async function writeTable(result: ResultStream, options: WriteResultOptions): Promise<{ rows: number; bytes: number }> {
  const limit = options.limit ?? 100;
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
  const footer = more > 0 ? `(${shown.length} of ${info.totalRows} rows shown; --limit N shows more, --format csv or --out FILE writes all)\n` : `(${info.totalRows} row${info.totalRows === 1 ? '' : 's'})\n`;
  await writeOut(options.stdout, text + footer);
  return { rows, bytes: text.length };
}
