import { readFile } from 'node:fs/promises';
import { type Field, type RecordBatch, type Schema, tableFromIPC, Type, TimeUnit } from 'apache-arrow';
import { valueText } from '../../src/kit/index.ts';
import { withDuckDb } from '../helpers/duckdb.ts';

/**
 * Reads exported files back with an independent reader and renders every cell as canonical
 * text, so tests compare value by value: DuckDB for Parquet, CSV and NDJSON (typed columns, then
 * VARCHAR: integers as digits, timestamps as epoch units, nested values through to_json), and
 * apache-arrow's tableFromIPC for Arrow IPC (DuckDB's arrow extension needs the network): those
 * cells come back as valueText JSON, to compare with renderJson(source).
 */
export async function readBack(format: string, files: string[], schema: Schema, orderBy?: string): Promise<Record<string, (string | null)[]>> {
  if (format === 'arrow') return readArrow(files, schema);
  return withDuckDb(async (con) => {
    const list = `[${files.map((f) => sqlString(f)).join(', ')}]`;
    const typed = schema.fields.map((f) => `${ident(f.name)}: ${sqlString(duckType(f, format))}`).join(', ');
    const source =
      format === 'parquet'
        ? `read_parquet(${list})`
        : format === 'csv'
          ? `read_csv(${list}, header = true, allow_quoted_nulls = false, quote = '"', escape = '"', delim = ',', columns = {${typed}})`
          : `read_json(${list}, format = 'newline_delimited', columns = {${typed}})`;
    const select = schema.fields.map((f) => `${canonical(f, format)} AS ${ident(f.name)}`).join(', ');
    const reader = await con.runAndReadAll(`SELECT ${select} FROM ${source}${orderBy ? ` ORDER BY ${ident(orderBy)}` : ''}`);
    const out: Record<string, (string | null)[]> = {};
    const columns = reader.getColumnsObjectJS();
    for (const f of schema.fields) out[f.name] = (columns[f.name] ?? []).map((v) => (v === null ? null : String(v)));
    return out;
  });
}

/** DuckDB's own description of a Parquet file's columns. */
export async function describeParquet(file: string): Promise<Record<string, string>> {
  return withDuckDb(async (con) => {
    const reader = await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlString(file)})`);
    return Object.fromEntries(reader.getRowObjectsJS().map((r) => [String(r.column_name), String(r.column_type)]));
  });
}

async function readArrow(files: string[], schema: Schema): Promise<Record<string, (string | null)[]>> {
  const out: Record<string, (string | null)[]> = Object.fromEntries(schema.fields.map((f) => [f.name, []]));
  for (const file of files) {
    const table = tableFromIPC(await readFile(file));
    for (const f of schema.fields) {
      const read = table.schema.fields.find((g) => g.name === f.name);
      if (!read) throw new Error(`column ${f.name} missing from ${file}`);
      if (String(read.type) !== String(f.type)) throw new Error(`column ${f.name}: type ${String(read.type)}, expected ${String(f.type)}`);
    }
    const rendered = renderJson(table.schema, table.batches);
    for (const f of schema.fields) out[f.name]!.push(...rendered[f.name]!);
  }
  return out;
}

/** Every cell of `batches` as valueText JSON: how Arrow read-backs are compared with their source. */
export function renderJson(schema: Schema, batches: RecordBatch[]): Record<string, (string | null)[]> {
  const out: Record<string, (string | null)[]> = Object.fromEntries(schema.fields.map((f) => [f.name, []]));
  for (const f of schema.fields) {
    const text = valueText(f);
    for (const batch of batches) {
      const data = batch.getChild(f.name)!.data[0]!;
      for (let i = 0; i < batch.numRows; i++) out[f.name]!.push(text.json(data, i));
    }
  }
  return out;
}

function duckType(field: Field, format: string): string {
  const t = field.type;
  switch (t.typeId) {
    case Type.Bool:
      return 'BOOLEAN';
    case Type.Int:
      return (t as unknown as { bitWidth: number }).bitWidth === 64 ? 'BIGINT' : 'INTEGER';
    case Type.Float:
      return String(t) === 'Float32' ? 'FLOAT' : 'DOUBLE';
    case Type.Decimal: {
      const { precision, scale } = t as unknown as { precision: number; scale: number };
      return precision <= 38 ? `DECIMAL(${precision},${scale})` : 'VARCHAR';
    }
    case Type.Date:
      return 'DATE';
    case Type.Timestamp: {
      const { unit, timezone } = t as unknown as { unit: TimeUnit; timezone: string | null };
      if (timezone) return 'TIMESTAMPTZ';
      return unit === TimeUnit.NANOSECOND ? 'TIMESTAMP_NS' : 'TIMESTAMP';
    }
    case Type.Duration:
      return 'BIGINT';
    case Type.List:
    case Type.Map:
    case Type.Struct:
      return format === 'csv' ? 'VARCHAR' : nestedType(t);
    default:
      return 'VARCHAR';
  }
}

function nestedType(t: Field['type']): string {
  const children = t.children as Field[];
  switch (t.typeId) {
    case Type.List:
      return `${nestedType(children[0]!.type)}[]`;
    case Type.Map: {
      const [k, v] = children[0]!.type.children as [Field, Field];
      return `MAP(${nestedType(k.type)}, ${nestedType(v.type)})`;
    }
    case Type.Struct:
      return `STRUCT(${children.map((c) => `${ident(c.name)} ${nestedType(c.type)}`).join(', ')})`;
    default:
      return duckTypeOf(t);
  }
}

function duckTypeOf(t: Field['type']): string {
  return duckType({ type: t } as Field, 'parquet');
}

function canonical(field: Field, format: string): string {
  const c = ident(field.name);
  const t = field.type;
  switch (t.typeId) {
    case Type.Timestamp: {
      const unit = (t as unknown as { unit: TimeUnit }).unit;
      const fn = unit === TimeUnit.MILLISECOND ? 'epoch_ms' : unit === TimeUnit.NANOSECOND ? 'epoch_ns' : unit === TimeUnit.SECOND ? 'epoch' : 'epoch_us';
      return `${fn}(${c})::VARCHAR`;
    }
    case Type.Binary:
      return format === 'parquet' ? `'0x' || lower(hex(${c}))` : c;
    case Type.List:
    case Type.Map:
    case Type.Struct:
      return format === 'csv' ? `to_json(CAST(${c}::JSON AS ${nestedType(t)}))::VARCHAR` : `to_json(${c})::VARCHAR`;
    default:
      return `${c}::VARCHAR`;
  }
}

const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const sqlString = (s: string): string => `'${s.replaceAll("'", "''")}'`;
