import type { RecordBatch, Schema } from 'apache-arrow';
import { z } from 'zod';
import { defineFormat, textRows, valueText } from '../../../src/kit/index.ts';

export const ndjsonConfig = z.strictObject({});
export type NdjsonConfig = z.output<typeof ndjsonConfig>;

export const ndjson = defineFormat({
  type: 'ndjson',
  description:
    'Newline-delimited JSON, one object per row. bigint as exact JSON numbers; decimals, 256-bit integers, ' +
    'timestamps and bytes as exact strings; NaN and Infinity as strings; nested values as JSON.',
  config: ndjsonConfig,
  addsColumns: true,
  create: () => ({
    extension: 'ndjson',
    contentType: 'application/x-ndjson',
    encode: (schema, batches, signal) => encodeNdjson(schema, batches, signal),
  }),
});

async function* encodeNdjson(schema: Schema, batches: AsyncIterable<RecordBatch>, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  const columns = schema.fields.map((f) => valueText(f));
  const keys = schema.fields.map((f, i) => `${i === 0 ? '{' : ','}${JSON.stringify(f.name)}:`);
  yield* textRows(
    batches,
    (data, row) => {
      let out = columns.length === 0 ? '{' : '';
      for (let c = 0; c < columns.length; c++) out += keys[c]! + columns[c]!.json(data[c]!, row);
      return out + '}\n';
    },
    signal,
  );
}
