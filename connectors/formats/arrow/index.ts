import { RecordBatch, RecordBatchFileWriter, RecordBatchStreamWriter, type Schema } from 'apache-arrow';
import { AsyncByteQueue } from 'apache-arrow/io/stream';
import { z } from 'zod';
import { coalesce, defineFormat } from '../../../src/kit/index.ts';

export const arrowConfig = z.strictObject({
  container: z
    .enum(['stream', 'file'])
    .default('stream')
    .describe('IPC stream format (.arrows, readable as it arrives) or IPC file format (.arrow, with a footer for random access).'),
});
export type ArrowConfig = z.output<typeof arrowConfig>;

export const arrow = defineFormat({
  type: 'arrow',
  description: 'Apache Arrow IPC, stream or file container, with the schema and its metadata as given.',
  config: arrowConfig,
  create: (config: ArrowConfig) => ({
    extension: config.container === 'file' ? 'arrow' : 'arrows',
    contentType: config.container === 'file' ? 'application/vnd.apache.arrow.file' : 'application/vnd.apache.arrow.stream',
    encode: (schema, batches, signal) => coalesce(encodeArrow(schema, batches, config, signal)),
  }),
});

/**
 * The writer's own queue is unbounded; this sink takes what each write produced synchronously,
 * so the encoder hands bytes on batch by batch and never runs ahead of its consumer.
 */
class TakeAll extends AsyncByteQueue {
  taken: Uint8Array[] = [];
  override write(value: ArrayBufferView | ArrayBuffer): void {
    const bytes = ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : new Uint8Array(value);
    if (bytes.byteLength > 0) this.taken.push(bytes);
  }
  take(): Uint8Array[] {
    const out = this.taken;
    this.taken = [];
    return out;
  }
}

async function* encodeArrow(
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  config: ArrowConfig,
  signal?: AbortSignal,
): AsyncIterable<Uint8Array> {
  const sink = new TakeAll();
  const writer = config.container === 'file' ? new RecordBatchFileWriter() : new RecordBatchStreamWriter();
  writer.reset(sink as never, schema);
  yield* sink.take();
  for await (const batch of batches) {
    signal?.throwIfAborted();
    // Same schema object for every batch, or the writer starts a new stream on a metadata difference.
    writer.write(new RecordBatch(schema, batch.data));
    yield* sink.take();
  }
  writer.finish();
  yield* sink.take();
}
