import {
  Binary,
  Bool,
  DateDay,
  Decimal,
  DurationMillisecond,
  Field,
  Float32,
  Float64,
  Int8,
  Int16,
  Int32,
  Int64,
  List,
  Map_,
  Schema,
  Struct,
  TimeMicrosecond,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  Utf8,
  type DataType,
} from 'apache-arrow';
import type { ColumnSpec } from './decode.ts';
import { parseType } from './parse.ts';
import { formatType, type SqlKind, type SqlOf, type SqlType } from './sqlType.ts';

/** Field metadata key holding a column's type string as the service reported it. */
export const TYPE_METADATA_KEY = 'service.type';

/**
 * Schema metadata keys. Parquet keeps them inside its `ARROW:schema` entry.
 * - `service.execution_id`: the execution the rows come from
 * - `service.query_id`: the saved query, when there is one
 * - `service.parameters`: the query parameters, as a JSON object
 * - `service.ended_at`: when the execution ended, RFC 3339
 */
export const SCHEMA_METADATA_KEYS = {
  executionId: 'service.execution_id',
  queryId: 'service.query_id',
  parameters: 'service.parameters',
  endedAt: 'service.ended_at',
} as const;

/** Provenance written into the schema metadata. */
export interface ResultMeta {
  executionId?: string;
  queryId?: string | number;
  parameters?: Record<string, unknown>;
  endedAt?: string | Date;
}

/** How Arrow represents the SQL types that have a choice. */
export interface ArrowTypeOptions {
  /**
   * uint256/int256 as `utf8` decimal text (default: 2^256 has 78 digits, more than
   * Decimal256's 76) or as `decimal256` (76, 0), where a value beyond 76 digits is an error.
   */
  int256As?: 'utf8' | 'decimal256';
}

/**
 * The Arrow schema of a result, from its `column_names` and `column_types` (types.md):
 * the same columns always give the same schema, whatever the values. Every field is
 * nullable and carries `service.type` metadata (nested fields carry their own type's
 * canonical text); `meta` goes into the schema metadata under {@link SCHEMA_METADATA_KEYS}.
 */
export function arrowSchema(columns: readonly ColumnSpec[], meta: ResultMeta = {}, options: ArrowTypeOptions = {}): Schema {
  const fields = columns.map((c) => arrowField(c.name, parseType(c.type), options, c.type));
  return new Schema(fields, schemaMetadata(meta));
}

function schemaMetadata(meta: ResultMeta): Map<string, string> {
  const m = new Map<string, string>();
  if (meta.executionId !== undefined) m.set(SCHEMA_METADATA_KEYS.executionId, meta.executionId);
  if (meta.queryId !== undefined) m.set(SCHEMA_METADATA_KEYS.queryId, String(meta.queryId));
  if (meta.parameters !== undefined) m.set(SCHEMA_METADATA_KEYS.parameters, JSON.stringify(meta.parameters));
  if (meta.endedAt !== undefined) {
    m.set(SCHEMA_METADATA_KEYS.endedAt, meta.endedAt instanceof Date ? meta.endedAt.toISOString() : meta.endedAt);
  }
  return m;
}

/** The Arrow field of one column or nested element; `typeText` defaults to the canonical text. */
export function arrowField(name: string, type: SqlType, options: ArrowTypeOptions = {}, typeText = formatType(type)): Field {
  return new Field(name, arrowType(type, options), true, new Map([[TYPE_METADATA_KEY, typeText]]));
}

/** The Arrow data type of a SQL type (types.md); unknown types are Utf8. */
export function arrowType(type: SqlType, options: ArrowTypeOptions = {}): DataType {
  return (ARROW_TYPES[type.kind] as ArrowTypeOf<SqlKind>)(type, options);
}

type ArrowTypeOf<K extends SqlKind> = (type: SqlOf<K>, options: ArrowTypeOptions) => DataType;

const utf8 = (): DataType => new Utf8();
const wideInteger = (_type: SqlType, options: ArrowTypeOptions): DataType => (options.int256As === 'decimal256' ? new Decimal(0, 76, 256) : new Utf8());

/** The Arrow type of each SQL type. */
const ARROW_TYPES: { [K in SqlKind]: ArrowTypeOf<K> } = {
  boolean: () => new Bool(),
  tinyint: () => new Int8(),
  smallint: () => new Int16(),
  integer: () => new Int32(),
  interval_year_to_month: () => new Int32(),
  bigint: () => new Int64(),
  uint256: wideInteger,
  int256: wideInteger,
  real: () => new Float32(),
  double: () => new Float64(),
  decimal: (type) => new Decimal(type.scale, type.precision, type.precision <= 38 ? 128 : 256),
  varbinary: () => new Binary(),
  date: () => new DateDay(),
  time: () => new TimeMicrosecond(),
  timestamp: timestampType,
  interval_day_to_second: () => new DurationMillisecond(),
  array: (type, options) => new List(arrowField('item', type.element, options)),
  map: mapType,
  row: (type, options) => new Struct(type.fields.map((f): Field => arrowField(f.name, f.type, options))),
  varchar: utf8,
  char: utf8,
  json: utf8,
  uuid: utf8,
  ipaddress: utf8,
  unknown: utf8,
};

/** Milli-, micro- or nanoseconds, the first that holds the precision; UTC when the type has a zone. */
function timestampType(type: SqlOf<'timestamp'>): DataType {
  const zone = type.withTimeZone ? 'UTC' : undefined;
  if (type.precision <= 3) return new TimestampMillisecond(zone);
  if (type.precision <= 6) return new TimestampMicrosecond(zone);
  return new TimestampNanosecond(zone);
}

/** A map is a list of non-null `entries` structs of a non-null key and a value. */
function mapType(type: SqlOf<'map'>, options: ArrowTypeOptions): DataType {
  const key = new Field('key', arrowType(type.key, options), false, new Map([[TYPE_METADATA_KEY, formatType(type.key)]]));
  const value = arrowField('value', type.value, options);
  return new Map_(new Field('entries', new Struct<{ key: DataType; value: DataType }>([key, value]), false));
}
