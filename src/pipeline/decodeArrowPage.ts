import { RecordBatchStreamWriter } from 'apache-arrow';
import type { ResultPage } from '../protocol/index.ts';
import type { ArrowTypeOptions } from '../types/arrow.ts';
import { compileJsonRowAppender, createBatchBuilder, restartRowOffset, type BatchBuilder, type JsonRowAppender } from '../types/batch.ts';

/** The last page's columns, builder and appender; a builder left unusable by a misfit is replaced. */
let decoder: { key: string; builder: BatchBuilder; append: JsonRowAppender } | undefined;

/**
 * A JSON page's rows as one Arrow IPC stream, as `batches()` builds them on the fetching thread:
 * rows counted from the page's offset. The builder and its compiled appender serve every page of
 * the same columns, warm. Apart from the decode thread's own module, so a thread that only decodes
 * rows never loads Arrow.
 */
export function arrowPage(result: NonNullable<ResultPage['result']>, offset: number, int256As: ArrowTypeOptions['int256As']): Uint8Array {
  const m = result.metadata;
  const key = JSON.stringify([m.column_names, m.column_types, int256As ?? null]);
  if (decoder?.key !== key || !restartRowOffset(decoder.builder, offset)) {
    const columns = m.column_names.map((name, i) => ({ name, type: m.column_types[i] ?? 'varchar' }));
    const builder = createBatchBuilder(columns, { ...(int256As === undefined ? {} : { int256As }), firstRowOffset: offset });
    decoder = { key, builder, append: compileJsonRowAppender(builder, columns) };
  }
  decoder.append(result.rows, 0, result.rows.length, offset);
  return RecordBatchStreamWriter.writeAll([decoder.builder.flush()]).toUint8Array(true);
}
