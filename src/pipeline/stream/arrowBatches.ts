/** Arrow batches of pages: cut from a page's text batch, built row by row, or read from an Arrow page on the stream's schema. */
import { RecordBatch, RecordBatchReader, RecordBatchStreamWriter, type Schema } from 'apache-arrow';
import { InvalidResponseError, type ErrorContext } from '../../client/errors.ts';
import type { BatchBuilder } from '../../types/batch.ts';
import type { RawPage } from './rawPage.ts';

/**
 * A page's batch read from its text, from the read's row `skip` on. The batch starts where this
 * read starts in the page, unless the page before ran past its limit (a service may send more rows
 * than asked): then rows already delivered are cut.
 */
export function fromSkip({ from, batch }: { readonly from: number; readonly batch: RecordBatch }, skip: number): RecordBatch {
  if (skip === from) return batch;
  const kept = new RecordBatch(batch.schema, compact(batch.slice(skip - from)).data);
  (kept as unknown as { schema: Schema }).schema = batch.schema;
  return kept;
}

/**
 * Rows `[skip, take)` of a page through the builder (`append(from, to)` appends those rows): with
 * `batchSize`, a batch each time the builder fills (the rest stays for the next page), in runs that
 * end where a batch fills, so batches are cut where a row-by-row loop cuts them; without, one batch.
 */
export function* builtBatches(builder: BatchBuilder, append: (from: number, to: number) => void, skip: number, take: number, batchSize: number | undefined): Generator<RecordBatch, void, undefined> {
  for (let i = skip; i < take; ) {
    const end = batchSize === undefined ? take : Math.min(take, i + batchSize - builder.length);
    append(i, end);
    i = end;
    if (builder.length === batchSize) yield builder.flush();
  }
  if (batchSize === undefined && builder.length > 0) yield builder.flush();
}

/**
 * The batches of a page that came as Arrow, on the stream's one
 * schema, without the first `skip` rows. The stream's schema is the truth: a page whose columns have
 * other Arrow types, or whose row count differs from its envelope's, is refused.
 */
export function* pageBatches(page: RawPage, schema: Schema, skip: number, take: number, ctx: ErrorContext): Generator<RecordBatch, void, undefined> {
  let rows = 0;
  let toSkip = skip;
  /** Rows still to deliver (the page may run past the read's `endOffset`). */
  let left = take - skip;
  const reader = RecordBatchReader.from(page.ipc!);
  const fields = schema.fields;
  let checked = false;
  // The page's batches are views of its bytes: all are read, and the page's row count checked,
  // before the first is delivered, so a page refused delivers no row (as a JSON page does).
  const kept: RecordBatch[] = [];
  for (const batch of reader) {
    if (!checked) {
      const got = batch.schema.fields;
      const same = got.length === fields.length && got.every((f, i) => f.name === fields[i]!.name && String(f.type) === String(fields[i]!.type));
      if (!same) {
        throw new InvalidResponseError(
          `Arrow page at offset ${page.nextOffset === undefined ? 'end' : page.nextOffset - page.rowCount} has columns (${got.map((f) => `${f.name} ${f.type}`).join(', ')}), ` +
            `but the result's columns map to (${fields.map((f) => `${f.name} ${f.type}`).join(', ')})`,
          ctx,
        );
      }
      checked = true;
    }
    rows += batch.numRows;
    if (toSkip >= batch.numRows || left <= 0) {
      toSkip -= Math.min(toSkip, batch.numRows);
      continue;
    }
    // A slice keeps its parent's buffers with an offset, which not every Arrow consumer honours:
    // written out and read back, it is a batch of its own (rare: a read starting or ending mid-page).
    const count = Math.min(batch.numRows - toSkip, left);
    const part = toSkip > 0 || count < batch.numRows ? compact(batch.slice(toSkip, toSkip + count)) : batch;
    toSkip = 0;
    left -= count;
    const out = new RecordBatch(schema, part.data);
    // The constructor rebuilds an equal Schema; put the shared one back (as the batch builder does).
    (out as unknown as { schema: Schema }).schema = schema;
    kept.push(out);
  }
  if (rows !== page.rowCount) throw new InvalidResponseError(`Arrow page holds ${rows} rows but its row count says ${page.rowCount}`, ctx);
  yield* kept;
}

function compact(batch: RecordBatch): RecordBatch {
  const [copy] = RecordBatchReader.from(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true)).readAll();
  return copy!;
}
