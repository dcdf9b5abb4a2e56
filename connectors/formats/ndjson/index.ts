import type { Data, RecordBatch, Schema } from 'apache-arrow';
import { z } from 'zod';
import { defineFormat, valueText } from '../../../src/kit/index.ts';

export const ndjsonConfig = z.strictObject({});
export type NdjsonConfig = z.output<typeof ndjsonConfig>;

export const ndjson = defineFormat({
  type: 'ndjson',
  description:
    'Newline-delimited JSON, one object per row. bigint as exact JSON numbers; decimals, 256-bit integers, ' +
    'timestamps and bytes as exact strings; NaN and Infinity as strings; nested values as JSON.',
  config: ndjsonConfig,
  create: () => ({
    extension: 'ndjson',
    contentType: 'application/x-ndjson',
    encode: (schema, batches, signal) => encodeNdjson(schema, batches, signal),
  }),
});

const ROWS_PER_CHUNK = 8192;

async function* encodeNdjson(schema: Schema, batches: AsyncIterable<RecordBatch>, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  const encoder = new TextEncoder();
  const columns = schema.fields.map((f) => valueText(f));
  const keys = schema.fields.map((f, i) => `${i === 0 ? '{' : ','}${JSON.stringify(f.name)}:`);
  for await (const batch of batches) {
    signal?.throwIfAborted();
    const data = batch.data.children as Data[];
    for (let start = 0; start < batch.numRows; start += ROWS_PER_CHUNK) {
      const end = Math.min(batch.numRows, start + ROWS_PER_CHUNK);
      let out = '';
      for (let row = start; row < end; row++) {
        if (columns.length === 0) out += '{';
        for (let c = 0; c < columns.length; c++) out += keys[c]! + columns[c]!.json(data[c]!, row);
        out += '}\n';
      }
      yield encoder.encode(out);
    }
  }
}
