import { RecordBatchStreamWriter } from 'apache-arrow';
import type { ResultPage } from '../protocol/index.ts';
import type { ArrowTypeOptions } from '../types/arrow.ts';
import { parseResultPageText } from '../client/result-page.ts';
import { arrowSchema } from '../types/arrow.ts';
import { compileJsonRowAppender, compileTextBatchReader, createBatchBuilder, restartRowOffset, type BatchBuilder, type JsonRowAppender, type TextBatchReader } from '../types/batch.ts';
import type { ColumnSpec } from '../types/decode.ts';
import type { PageRange } from './decodePool.ts';

/** The last page's columns, builder and appender; a builder left unusable by a misfit is replaced. */
let decoder: { key: string; builder: BatchBuilder; append: JsonRowAppender } | undefined;

/**
 * A JSON page's rows `[from, to)` as one Arrow IPC stream, as `batches()` builds them on the
 * fetching thread: rows counted from the page's offset, no row outside them decoded. The builder
 * and its compiled appender serve every page of the same columns, warm. Apart from the decode
 * thread's own module, so a thread that only decodes rows never loads Arrow.
 */
export function arrowPage(result: NonNullable<ResultPage['result']>, offset: number, int256As: ArrowTypeOptions['int256As'], from = 0, to = result.rows.length): Uint8Array {
  const m = result.metadata;
  const key = JSON.stringify([m.column_names, m.column_types, int256As ?? null]);
  if (decoder?.key !== key || !restartRowOffset(decoder.builder, offset + from)) {
    const columns = m.column_names.map((name, i) => ({ name, type: m.column_types[i] ?? 'varchar' }));
    const builder = createBatchBuilder(columns, { ...(int256As === undefined ? {} : { int256As }), firstRowOffset: offset + from });
    decoder = { key, builder, append: compileJsonRowAppender(builder, columns) };
  }
  decoder.append(result.rows, from, to, offset);
  return RecordBatchStreamWriter.writeAll([decoder.builder.flush()]).toUint8Array(true);
}

/** The text reader of the last columns asked for: a stream sends the same columns with every page. */
let textReader: { key: string; read: TextBatchReader | undefined } | undefined;

/**
 * A JSON page's rows (those `range` asks for, all without one) read straight from its text into
 * one Arrow IPC stream, with the page's envelope (rows empty). Undefined when the page is not of
 * the shape the text scanner reads or a value does not fit: the caller then takes
 * {@link arrowPage}, which says why.
 */
export function arrowPageFromText(text: string, columns: readonly ColumnSpec[], offset: number, int256As: ArrowTypeOptions['int256As'], range?: PageRange): { page: ResultPage; bytes: Uint8Array } | undefined {
  const key = JSON.stringify([columns, int256As ?? null]);
  if (textReader?.key !== key) textReader = { key, read: compileTextBatchReader(arrowSchema(columns, undefined, int256As === undefined ? {} : { int256As }), columns) };
  const read = textReader.read;
  if (read === undefined) return undefined;
  const skip = range?.skip ?? 0;
  const got = parseResultPageText({ text }, {}, (t) => read(t, skip, range?.take ?? Number.MAX_SAFE_INTEGER, offset + skip));
  if (got === undefined) return undefined;
  return { page: got.page, bytes: RecordBatchStreamWriter.writeAll([got.value]).toUint8Array(true) };
}
