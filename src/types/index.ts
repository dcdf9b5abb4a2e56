/**
 * Column types of a result: parsing `column_types`, decoding JSON wire values into typed JS
 * values, lossless page parsing, and the Arrow schema and batches (spec: types.md).
 */
export type { SqlType, SqlKind, RowField } from './sqlType.ts';
export { formatType } from './sqlType.ts';
export { parseType } from './parse.ts';
export {
  compileRowDecoder,
  compileDecoder,
  type ColumnSpec,
  type DecodeOptions,
  type Row,
  type RowDecoder,
  type TimestampMode,
  type ValueDecoder,
} from './decode.ts';
export { parseJsonLossless, needsExactParse, stringifyLossless } from './json.ts';
export {
  arrowSchema,
  arrowType,
  arrowField,
  TYPE_METADATA_KEY,
  SCHEMA_METADATA_KEYS,
  type ArrowTypeOptions,
  type ResultMeta,
} from './arrow.ts';
export { createBatchBuilder, type BatchBuilder, type BatchBuilderOptions } from './batch.ts';
export { ValueDecodeError, ArrowValueError } from './errors.ts';
