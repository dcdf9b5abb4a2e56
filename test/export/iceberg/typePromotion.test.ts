// The Iceberg spec's type promotions, as prepareSchema applies them: which pairs are legal, and the
// schema a promotion writes (same field ids, a new schema id). The full path (a job run promoting a
// column of a table by path and in a REST catalog, read back by icebird and iceberg-js) is in
// test/jobs/drift.test.ts.
import { Schema } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { IcebergSchemaConflictError } from '../../../src/export/iceberg/errors.ts';
import type { TableMetadata } from '../../../src/export/iceberg/metadata.ts';
import { prepareSchema, promotes } from '../../../src/export/iceberg/tableSchema.ts';
import { arrowField } from '../../../src/types/arrow.ts';
import { parseType } from '../../../src/types/parse.ts';

describe('promotes', () => {
  it('int to long, float to double, a decimal to more digits at the same scale; nothing else', () => {
    expect(promotes('int', 'long')).toBe(true);
    expect(promotes('float', 'double')).toBe(true);
    expect(promotes('decimal(12, 4)', 'decimal(18, 4)')).toBe(true);
    expect(promotes('decimal(12,4)', 'decimal(38, 4)')).toBe(true);
    expect(promotes('long', 'int')).toBe(false);
    expect(promotes('double', 'float')).toBe(false);
    expect(promotes('decimal(18, 4)', 'decimal(12, 4)')).toBe(false);
    expect(promotes('decimal(12, 2)', 'decimal(18, 4)')).toBe(false);
    expect(promotes('int', 'double')).toBe(false);
    expect(promotes('int', 'string')).toBe(false);
    expect(promotes({ type: 'list', 'element-id': 2, element: 'int', 'element-required': false }, { type: 'list', 'element-id': 2, element: 'long', 'element-required': false })).toBe(false);
  });
});

describe('prepareSchema with a wider result type', () => {
  const base = {
    'format-version': 2,
    'current-schema-id': 3,
    'last-column-id': 2,
    schemas: [{ type: 'struct', 'schema-id': 3, fields: [{ id: 1, name: 'id', required: false, type: 'int' }, { id: 2, name: 'tag', required: false, type: 'string' }] }],
  } as unknown as TableMetadata;
  const result = (columns: [string, string][]) => new Schema(columns.map(([name, type]) => arrowField(name, parseType(type), {}, type)));

  it('writes a new schema with the promoted type and the same field id', () => {
    const prepared = prepareSchema(result([['id', 'bigint'], ['tag', 'varchar']]), base, 'file:///t', 'metadata/v1.metadata.json');
    expect(prepared.changed).toBe(true);
    expect(prepared.table).toEqual({ type: 'struct', 'schema-id': 4, fields: [{ id: 1, name: 'id', required: false, type: 'long' }, { id: 2, name: 'tag', required: false, type: 'string' }] });
    expect([...prepared.promoted]).toEqual([['id', 'int']]);
    expect(prepared.fileSchema.fields[0]!.metadata.get('PARQUET:field_id')).toBe('1');
  });

  it('still refuses a type the spec does not promote to', () => {
    expect(() => prepareSchema(result([['id', 'double'], ['tag', 'varchar']]), base, 'file:///t', 'metadata/v1.metadata.json')).toThrow(IcebergSchemaConflictError);
  });
});
