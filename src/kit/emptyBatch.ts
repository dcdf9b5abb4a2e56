import { type Data, makeData, RecordBatch, type Schema, Struct, vectorFromArray } from 'apache-arrow';

/** A zero-row batch of `schema` (`new RecordBatch(schema)` alone fails on nested fields). */
export function emptyBatch(schema: Schema): RecordBatch {
  const children = schema.fields.map((f) => vectorFromArray([], f.type).data[0] as Data);
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: 0, nullCount: 0, children }));
}
