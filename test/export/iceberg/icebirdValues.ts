import { expect } from 'vitest';
import type { ServiceClient } from '../../../src/client/index.ts';
import { stream } from '../../../src/pipeline/stream.ts';
import { parseType } from '../../../src/types/index.ts';

/** A query's rows as the service gives them (typed JS values) and its column types. */
export interface ServiceRows {
  readonly rows: Record<string, unknown>[];
  readonly types: Record<string, string>;
}

const read = new Map<string, Promise<ServiceRows>>();

/** The service's rows of `sql` and their column types, read once per query in a test file (one service per file; its queries are deterministic). */
export function serviceRows(client: ServiceClient, sql: string): Promise<ServiceRows> {
  let got = read.get(sql);
  if (got === undefined) {
    got = (async () => {
      const rows: Record<string, unknown>[] = [];
      const s = stream(client, { sql });
      for await (const row of s) rows.push(row);
      const info = await s.info();
      return { rows, types: Object.fromEntries(info.columns.map((c) => [c.name, c.type])) };
    })();
    read.set(sql, got);
  }
  return got;
}

/**
 * The service's typed row values (the pipeline's JS rows) as icebird decodes the same Iceberg
 * column, per the type mapping of Iceberg tables (docs/library.md). Where icebird's own decoding is lossy
 * (decimals as float64, timestamps as Date in milliseconds, binary as UTF-8 text), the expectation
 * is reduced the same way; the exact values are checked separately with DuckDB.
 */
export function asIcebird(value: unknown, columnType: string): unknown {
  return convert(value, parseType(columnType));
}

type SqlType = ReturnType<typeof parseType>;

function convert(value: unknown, type: SqlType): unknown {
  if (value === null || value === undefined) return null;
  switch (type.kind) {
    case 'uint256':
    case 'int256':
      return String(value);
    case 'decimal':
      return Number(value as string);
    case 'varbinary':
      return new TextDecoder().decode(value as Uint8Array);
    case 'date':
      return value;
    case 'time': {
      const [h, m, s] = (value as string).split(':') as [string, string, string];
      const [whole, frac = ''] = s.split('.');
      return BigInt(((Number(h) * 60 + Number(m)) * 60 + Number(whole)) * 1_000_000) + BigInt(frac.padEnd(6, '0').slice(0, 6));
    }
    case 'timestamp': {
      if (value instanceof Date) return value.getTime();
      const text = value as string;
      const [seconds, frac = ''] = text.split('.');
      const ms = Date.parse(`${seconds!.replace(' ', 'T')}Z`);
      if (type.precision > 6) return BigInt(ms) * 1_000_000n + BigInt(frac.padEnd(9, '0'));
      return ms + Math.floor(Number(frac.padEnd(3, '0').slice(0, 3)));
    }
    case 'interval_day_to_second':
      return BigInt(value as number);
    case 'array':
      return (value as unknown[]).map((v) => convert(v, type.element));
    case 'map':
      return Object.fromEntries([...(value as Map<unknown, unknown>)].map(([k, v]) => [String(k), convert(v, type.value)]));
    case 'row':
      return Object.fromEntries(type.fields.map((f) => [f.name, convert((value as Record<string, unknown>)[f.name], f.type)]));
    default:
      return value;
  }
}

/** icebird's value normalized for comparison: undefined (a null nested value) is null, a Date its milliseconds or day. */
export function fromIcebird(value: unknown, columnType: string): unknown {
  const type = parseType(columnType);
  const norm = (v: unknown, t: SqlType): unknown => {
    if (v === null || v === undefined) return null;
    if (v instanceof Date) return t.kind === 'date' ? v.toISOString().slice(0, 10) : v.getTime();
    if (t.kind === 'array') return (v as unknown[]).map((x) => norm(x, t.element));
    if (t.kind === 'map') return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, norm(x, t.value)]));
    if (t.kind === 'row') return Object.fromEntries(t.fields.map((f) => [f.name, norm((v as Record<string, unknown>)[f.name], f.type)]));
    return v;
  };
  return norm(value, type);
}

/**
 * icebird's rows of a table against the service's rows of each run that wrote it, value by value.
 * Rows of several runs come back in file order: both sides are compared sorted by their full content.
 * A column a run did not have is NULL in its rows (an additive schema change).
 */
export function expectIcebirdRows(got: readonly Record<string, unknown>[], runs: readonly { rows: readonly Record<string, unknown>[]; types: Record<string, string> }[]): void {
  const types: Record<string, string> = {};
  for (const run of runs) Object.assign(types, run.types);
  const want = runs.flatMap((run) => run.rows.map((row) => Object.fromEntries(Object.keys(types).map((c) => [c, c in row ? asIcebird(row[c], types[c]!) : null]))));
  const norm = got.map((row) => Object.fromEntries(Object.keys(types).map((c) => [c, fromIcebird(row[c], types[c]!)])));
  const key = (row: Record<string, unknown>) => `${String(row.id).padStart(4, '0')} ${JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`;
  want.sort((a, b) => key(a).localeCompare(key(b)));
  norm.sort((a, b) => key(a).localeCompare(key(b)));
  expect(norm.length).toBe(want.length);
  for (const [i, row] of want.entries()) {
    for (const column of Object.keys(types)) expect.soft(norm[i]![column], `row ${i} column ${column}`).toEqual(row[column]);
  }
}
