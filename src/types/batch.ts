import { RecordBatch, Schema, Struct, DataType, makeData } from 'apache-arrow';
import { arrowSchema, arrowType, TYPE_METADATA_KEY, type ArrowTypeOptions, type ResultMeta } from './arrow.ts';
import { columnBuilder, type ColumnBuilder } from './columns.ts';
import { textAppender, wireAppender } from './wireAppenders.ts';
import { compileDecoder, compileRowDecoder, type ColumnSpec, type Row, type ValueDecoder } from './decode.ts';
import { ArrowValueError, Misfit } from './errors.ts';
import { parseType } from './parse.ts';
import { generated } from './generated.ts';
import { formatType, type SqlType } from './sqlType.ts';
import { cachedReader, compileScan, readRows, type TextRead } from './textRows.ts';

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
  const state: BuilderState = { length: 0, appended: options.firstRowOffset ?? 0, broken: undefined };

  const fail = (error: unknown, i: number, value: unknown): unknown => {
    if (!(error instanceof Misfit)) return error;
    return new ArrowValueError({
      column: names[i]!,
      type: fields[i]!.metadata.get(TYPE_METADATA_KEY) ?? String(fields[i]!.type),
      rowOffset: state.appended,
      path: error.path,
      value: error.value === undefined ? value : error.value,
      reason: error.message,
    });
  };

  const api: BatchBuilder = {
    schema,
    get length() {
      return state.length;
    },
    append(row) {
      if (state.broken !== undefined) throw state.broken;
      for (let i = 0; i < n; i++) {
        const value = row[names[i]!];
        try {
          builders[i]!.append(value);
        } catch (error) {
          state.broken = new Error('batch builder unusable after an earlier append failed', { cause: error });
          throw fail(error, i, value);
        }
      }
      state.length++;
      state.appended++;
    },
    flush() {
      if (state.broken !== undefined) throw state.broken;
      const children = builders.map((b) => b.finish());
      const data = makeData({ type: new Struct(fields), length: state.length, nullCount: 0, children });
      const batch = new RecordBatch(schema, data);
      // RecordBatch rebuilds an equal Schema object per batch (Schema.assign); put the one
      // shared Schema back, so consumers can compare schemas by identity.
      (batch as unknown as { schema: Schema }).schema = schema;
      state.length = 0;
      return batch;
    },
  };
  inside.set(api, { builders, sqlTypes, names, state, fail });
  return api;
}

interface BuilderState {
  /** Rows since the last flush. */
  length: number;
  /** Offset in the result of the next row appended. */
  appended: number;
  /** Set once an append failed half-way. */
  broken: Error | undefined;
}

/** What the fused JSON path needs of a builder: its column builders and counters. */
interface BuilderInside {
  builders: ColumnBuilder[];
  sqlTypes: SqlType[];
  names: string[];
  state: BuilderState;
  fail(error: unknown, column: number, value: unknown): unknown;
}

const inside = new WeakMap<BatchBuilder, BuilderInside>();

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

/**
 * The {@link JsonRowAppender} of a builder made by {@link createBatchBuilder} for `columns`.
 *
 * Values go from the parsed JSON row straight into the column builders where the column has a
 * fused path ({@link wireAppender}): no decoded row object, no lookups by name, no value decoded
 * twice. On any throw the row is decoded again the ordinary way, so the error is the one the
 * two-step path gives: the row's ValueDecodeError first, else the ArrowValueError of the first
 * column whose append failed. The builder is unusable after a throw (as after a failed `append`).
 */
export function compileJsonRowAppender(builder: BatchBuilder, columns: readonly ColumnSpec[]): JsonRowAppender {
  const decode = compileRowDecoder(columns, { timestamps: 'string' });
  const twoStep: JsonRowAppender = (rows, from, to, offset) => {
    for (let i = from; i < to; i++) builder.append(decode(rows[i], offset + i));
  };
  const own = inside.get(builder);
  if (own === undefined || !sameColumns(own, columns)) return twoStep;
  const decoders = columns.map((c) => compileDecoder(parseType(c.type), { timestamps: 'string' }));
  const fused = fusedRow(own, decoders);
  if (fused === undefined) return twoStep;
  const { state, names } = own;
  const at = { column: 0 };
  return (rows, from, to, offset) => {
    for (let i = from; i < to; i++) {
      const raw = rows[i];
      if (state.broken !== undefined || raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
        builder.append(decode(raw, offset + i));
        continue;
      }
      try {
        fused(raw, at);
      } catch (error) {
        state.broken = new Error('batch builder unusable after an earlier append failed', { cause: error });
        // Throws the row's ValueDecodeError, if it has one, as the two-step path would.
        const row = decode(raw, offset + i);
        throw own.fail(error, at.column, row[names[at.column]!]);
      }
      state.length++;
      state.appended++;
    }
  };
}

/**
 * Let a builder with no rows pending count its next row as result offset `offset` (for
 * `ArrowValueError.rowOffset`), so one builder can serve pages that are not contiguous (a decode
 * thread's). Returns false when the builder is not one of {@link createBatchBuilder}'s, has rows
 * pending, or is unusable after a failed append.
 */
export function restartRowOffset(builder: BatchBuilder, offset: number): boolean {
  const own = inside.get(builder);
  if (own === undefined || own.state.length !== 0 || own.state.broken !== undefined) return false;
  own.state.appended = offset;
  return true;
}

/** The builder's fields are `columns`, in order, with unique names (a row object holds each once). */
function sameColumns(own: BuilderInside, columns: readonly ColumnSpec[]): boolean {
  const { names, sqlTypes } = own;
  if (columns.length !== names.length || new Set(names).size !== names.length || names.includes('__proto__')) return false;
  return columns.every((c, i) => c.name === names[i] && formatType(parseType(c.type)) === formatType(sqlTypes[i]!));
}

/**
 * One generated function per column list appends a raw row to every column builder, each column
 * with a call site of its own: `v = r["id"]; if (v == null) c0.append(null); else if (!w0(v))
 * c0.append(d0(v));`. On a throw, `at.column` says which column threw. Undefined when code cannot
 * be generated here.
 */
function fusedRow(own: BuilderInside, decoders: readonly ValueDecoder[]): ((raw: object, at: { column: number }) => void) | undefined {
  const { builders, sqlTypes, names } = own;
  const wires = builders.map((b, i) => wireAppender(sqlTypes[i]!, b));
  const lines = names.map((name, i) => `j = ${i}; v = r[${JSON.stringify(name)}]; ${appendSource(i, 'v', wires[i] !== undefined)}`);
  const params = builders.flatMap((_, i) => [`c${i}`, `d${i}`, `w${i}`]);
  const args = builders.flatMap((b, i) => [b, decoders[i], wires[i]]);
  const body = `return function appendRow(r, at) {\nlet j = 0, v;\ntry {\n${lines.join('\n')}\n} catch (e) {\nat.column = j;\nthrow e;\n}\n};`;
  const make = generated(params, body);
  return make === undefined ? undefined : (make(...args) as (raw: object, at: { column: number }) => void);
}

/**
 * The generated code appending wire value `value` to column `i`'s builder `c{i}`: through its wire
 * appender `w{i}` when it has one (falling back to its decoder `d{i}`), else decoded then appended.
 */
function appendSource(i: number, value: string, wired: boolean): string {
  if (!wired) return `c${i}.append(d${i}(${value}));`;
  return `if (${value} == null) c${i}.append(null); else if (!w${i}(${value})) c${i}.append(d${i}(${value}));`;
}

/**
 * Reads rows `from` to `to - 1` of a JSON page's text into one RecordBatch on `schema`; the first of
 * them is result offset `rowOffset` (for errors). Undefined when the page is not of the shape the
 * text scanner reads or a value did not fit: the caller then appends the parsed page the general
 * way, which raises the error.
 */
export type TextBatchReader = (text: string, from: number, to: number, rowOffset: number) => TextRead<RecordBatch> | undefined;

/**
 * The {@link TextBatchReader} of a schema made by `arrowSchema` for `columns`: values go from the
 * page's text into the column builders as {@link compileJsonRowAppender} puts parsed values there,
 * with no parsed page and no row objects. Undefined when the columns have no text scanner (nested
 * types, duplicate names, `__proto__`) or code cannot be generated.
 */
export function compileTextBatchReader(schema: Schema, columns: readonly ColumnSpec[]): TextBatchReader | undefined {
  const types = schema.fields.map((f) => `${f.name}:${String(f.type)}:${f.metadata.get(TYPE_METADATA_KEY) ?? ''}`);
  const shared = cachedReader('batch', columns, types, () => textBatchReader(schema, columns));
  if (shared === undefined) return undefined;
  return (text, from, to, rowOffset) => {
    const read = shared(text, from, to, rowOffset);
    if (read === undefined || read.value.schema === schema) return read;
    // The reader is shared by every stream of these columns: the batch takes this stream's schema
    // (the same fields; its own metadata), the one object every batch of the stream carries.
    const batch = new RecordBatch(schema, read.value.data);
    (batch as unknown as { schema: Schema }).schema = schema;
    return { ...read, value: batch };
  };
}

function textBatchReader(schema: Schema, columns: readonly ColumnSpec[]): TextBatchReader | undefined {
  const decoders = columns.map((c) => compileDecoder(parseType(c.type), { timestamps: 'string' }));
  const builder = createBatchBuilder(schema);
  const own = inside.get(builder);
  if (own === undefined || !sameColumns(own, columns)) return undefined;
  const { builders, sqlTypes, state } = own;
  const wires = builders.map((b, i) => wireAppender(sqlTypes[i]!, b));
  const direct = builders.map((b, i) => textAppender(sqlTypes[i]!, b));
  const lines = builders.map((_, i) => {
    const append = appendSource(i, `v${i}`, wires[i] !== undefined);
    return direct[i] === undefined ? append : `if (v${i} !== TAKEN) { ${append} }`;
  });
  const bound = new Map<string, unknown>([['st', state], ...builders.flatMap((b, i): [string, unknown][] => [[`c${i}`, b], [`d${i}`, decoders[i]], [`w${i}`, wires[i]]])]);
  const scanner = compileScan(columns, sqlTypes, { emit: `${lines.join('\n')}\nst.length++;\nst.appended++;`, bound, copyLong: false, direct });
  if (scanner === undefined) return undefined;
  return (text, from, to, rowOffset) => {
    state.appended = rowOffset;
    const read = readRows(scanner, text, from, to, undefined);
    if (read === undefined) {
      // Rows of the page may be in the column builders, maybe half a row: drop them all.
      for (const b of builders) b.finish();
      state.length = 0;
      state.broken = undefined;
      return undefined;
    }
    return { ...read, value: builder.flush() };
  };
}
