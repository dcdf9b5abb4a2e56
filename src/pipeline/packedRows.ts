import { compileDecoder, compileRowDecoder, type ColumnSpec, type DecodeOptions, type Row, type ValueDecoder } from '../types/decode.ts';
import { generated } from '../types/generated.ts';
import { parseType } from '../types/parse.ts';

/**
 * Decoded rows as they cross from a decode thread to the thread that yields them: column by column,
 * numbers, Dates, booleans and 64-bit integers in typed arrays (transferred, not copied), anything
 * else (strings, bytes, nested values) in one plain array per column, which the structured clone
 * copies faster than it would copy row objects (measured: 31k rows of 8 columns clone as columns in
 * about a quarter of the time as objects). The receiving side rebuilds rows equal to the decoder's:
 * the same keys in the same order, the same values (Dates, bigints, `-0` and NaN included).
 */
export type PackedColumn =
  | { readonly kind: 'null' }
  | { readonly kind: 'number' | 'date'; readonly values: Float64Array; readonly nulls: Uint8Array | undefined }
  | { readonly kind: 'bigint'; readonly values: BigInt64Array; readonly nulls: Uint8Array | undefined }
  | { readonly kind: 'boolean'; readonly values: Uint8Array }
  | { readonly kind: 'any'; readonly values: unknown[] };

export interface PackedRows {
  /** Row count. */
  readonly length: number;
  readonly columns: readonly PackedColumn[];
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Decodes rows `[from, to)` of a JSON page straight into columns (no row objects): the values
 * `compileRowDecoder(columns, options)` would give, row by row in the same order, so the first bad
 * value is the one it would meet first. A bad value stops the decode: `error` is what the row
 * decoder throws for that row, and the rows before it are packed.
 */
export function decodePacked(raw: readonly unknown[], from: number, to: number, columns: readonly ColumnSpec[], options: DecodeOptions, firstRowOffset: number): { packed: PackedRows; transfer: ArrayBuffer[]; error?: unknown } {
  const n = Math.max(0, to - from);
  const values = columns.map(() => new Array<unknown>(n));
  const decoders = columns.map((c) => compileDecoder(parseType(c.type), options));
  let done = n;
  let error: unknown;
  try {
    columnDecoder(columns.map((c) => c.name))(raw, from, to, decoders, values);
  } catch {
    // Find the row, and the error exactly as the row decoder reports it (column, offset, reason).
    const decode = compileRowDecoder(columns, options);
    for (let i = from; i < to; i++) {
      try {
        decode(raw[i], firstRowOffset + i);
      } catch (e) {
        done = i - from;
        error = e;
        break;
      }
    }
    if (error === undefined) throw new Error('decoding the page failed, but no row fails to decode on its own');
    for (const v of values) v.length = done;
  }
  const { packed, transfer } = packColumns(values, done);
  return error === undefined ? { packed, transfer } : { packed, transfer, error };
}

/** Decoded values of `length` rows, one array per column, packed for the trip to another thread. */
export function packColumns(values: readonly unknown[][], length: number): { packed: PackedRows; transfer: ArrayBuffer[] } {
  const transfer: ArrayBuffer[] = [];
  return { packed: { length, columns: values.map((v) => packColumn(v, transfer)) }, transfer };
}

type ColumnDecode = (raw: readonly unknown[], from: number, to: number, decoders: readonly ValueDecoder[], out: unknown[][]) => void;

/**
 * A loop over rows that reads each column by a literal property name (one shape at each access, so
 * V8 keeps them fast) and stores the decoded value in that column's array; generated once per
 * column list. A `__proto__` column, or a runtime that cannot generate code, takes the generic
 * loop; any throw is re-examined by the caller.
 */
function columnDecoder(names: readonly string[]): ColumnDecode {
  if (!names.includes('__proto__')) {
    const lines = names.map((name, c) => `o${c}[k] = d${c}(r[${JSON.stringify(name)}]);`).join('\n');
    const params = names.map((_, c) => `d${c}`).join(', ');
    const outs = names.map((_, c) => `o${c}`).join(', ');
    // Column names are data: each is a JSON string literal in the generated code, never code.
    const loop = generated(
      ['raw', 'from', 'to', 'decoders', 'out'],
      `const [${params}] = decoders; const [${outs}] = out;
for (let i = from, k = 0; i < to; i++, k++) {
  const r = raw[i];
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new TypeError('not a row object');
${lines}
}`,
    );
    if (loop !== undefined) return loop as ColumnDecode;
  }
  return (raw, from, to, decoders, out) => {
    for (let i = from; i < to; i++) {
      const r = raw[i];
      if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new TypeError('not a row object');
      for (let c = 0; c < names.length; c++) out[c]![i - from] = decoders[c]!((r as Record<string, unknown>)[names[c]!]);
    }
  };
}

function packColumn(values: readonly unknown[], transfer: ArrayBuffer[]): PackedColumn {
  const n = values.length;
  let kind: 'null' | 'number' | 'date' | 'bigint' | 'boolean' | 'any' = 'null';
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null) {
      nulls++;
      continue;
    }
    const k = typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX ? 'bigint' : v instanceof Date && v.constructor === Date ? 'date' : 'any';
    if (kind === 'null') kind = k;
    else if (kind !== k) {
      kind = 'any';
      break;
    }
  }
  if (kind === 'null') return nulls === n ? { kind: 'null' } : { kind: 'any', values: values as unknown[] };
  if (kind === 'any') return { kind: 'any', values: values as unknown[] };
  if (kind === 'boolean') {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      out[i] = v === null ? 2 : v ? 1 : 0;
    }
    transfer.push(out.buffer);
    return { kind, values: out };
  }
  const mask = nulls === 0 ? undefined : new Uint8Array(n);
  if (mask !== undefined) transfer.push(mask.buffer);
  if (kind === 'bigint') {
    const out = new BigInt64Array(n);
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v === null) mask![i] = 1;
      else out[i] = v as bigint;
    }
    transfer.push(out.buffer);
    return { kind, values: out, nulls: mask };
  }
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null) mask![i] = 1;
    else out[i] = kind === 'date' ? (v as Date).getTime() : (v as number);
  }
  transfer.push(out.buffer);
  return { kind, values: out, nulls: mask };
}

/** Rebuilds row `i` of packed rows. */
export type RowAt = (i: number) => Row;

/**
 * The rows of `packed`, one object per call, keyed by `names` in order (the keys of the rows that
 * were packed). Each column is turned into values once; a row is then one object literal.
 */
export function unpackRows(packed: PackedRows, names: readonly string[]): RowAt {
  const columns = packed.columns.map((c) => columnValues(c, packed.length));
  return rowMaker(names)(columns);
}

/** Values a row takes from a column: the typed array itself when no value needs converting. */
function columnValues(column: PackedColumn, n: number): ArrayLike<unknown> {
  switch (column.kind) {
    case 'null':
      return new Array<null>(n).fill(null);
    case 'any':
      return column.values;
    case 'boolean': {
      const out = new Array<boolean | null>(n);
      const v = column.values;
      for (let i = 0; i < n; i++) out[i] = v[i] === 2 ? null : v[i] === 1;
      return out;
    }
    case 'date': {
      const out = new Array<Date | null>(n);
      const v = column.values;
      const nulls = column.nulls;
      for (let i = 0; i < n; i++) out[i] = nulls !== undefined && nulls[i] === 1 ? null : new Date(v[i]!);
      return out;
    }
    case 'number':
    case 'bigint': {
      const nulls = column.nulls;
      if (nulls === undefined) return column.values;
      const v = column.values;
      const out = new Array<unknown>(n);
      for (let i = 0; i < n; i++) out[i] = nulls[i] === 1 ? null : v[i];
      return out;
    }
  }
}

type MakeRows = (columns: readonly ArrayLike<unknown>[]) => RowAt;

/**
 * A function that builds rows keyed by `names` as one object literal (V8 then gives every row one
 * shape), generated once per column list. A `__proto__` key, which a literal would take as the
 * prototype, is defined as an own property, as the decoder defines it; so is every key where code
 * cannot be generated.
 */
function rowMaker(names: readonly string[]): MakeRows {
  if (!names.includes('__proto__')) {
    const fields = names.map((name, c) => `${JSON.stringify(name)}: c${c}[i]`).join(', ');
    const params = names.map((_, c) => `c${c}`).join(', ');
    // Column names are data: each is a JSON string literal in the generated code, never code.
    const make = generated(['columns'], `const [${params}] = columns; return (i) => ({ ${fields} });`);
    if (make !== undefined) return make as MakeRows;
  }
  return (columns) => (i) => {
    const out: Row = {};
    for (let c = 0; c < names.length; c++) Object.defineProperty(out, names[c]!, { value: columns[c]![i], enumerable: true, writable: true, configurable: true });
    return out;
  };
}
