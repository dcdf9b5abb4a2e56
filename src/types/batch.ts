import { RecordBatch, Schema, Struct, DataType, makeData } from 'apache-arrow';
import { arrowSchema, arrowType, TYPE_METADATA_KEY, type ArrowTypeOptions, type ResultMeta } from './arrow.ts';
import { columnBuilder, type ColumnBuilder } from './columns.ts';
import { compileRowDecoder, type ColumnSpec, type Row } from './decode.ts';
import { ArrowValueError, Misfit } from './errors.ts';
import { parseType } from './parse.ts';
import type { SqlType } from './sql-type.ts';

/** Options of {@link createBatchBuilder}. */
export interface BatchBuilderOptions extends ArrowTypeOptions {
  /** Schema metadata, when the builder makes the schema from columns. */
  meta?: ResultMeta;
  /** Offset in the whole result of the first row appended (default 0), for `ArrowValueError.rowOffset`. */
  firstRowOffset?: number;
}

/**
 * Builds Arrow RecordBatches from decoded rows, all against one fixed Schema.
 *
 * Values are the JS values of types.md as `compileRowDecoder` gives them. Timestamp columns
 * also take the exact wire text (decode with `timestamps: 'string'` to keep microseconds of
 * `timestamp(6) with time zone`, which a Date cannot hold); date columns take text or Dates.
 */
export interface BatchBuilder {
  /** The one Schema of every batch this builder makes (`batch.schema === builder.schema`). */
  readonly schema: Schema;
  /** Rows appended since the last flush. */
  readonly length: number;
  /**
   * Append one row (an object keyed by column name; a missing key is NULL). Throws
   * {@link ArrowValueError} when a value does not fit its column; the builder is then
   * unusable, since the row is half-appended.
   */
  append(row: Row): void;
  /** The rows appended since the last flush as one RecordBatch (possibly empty). */
  flush(): RecordBatch;
}

/**
 * A batch builder for a result's columns (the schema is made by {@link arrowSchema}) or for
 * a Schema that `arrowSchema` made (each field's `service.type` metadata says how to read
 * its values). Buffers are typed arrays filled in place and handed to Arrow with `makeData`:
 * no type guessing, no per-value Arrow builders.
 */
export function createBatchBuilder(input: Schema | readonly ColumnSpec[], options: BatchBuilderOptions = {}): BatchBuilder {
  const schema = input instanceof Schema ? input : arrowSchema(input, options.meta, options);
  const fields = schema.fields;
  const sqlTypes = fields.map((f) => sqlTypeOf(f.name, f.metadata.get(TYPE_METADATA_KEY), f.type));
  const builders: ColumnBuilder[] = fields.map((f, i) => columnBuilder(sqlTypes[i]!, f));
  const names = fields.map((f) => f.name);
  const n = names.length;
  let length = 0;
  let appended = options.firstRowOffset ?? 0;
  let broken: Error | undefined;

  const fail = (error: unknown, i: number, value: unknown): unknown => {
    if (!(error instanceof Misfit)) return error;
    return new ArrowValueError({
      column: names[i]!,
      type: fields[i]!.metadata.get(TYPE_METADATA_KEY) ?? String(fields[i]!.type),
      rowOffset: appended,
      path: error.path,
      value: error.value === undefined ? value : error.value,
      reason: error.message,
    });
  };

  return {
    schema,
    get length() {
      return length;
    },
    append(row) {
      if (broken !== undefined) throw broken;
      for (let i = 0; i < n; i++) {
        const value = row[names[i]!];
        try {
          builders[i]!.append(value);
        } catch (error) {
          broken = new Error('batch builder unusable after an earlier append failed', { cause: error });
          throw fail(error, i, value);
        }
      }
      length++;
      appended++;
    },
    flush() {
      if (broken !== undefined) throw broken;
      const children = builders.map((b) => b.finish());
      const data = makeData({ type: new Struct(fields), length, nullCount: 0, children });
      const batch = new RecordBatch(schema, data);
      // RecordBatch rebuilds an equal Schema object per batch (Schema.assign); put the one
      // shared Schema back, so consumers can compare schemas by identity.
      (batch as unknown as { schema: Schema }).schema = schema;
      length = 0;
      return batch;
    },
  };
}

function sqlTypeOf(name: string, text: string | undefined, actual: DataType): SqlType {
  if (text === undefined) {
    throw new TypeError(`field "${name}" has no "${TYPE_METADATA_KEY}" metadata: build the schema with arrowSchema()`);
  }
  const sql = parseType(text);
  const expected = arrowType(sql);
  // uint256/int256 may be Decimal256 anywhere in the type (the int256As option).
  if (String(expected) !== String(actual) && String(arrowType(sql, { int256As: 'decimal256' })) !== String(actual)) {
    throw new TypeError(`field "${name}" is ${actual} but "${text}" maps to ${expected}: build the schema with arrowSchema()`);
  }
  return sql;
}

/**
 * Appends rows of a JSON page, `rows[from]` to `rows[to - 1]`, to `builder`: the row at index `i`
 * is decoded as `compileRowDecoder(columns, { timestamps: 'string' })` decodes it at row offset
 * `offset + i`, then appended. Throws what that decoder or `builder.append` throws.
 */
export type JsonRowAppender = (rows: readonly unknown[], from: number, to: number, offset: number) => void;

/** The {@link JsonRowAppender} of a builder made by {@link createBatchBuilder} for `columns`. */
export function compileJsonRowAppender(builder: BatchBuilder, columns: readonly ColumnSpec[]): JsonRowAppender {
  const decode = compileRowDecoder(columns, { timestamps: 'string' });
  return (rows, from, to, offset) => {
    for (let i = from; i < to; i++) builder.append(decode(rows[i], offset + i));
  };
}
