import type { RecordBatch } from 'apache-arrow';

/**
 * Drops the first `count` rows of a batch stream (a zero-copy slice of the batch where they
 * end). Outputs of one run share one read, which starts at the lowest row any of them still
 * needs; an output whose kept parts reach further skips up to its own start this way, and sees
 * the batches cut exactly where a read starting at its row would cut them.
 */
export async function* skipRows(batches: AsyncIterable<RecordBatch>, count: number): AsyncGenerator<RecordBatch, void, undefined> {
  let left = count;
  for await (const batch of batches) {
    if (left >= batch.numRows) {
      left -= batch.numRows;
      continue;
    }
    yield left > 0 ? batch.slice(left) : batch;
    left = 0;
  }
}
