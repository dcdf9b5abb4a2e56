import { type Data, DataType, type Field, makeBuilder, makeData, makeVector, type RecordBatch, RecordBatch as Batch, Schema, Struct } from 'apache-arrow';
import { arrowField, TYPE_METADATA_KEY } from '../../types/arrow.ts';
import { parseType } from '../../types/parse.ts';
import { formatType } from '../../types/sqlType.ts';

/**
 * Rows reshaped to the columns an output keeps (schema drift): columns taken from the result,
 * missing ones written as NULL, and a narrower type widened to the output's (an integer column
 * written as the bigint the output holds). What each output gets is decided in `drift.ts`.
 */

/** A column of the reshaped rows, with the service type it is written as. */
export interface TargetColumn {
  readonly name: string;
  readonly type: string;
  /** Its values are the result's, widened to `type` (see `widens` in export/appendCheck.ts). */
  readonly widen?: boolean;
}

export interface Reshape {
  readonly schema: Schema;
  /** Per column: the result column it takes (undefined: NULL), and whether its values are widened. */
  readonly sources: readonly { readonly from: number | undefined; readonly widen: boolean }[];
}

/** The reshape of rows of `schema` to `columns`. */
export function reshapeTo(schema: Schema, columns: readonly TargetColumn[]): Reshape {
  const at = new Map(schema.fields.map((f, i) => [f.name, i]));
  const fields: Field[] = [];
  const sources = columns.map((c) => {
    const from = at.get(c.name);
    const widen = from !== undefined && c.widen === true;
    if (from === undefined || widen) fields.push(arrowField(c.name, parseType(c.type), {}, c.type));
    else {
      // The output's spelling of the type, so the append check compares like with like.
      const f = schema.fields[from]!;
      fields.push(f.clone({ metadata: new Map([...f.metadata, [TYPE_METADATA_KEY, c.type]]) }));
    }
    return { from, widen };
  });
  return { schema: new Schema(fields, schema.metadata), sources };
}

export async function* reshaped(batches: AsyncIterable<RecordBatch>, reshape: Reshape): AsyncGenerator<RecordBatch> {
  const { schema, sources } = reshape;
  for await (const batch of batches) {
    const length = batch.numRows;
    const children = sources.map(({ from, widen }, k) => {
      const field = schema.fields[k]!;
      if (from === undefined) return column(field, length, () => null);
      const data = batch.data.children[from]!;
      return widen ? widened(data, field) : data;
    });
    yield new Batch(schema, makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }));
  }
}

/** `data`'s values as `field`'s type: a decimal with more digits keeps its storage; numbers are rebuilt. */
function widened(data: Data, field: Field): Data {
  if (DataType.isDecimal(field.type)) return data.clone(field.type);
  const vector = makeVector(data);
  const big = DataType.isInt(field.type) && field.type.bitWidth === 64;
  return column(field, data.length, (i) => {
    const value = vector.get(i) as number | bigint | null;
    return value === null ? null : big ? BigInt(value) : Number(value);
  });
}

function column(field: Field, length: number, valueAt: (i: number) => unknown): Data {
  const builder = makeBuilder({ type: field.type, nullValues: [null] });
  for (let i = 0; i < length; i++) builder.append(valueAt(i));
  return builder.finish().flush() as Data;
}

/** The service type an Iceberg primitive is written from (the types `widens` knows; others as they are). */
export function serviceTypeOf(iceberg: string): string {
  const named: Record<string, string> = { int: 'integer', long: 'bigint', float: 'real', double: 'double' };
  if (named[iceberg] !== undefined) return named[iceberg];
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(iceberg);
  return decimal ? formatType({ kind: 'decimal', precision: Number(decimal[1]), scale: Number(decimal[2]) }) : iceberg;
}
