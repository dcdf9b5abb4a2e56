import type { Data, RecordBatch } from 'apache-arrow';

/** Rows per string built: bounds the text held at once whatever the batch size. */
const ROWS_PER_CHUNK = 8192;

/**
 * The row loop of the text formats (CSV, NDJSON): `row` renders one row from the batch's column
 * data; up to ROWS_PER_CHUNK rows are joined into one string and encoded as UTF-8 at a time.
 */
export async function* textRows(
  batches: AsyncIterable<RecordBatch>,
  row: (columns: readonly Data[], index: number) => string,
  signal?: AbortSignal,
): AsyncIterable<Uint8Array> {
  const encoder = new TextEncoder();
  for await (const batch of batches) {
    signal?.throwIfAborted();
    const columns = batch.data.children as Data[];
    for (let start = 0; start < batch.numRows; start += ROWS_PER_CHUNK) {
      const end = Math.min(batch.numRows, start + ROWS_PER_CHUNK);
      let out = '';
      for (let index = start; index < end; index++) out += row(columns, index);
      yield encoder.encode(out);
    }
  }
}
