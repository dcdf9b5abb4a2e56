import { RecordBatchStreamWriter } from 'apache-arrow';
import type { ResultPage } from '../protocol/index.ts';
import type { ArrowTypeOptions } from '../types/arrow.ts';
import { createBatchBuilder } from '../types/batch.ts';
import { compileRowDecoder } from '../types/decode.ts';

/**
 * A JSON page's rows as one Arrow IPC stream, as `batches()` builds them on the fetching thread:
 * exact timestamp text, rows counted from the page's offset. Apart from the decode thread's own
 * module, so a thread that only decodes rows never loads Arrow.
 */
export function arrowPage(result: NonNullable<ResultPage['result']>, offset: number, int256As: ArrowTypeOptions['int256As']): Uint8Array {
  const m = result.metadata;
  const columns = m.column_names.map((name, i) => ({ name, type: m.column_types[i] ?? 'varchar' }));
  const decode = compileRowDecoder(columns, { timestamps: 'string' });
  const builder = createBatchBuilder(columns, { ...(int256As === undefined ? {} : { int256As }), firstRowOffset: offset });
  const rows = result.rows;
  for (let i = 0; i < rows.length; i++) builder.append(decode(rows[i], offset + i));
  return RecordBatchStreamWriter.writeAll([builder.flush()]).toUint8Array(true);
}
