import { type Data, type Field, makeData, RecordBatch, type Schema, Struct, Utf8, vectorFromArray } from 'apache-arrow';
import { valueText } from '../../kit/index.ts';
import type { Mapped } from './types.ts';

/**
 * Re-types one result batch for the table's Parquet files: the fields carry their Iceberg ids,
 * and the few values Iceberg stores differently (see `Conversion`) are converted exactly.
 * Buffers are shared wherever the values stay as they are.
 */
export function toTableBatch(batch: RecordBatch, schema: Schema, columns: readonly Mapped[]): RecordBatch {
  const children = columns.map((mapped, i) => convertData(batch.data.children[i] as Data, mapped, batch.schema.fields[i]!));
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: batch.numRows, nullCount: 0, children }));
}

function convertData(data: Data, mapped: Mapped, field: Field): Data {
  switch (mapped.conversion) {
    case 'widen_int32':
      return data.clone(mapped.arrow, data.offset, data.length, data.nullCount, [undefined, Int32Array.from(data.values as Int8Array | Int16Array), data.nullBitmap] as never);
    case 'ms_to_us': {
      const from = data.values as BigInt64Array;
      const out = new BigInt64Array(from.length);
      for (let i = 0; i < from.length; i++) out[i] = from[i]! * 1000n;
      return data.clone(mapped.arrow, data.offset, data.length, data.nullCount, [undefined, out, data.nullBitmap] as never);
    }
    case 'retype_int64':
      return data.clone(mapped.arrow, data.offset, data.length, data.nullCount, [undefined, data.values, data.nullBitmap] as never);
    case 'decimal_text': {
      const text = valueText(field);
      const values = Array.from({ length: data.length }, (_, i) => text.text(data, i));
      return vectorFromArray(values, new Utf8()).data[0]!;
    }
    case 'none':
      break;
  }
  if (mapped.children.length === 0) return data.type === mapped.arrow ? data : data.clone(mapped.arrow);
  const sourceFields = (data.type.children ?? []) as Field[];
  const children = mapped.children.map((c, i) =>
    mapped.converts ? convertData(data.children[i]!, c.mapped, sourceFields[i]!) : retype(data.children[i]!, c.mapped),
  );
  return data.clone(mapped.arrow, data.offset, data.length, data.nullCount, data.buffers, children);
}

/** Same buffers, the table's types (field ids) all the way down. */
function retype(data: Data, mapped: Mapped): Data {
  if (mapped.children.length === 0) return data.clone(mapped.arrow);
  const children = mapped.children.map((c, i) => retype(data.children[i]!, c.mapped));
  return data.clone(mapped.arrow, data.offset, data.length, data.nullCount, data.buffers, children);
}
