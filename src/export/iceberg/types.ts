import {
  Binary,
  Bool,
  type DataType,
  DateDay,
  Decimal,
  Field,
  Float32,
  Float64,
  Int32,
  Int64,
  List,
  Map_,
  Schema,
  Struct,
  TimeMicrosecond,
  TimestampMicrosecond,
  Type,
  TimeUnit,
  Utf8,
} from 'apache-arrow';

/** Iceberg's decimal precision limit (spec: `decimal(P,S)`, P <= 38). */
export const MAX_DECIMAL_PRECISION = 38;

/** Arrow field metadata key from which Parquet writers take the field id (arrow-rs, pyarrow). */
export const PARQUET_FIELD_ID_KEY = 'PARQUET:field_id';

export type IcebergPrimitive = string;

export interface IcebergStructField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
}

export interface IcebergStruct {
  type: 'struct';
  fields: IcebergStructField[];
}

export interface IcebergList {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}

export interface IcebergMap {
  type: 'map';
  'key-id': number;
  key: IcebergType;
  'value-id': number;
  value: IcebergType;
  'value-required': boolean;
}

export type IcebergType = IcebergPrimitive | IcebergStruct | IcebergList | IcebergMap;

export interface IcebergSchema extends IcebergStruct {
  'schema-id': number;
}

/**
 * How a value is changed on its way into the table's Parquet files. Every change is exact and
 * documented (docs/library.md, Iceberg tables): Iceberg has no 8/16-bit integers, stores timestamps in
 * microseconds, and has no type for nanosecond timestamps (format v2), durations, or decimals
 * beyond 38 digits.
 */
export type Conversion =
  | 'none'
  | 'widen_int32' // int8/int16 -> int
  | 'ms_to_us' // timestamp(ms) -> timestamp(us)
  | 'retype_int64' // timestamp(ns) -> long ns since epoch, duration(ms) -> long ms
  | 'decimal_text'; // decimal(p > 38) -> exact text

/** An Iceberg type with the Arrow type the Parquet files hold for it and how values get there. */
export interface Mapped {
  iceberg: IcebergType;
  arrow: DataType;
  conversion: Conversion;
  /** Set when some value inside (this type or a nested one) must be converted. */
  converts: boolean;
  children: { field: Field; mapped: Mapped }[];
}

/** Assigns field ids: reuses the id a path had in the table, else takes the next free one. */
export interface IdSource {
  idFor(path: string): number;
}

/**
 * The Iceberg schema (and the Arrow schema of the table's Parquet files, with `PARQUET:field_id`
 * on every field) for a result's Arrow schema as `src/types` builds it from `column_types`.
 * Every field is optional: a result column can be NULL anywhere.
 */
export function mapSchema(schema: Schema, ids: IdSource): { fields: IcebergStructField[]; arrow: Schema; columns: Mapped[] } {
  // Top-level ids first, as Iceberg's own writers number them.
  const topIds = schema.fields.map((f) => ids.idFor(f.name));
  const columns = schema.fields.map((f) => mapType(f.type, f.name, ids));
  const fields = schema.fields.map((f, i) => ({ id: topIds[i]!, name: f.name, required: false, type: columns[i]!.iceberg }));
  const arrowFields = schema.fields.map((f, i) => withId(f, columns[i]!.arrow, fields[i]!.id, true));
  return { fields, arrow: new Schema(arrowFields, schema.metadata), columns };
}

function withId(field: Field, type: DataType, id: number, nullable: boolean): Field {
  const metadata = new Map(field.metadata);
  metadata.set(PARQUET_FIELD_ID_KEY, String(id));
  return new Field(field.name, type, nullable, metadata);
}

function mapType(type: DataType, path: string, ids: IdSource): Mapped {
  const mapped = type.typeId === Type.List || type.typeId === Type.Map || type.typeId === Type.Struct ? mapNested(type, path, ids) : mapLeaf(type);
  if (mapped === undefined) throw new Error(`no Iceberg type for Arrow type ${String(type)} (column path ${path})`);
  return mapped;
}

const leaf = (iceberg: string, arrow: DataType, conversion: Conversion = 'none'): Mapped => ({
  iceberg,
  arrow,
  conversion,
  converts: conversion !== 'none',
  children: [],
});

/** A primitive column's Iceberg type, and the Arrow type its data files hold (undefined: none fits). */
function mapLeaf(type: DataType): Mapped | undefined {
  switch (type.typeId) {
    case Type.Bool:
      return leaf('boolean', new Bool());
    case Type.Int: {
      const { bitWidth, isSigned } = type as unknown as { bitWidth: number; isSigned: boolean };
      if (bitWidth <= 16) return leaf('int', new Int32(), 'widen_int32');
      if (bitWidth === 32 && isSigned) return leaf('int', new Int32());
      if (bitWidth === 64 && isSigned) return leaf('long', new Int64());
      return undefined;
    }
    case Type.Float: {
      const { precision } = type as unknown as { precision: number };
      if (precision === 1) return leaf('float', new Float32());
      if (precision === 2) return leaf('double', new Float64());
      return undefined;
    }
    case Type.Decimal: {
      const { precision, scale } = type as unknown as { precision: number; scale: number };
      if (precision <= MAX_DECIMAL_PRECISION) return leaf(`decimal(${precision}, ${scale})`, new Decimal(scale, precision, 128));
      return leaf('string', new Utf8(), 'decimal_text');
    }
    case Type.Utf8:
      return leaf('string', new Utf8());
    case Type.Binary:
      return leaf('binary', new Binary());
  }
  return mapTime(type);
}

/** Dates, times, timestamps and durations. */
function mapTime(type: DataType): Mapped | undefined {
  switch (type.typeId) {
    case Type.Date:
      return (type as unknown as { unit: number }).unit === 0 ? leaf('date', new DateDay()) : undefined;
    case Type.Time:
      return (type as unknown as { unit: number }).unit === TimeUnit.MICROSECOND ? leaf('time', new TimeMicrosecond()) : undefined;
    case Type.Timestamp: {
      const { unit, timezone } = type as unknown as { unit: number; timezone: string | null };
      const iceberg = timezone ? 'timestamptz' : 'timestamp';
      const arrow = new TimestampMicrosecond(timezone ?? undefined);
      if (unit === TimeUnit.MICROSECOND) return leaf(iceberg, arrow);
      if (unit === TimeUnit.MILLISECOND) return leaf(iceberg, arrow, 'ms_to_us');
      if (unit === TimeUnit.NANOSECOND) return leaf('long', new Int64(), 'retype_int64');
      return undefined;
    }
    case Type.Duration:
      return (type as unknown as { unit: number }).unit === TimeUnit.MILLISECOND ? leaf('long', new Int64(), 'retype_int64') : undefined;
  }
  return undefined;
}

/** Lists, maps and structs: their children mapped, each with its field id. */
function mapNested(type: DataType, path: string, ids: IdSource): Mapped | undefined {
  switch (type.typeId) {
    case Type.List: {
      const child = (type as List).children[0]!;
      const elementId = ids.idFor(`${path}.element`);
      const element = mapType(child.type, `${path}.element`, ids);
      const field = withId(child, element.arrow, elementId, true);
      return {
        iceberg: { type: 'list', 'element-id': elementId, element: element.iceberg, 'element-required': false },
        arrow: new List(field),
        conversion: 'none',
        converts: element.converts,
        children: [{ field, mapped: element }],
      };
    }
    case Type.Map: {
      const entries = (type as Map_).children[0]!;
      const [keyField, valueField] = (entries.type as Struct).children as [Field, Field];
      const keyId = ids.idFor(`${path}.key`);
      const valueId = ids.idFor(`${path}.value`);
      const key = mapType(keyField.type, `${path}.key`, ids);
      const value = mapType(valueField.type, `${path}.value`, ids);
      const keyOut = withId(keyField, key.arrow, keyId, false);
      const valueOut = withId(valueField, value.arrow, valueId, true);
      const struct = new Struct([keyOut, valueOut]);
      const entriesOut = new Field(entries.name, struct, false, entries.metadata);
      const structMapped: Mapped = {
        iceberg: 'struct',
        arrow: struct,
        conversion: 'none',
        converts: key.converts || value.converts,
        children: [
          { field: keyOut, mapped: key },
          { field: valueOut, mapped: value },
        ],
      };
      return {
        iceberg: { type: 'map', 'key-id': keyId, key: key.iceberg, 'value-id': valueId, value: value.iceberg, 'value-required': false },
        arrow: new Map_(entriesOut, (type as Map_).keysSorted),
        conversion: 'none',
        converts: structMapped.converts,
        children: [{ field: entriesOut, mapped: structMapped }],
      };
    }
    case Type.Struct: {
      const children = (type as Struct).children.map((child) => {
        const id = ids.idFor(`${path}.${child.name}`);
        const mapped = mapType(child.type, `${path}.${child.name}`, ids);
        return { id, field: withId(child, mapped.arrow, id, true), mapped };
      });
      return {
        iceberg: { type: 'struct', fields: children.map((c) => ({ id: c.id, name: c.field.name, required: false, type: c.mapped.iceberg })) },
        arrow: new Struct(children.map((c) => c.field)),
        conversion: 'none',
        converts: children.some((c) => c.mapped.converts),
        children: children.map(({ field, mapped }) => ({ field, mapped })),
      };
    }
  }
  return undefined;
}

/** Short text of an Iceberg type for messages: `long`, `list<string>`, `struct<a: int>`. */
export function typeText(type: IcebergType): string {
  if (typeof type === 'string') return type;
  switch (type.type) {
    case 'list':
      return `list<${typeText(type.element)}>`;
    case 'map':
      return `map<${typeText(type.key)}, ${typeText(type.value)}>`;
    case 'struct':
      return `struct<${type.fields.map((f) => `${f.name}: ${typeText(f.type)}`).join(', ')}>`;
  }
}

/** Every field id inside a type (nested ones), for `last-column-id`. */
export function maxFieldId(fields: readonly IcebergStructField[]): number {
  let max = 0;
  const visit = (type: IcebergType): void => {
    if (typeof type === 'string') return;
    if (type.type === 'list') {
      max = Math.max(max, type['element-id']);
      visit(type.element);
    } else if (type.type === 'map') {
      max = Math.max(max, type['key-id'], type['value-id']);
      visit(type.key);
      visit(type.value);
    } else {
      for (const f of type.fields) {
        max = Math.max(max, f.id);
        visit(f.type);
      }
    }
  };
  visit({ type: 'struct', fields: [...fields] });
  return max;
}
