// The Arrow encoder's chunks (pages/arrowBatch.ts ipcPieces): every chunk of an encoding has the
// same schema, whose message is encoded once and then written as those bytes; each chunk's stream
// stays byte for byte what Arrow's own writer makes of the batch (ipcStream, the pages built per
// request).
import { RecordBatchWriter, tableFromArrays } from 'apache-arrow';
import { afterEach, expect, test, vi } from 'vitest';
import { IPC_EOS, ipcPieces, ipcStream } from '../../../src/service/engine/pages/arrowBatch.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

test('batches of one schema: its message is encoded once, and each stream is the one Arrow writes', async () => {
  const table = tableFromArrays({
    id: BigInt64Array.from({ length: 100 }, (_, i) => BigInt(i)),
    name: Array.from({ length: 100 }, (_, i) => `event_${i % 7}`),
    value: Float64Array.from({ length: 100 }, (_, i) => i / 3),
  });
  const whole = table.batches[0]!;
  const batches = [whole.slice(0, 40), whole.slice(40, 100), whole.slice(10, 11)];
  // Each with a copy of the table's schema (a RecordBatch copies the one it is given).
  expect(batches.every((b) => b.schema !== table.schema && b.schema.fields.every((f, i) => f !== table.schema.fields[i] && f.type === table.schema.fields[i]!.type))).toBe(true);
  const encode = vi.spyOn(RecordBatchWriter.prototype as unknown as { _writeSchema(s: unknown): unknown }, '_writeSchema');
  for (const batch of batches) {
    const pieces = await ipcPieces(batch, table.schema);
    expect(Buffer.concat([pieces.schema, ...pieces.batch, IPC_EOS])).toEqual(Buffer.from(ipcStream(batch)));
  }
  // ipcStream (Arrow's own writer) encodes it each time; ipcPieces only for the first batch.
  expect(encode).toHaveBeenCalledTimes(batches.length + 1);
});

test('a batch whose schema differs from the layout given gets its own schema message', async () => {
  const table = tableFromArrays({ id: Int32Array.of(1, 2, 3) });
  const other = tableFromArrays({ id: Float64Array.of(1, 2, 3) });
  await ipcPieces(table.batches[0]!, table.schema);
  const batch = other.batches[0]!;
  const pieces = await ipcPieces(batch, table.schema);
  expect(Buffer.concat([pieces.schema, ...pieces.batch, IPC_EOS])).toEqual(Buffer.from(ipcStream(batch)));
});
