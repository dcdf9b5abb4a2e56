import type { Schema } from 'apache-arrow';
import { IcebergSchemaConflictError } from './errors.ts';
import type { TableMetadata } from './metadata.ts';
import { type IcebergSchema, type IcebergStructField, type IcebergType, mapSchema, type Mapped, maxFieldId, typeText } from './types.ts';

export interface PreparedSchema {
  /** The table's schema after this write: the current one, plus the result's new columns. */
  readonly table: IcebergSchema;
  /** True when `table` is a new schema version. */
  readonly changed: boolean;
  readonly lastColumnId: number;
  /** The Arrow schema of the Parquet files (field ids in `PARQUET:field_id`). */
  readonly fileSchema: Schema;
  readonly columns: readonly Mapped[];
  /** Result column -> its Iceberg field, for partition specs. */
  readonly fields: readonly IcebergStructField[];
  /** Columns whose type this write promotes (int to long, ...), with the table's type before it. */
  readonly promoted: ReadonlyMap<string, IcebergType>;
}

/**
 * The result's columns against the table's current schema: a column the table has keeps its
 * field id (nested ids too) and must have the same type, or one the spec lets it be promoted to
 * (`promotes`: the new schema gives the column the wider type, and readers read the older files'
 * values as it); a new column is added with new ids (additive evolution). Columns the table has but
 * the result lacks stay, and read as NULL in the new files. Another changed type fails, naming the
 * column and both types.
 */
export function prepareSchema(result: Schema, base: TableMetadata | undefined, url: string, file: string): PreparedSchema {
  const current = base?.schemas.find((s) => s['schema-id'] === base['current-schema-id']);
  const known = new Map<string, number>();
  if (current) for (const f of current.fields) collectIds(f.name, f.id, f.type, known);
  let last = Math.max(base?.['last-column-id'] ?? 0, current ? maxFieldId(current.fields) : 0);
  const mapped = mapSchema(result, { idFor: (path) => known.get(path) ?? ++last });

  const byName = new Map((current?.fields ?? []).map((f) => [f.name, f]));
  const added: IcebergStructField[] = [];
  const promoted = new Map<string, IcebergType>();
  for (const field of mapped.fields) {
    const existing = byName.get(field.name);
    if (!existing) {
      added.push(field);
      continue;
    }
    if (sameType(existing.type, field.type)) continue;
    if (!promotes(existing.type, field.type)) throw new IcebergSchemaConflictError(url, file, field.name, typeText(existing.type), typeText(field.type));
    promoted.set(field.name, existing.type);
  }
  const changed = current === undefined || added.length > 0 || promoted.size > 0;
  const schemaId = current === undefined ? 0 : changed ? Math.max(...base!.schemas.map((s) => s['schema-id'])) + 1 : current['schema-id'];
  const kept = (current?.fields ?? []).map((f) => (promoted.has(f.name) ? { ...f, type: mapped.fields.find((m) => m.name === f.name)!.type } : f));
  const table: IcebergSchema = changed ? { type: 'struct', 'schema-id': schemaId, fields: [...kept, ...added] } : current;
  return { table, changed, lastColumnId: last, fileSchema: mapped.arrow, columns: mapped.columns, fields: mapped.fields, promoted };
}

/**
 * Whether the Iceberg spec lets a column of type `from` become `to` (schema evolution, type
 * promotion): int to long, float to double, decimal(P, S) to decimal(P', S) with P' > P.
 */
export function promotes(from: IcebergType, to: IcebergType): boolean {
  if (typeof from !== 'string' || typeof to !== 'string') return false;
  if ((from === 'int' && to === 'long') || (from === 'float' && to === 'double')) return true;
  const a = decimalOf(from);
  const b = decimalOf(to);
  return a !== undefined && b !== undefined && a.scale === b.scale && b.precision > a.precision;
}

function decimalOf(type: string): { precision: number; scale: number } | undefined {
  const match = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(type);
  return match ? { precision: Number(match[1]), scale: Number(match[2]) } : undefined;
}

function collectIds(path: string, id: number, type: IcebergType, into: Map<string, number>): void {
  into.set(path, id);
  if (typeof type === 'string') return;
  if (type.type === 'list') collectIds(`${path}.element`, type['element-id'], type.element, into);
  else if (type.type === 'map') {
    collectIds(`${path}.key`, type['key-id'], type.key, into);
    collectIds(`${path}.value`, type['value-id'], type.value, into);
  } else for (const f of type.fields) collectIds(`${path}.${f.name}`, f.id, f.type, into);
}

/** Same type and same field ids all the way down (decimal text is compared without spaces). */
function sameType(a: IcebergType, b: IcebergType): boolean {
  if (typeof a === 'string' || typeof b === 'string') return typeof a === typeof b && String(a).replace(/\s/g, '') === String(b).replace(/\s/g, '');
  if (a.type === 'list' && b.type === 'list') return a['element-id'] === b['element-id'] && sameType(a.element, b.element);
  if (a.type === 'map' && b.type === 'map') return a['key-id'] === b['key-id'] && a['value-id'] === b['value-id'] && sameType(a.key, b.key) && sameType(a.value, b.value);
  if (a.type === 'struct' && b.type === 'struct') {
    return a.fields.length === b.fields.length && a.fields.every((f, i) => f.name === b.fields[i]!.name && f.id === b.fields[i]!.id && sameType(f.type, b.fields[i]!.type));
  }
  return false;
}
