import {
  Binary,
  Bool,
  type Data,
  DateDay,
  Decimal,
  Duration,
  Field,
  Float32,
  Float64,
  Int32,
  Int64,
  List,
  makeData,
  Map_,
  RecordBatch,
  Schema,
  Struct,
  TimeUnit,
  Timestamp,
  Utf8,
  vectorFromArray,
  type DataType,
} from 'apache-arrow';
import { builtins } from '../../connectors/index.ts';
import { type OutputConfig, resolveOutput, type ResolvedOutput } from '../../src/export/index.ts';
import type { Registry } from '../../src/kit/index.ts';

/** Builds fixed-width column data from raw values, nulls as a validity bitmap. */
function fixed<T extends DataType>(type: T, raw: (number | bigint | null)[], Ctor: { new (n: number): Int32Array | BigInt64Array | Float32Array | Float64Array }): Data<T> {
  const values = new Ctor(raw.length);
  const bitmap = new Uint8Array(Math.ceil(raw.length / 8));
  let nullCount = 0;
  raw.forEach((v, i) => {
    if (v === null) nullCount++;
    else {
      (values as unknown as (number | bigint)[])[i] = v;
      bitmap[i >> 3]! |= 1 << (i & 7);
    }
  });
  return makeData({ type, length: raw.length, nullCount, nullBitmap: bitmap, data: values } as never) as Data<T>;
}

function decimal(precision: number, scale: number, bits: 128 | 256, texts: (string | null)[]): Data<Decimal> {
  const words = bits / 32;
  const values = new Uint32Array(texts.length * words);
  const bitmap = new Uint8Array(Math.ceil(texts.length / 8));
  let nullCount = 0;
  texts.forEach((t, i) => {
    if (t === null) return void nullCount++;
    bitmap[i >> 3]! |= 1 << (i & 7);
    const [int, frac = ''] = t.replace('-', '').split('.');
    let v = BigInt(int! + frac.padEnd(scale, '0'));
    if (t.startsWith('-')) v = -v;
    let u = BigInt.asUintN(bits, v);
    for (let k = 0; k < words; k++) {
      values[i * words + k] = Number(u & 0xffff_ffffn);
      u >>= 32n;
    }
  });
  return makeData({ type: new Decimal(scale, precision, bits), length: texts.length, nullCount, nullBitmap: bitmap, data: values });
}

const U256_MAX = (2n ** 256n - 1n).toString();

/**
 * One column per type the service produces (types.md), five rows, with the values that break
 * naive writers: int64 beyond 2^53, negative decimals, 78-digit integers, pre-1970 timestamps,
 * NaN, empty strings vs NULL, CSV metacharacters, nested nulls.
 */
export function everyTypeBatch(): RecordBatch {
  const meta = (t: string) => new Map([['service.type', t]]);
  const fields = [
    new Field('b', new Bool(), true, meta('boolean')),
    new Field('i32', new Int32(), true, meta('integer')),
    new Field('i64', new Int64(), true, meta('bigint')),
    new Field('f64', new Float64(), true, meta('double')),
    new Field('f32', new Float32(), true, meta('real')),
    new Field('dec', new Decimal(4, 20, 128), true, meta('decimal(20,4)')),
    new Field('u256', new Utf8(), true, meta('uint256')),
    new Field('s', new Utf8(), true, meta('varchar')),
    new Field('bin', new Binary(), true, meta('varbinary')),
    new Field('d', new DateDay(), true, meta('date')),
    new Field('ts', new Timestamp(TimeUnit.MICROSECOND), true, meta('timestamp(6)')),
    new Field('tstz', new Timestamp(TimeUnit.MILLISECOND, 'UTC'), true, meta('timestamp(3) with time zone')),
    new Field('dur', new Duration(TimeUnit.MILLISECOND), true, meta('interval day to second')),
    new Field('lst', new List(new Field('item', new Int64(), true)), true, meta('array(bigint)')),
    new Field('mp', new Map_(new Field('entries', new Struct([new Field('key', new Utf8(), false), new Field('value', new Float64(), true)] as never), false)), true, meta('map(varchar,double)')),
    new Field('st', new Struct([new Field('a', new Int64(), true), new Field('b', new List(new Field('item', new Utf8(), true)), true)]), true, meta('row(a bigint,b array(varchar))')),
  ];
  const schema = new Schema(fields, new Map([['sluice.execution_id', 'exec-fixture']]));
  const columns: Data[] = [
    vectorFromArray([true, false, null, true, false], new Bool()).data[0]!,
    fixed(new Int32(), [1, -2147483648, null, 2147483647, 0], Int32Array),
    fixed(new Int64(), [9007199254740993n, -(2n ** 63n), null, 2n ** 63n - 1n, 0n], BigInt64Array),
    fixed(new Float64(), [1.5, Number.NaN, null, Number.POSITIVE_INFINITY, -2.25], Float64Array),
    fixed(new Float32(), [0.1, 3.5, null, -1, 0], Float32Array),
    decimal(20, 4, 128, ['12.5000', '-0.0001', null, '1234567890123456.7890', '0.0000']),
    vectorFromArray([U256_MAX, '0', null, '-57896044618658097711785492504343953926634992332820282019728792003956564819968', '42'], new Utf8()).data[0]!,
    vectorFromArray(['plain', 'comma, "quote"\nnewline', null, '', 'ünïcødé ✓'], new Utf8()).data[0]!,
    vectorFromArray([new Uint8Array([0, 1, 254, 255]), new Uint8Array([]), null, new Uint8Array([0xab]), new Uint8Array([0x10, 0x20])], new Binary()).data[0]!,
    fixed(new DateDay(), [19782, -1, null, 0, 2932896], Int32Array),
    fixed(new Timestamp(TimeUnit.MICROSECOND), [1700000000123456n, -1n, null, 0n, 253402300799999999n], BigInt64Array),
    fixed(new Timestamp(TimeUnit.MILLISECOND, 'UTC'), [1700000000123n, -86400001n, null, 0n, 1709164800000n], BigInt64Array),
    fixed(new Duration(TimeUnit.MILLISECOND), [86400000n, -1n, null, 0n, 123n], BigInt64Array),
    vectorFromArray([[1n, 9007199254740993n], [], null, [null, -1n], [0n]], fields[13]!.type).data[0]!,
    vectorFromArray([new Map([['a', 1.5]]), new Map(), null, new Map([['k"q', null], ['z', -2]]), new Map([['x', 0]])], fields[14]!.type).data[0]!,
    vectorFromArray(
      [{ a: 9007199254740993n, b: ['x', null] }, { a: null, b: [] }, null, { a: -1n, b: null }, { a: 0n, b: ['y'] }],
      fields[15]!.type,
    ).data[0]!,
  ];
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: 5, nullCount: 0, children: columns }));
}

/**
 * The same rows as canonical text, the way the read-back queries render them (see readBack.ts):
 * integers as digits, timestamps as epoch units, nested values as minified JSON.
 */
export const EVERY_TYPE_EXPECTED: Record<string, (string | null)[]> = {
  b: ['true', 'false', null, 'true', 'false'],
  i32: ['1', '-2147483648', null, '2147483647', '0'],
  i64: ['9007199254740993', '-9223372036854775808', null, '9223372036854775807', '0'],
  f64: ['1.5', 'nan', null, 'inf', '-2.25'],
  f32: ['0.1', '3.5', null, '-1.0', '0.0'],
  dec: ['12.5000', '-0.0001', null, '1234567890123456.7890', '0.0000'],
  u256: [U256_MAX, '0', null, '-57896044618658097711785492504343953926634992332820282019728792003956564819968', '42'],
  s: ['plain', 'comma, "quote"\nnewline', null, '', 'ünïcødé ✓'],
  bin: ['0x0001feff', '0x', null, '0xab', '0x1020'],
  d: ['2024-02-29', '1969-12-31', null, '1970-01-01', '9999-12-31'],
  ts: ['1700000000123456', '-1', null, '0', '253402300799999999'],
  tstz: ['1700000000123', '-86400001', null, '0', '1709164800000'],
  dur: ['86400000', '-1', null, '0', '123'],
  lst: ['[1,9007199254740993]', '[]', null, '[null,-1]', '[0]'],
  mp: ['{"a":1.5}', '{}', null, '{"k\\"q":null,"z":-2.0}', '{"x":0.0}'],
  st: ['{"a":9007199254740993,"b":["x",null]}', '{"a":null,"b":[]}', null, '{"a":-1,"b":null}', '{"a":0,"b":["y"]}'],
};

/** `n` rows of a small schema, in batches of `size`, generated lazily. */
export async function* numbered(n: number, size: number, failAt?: number): AsyncIterable<RecordBatch> {
  for (let start = 0; start < n; start += size) {
    if (failAt !== undefined && start >= failAt) throw new Error(`source failed at row ${start}`);
    const len = Math.min(size, n - start);
    const ids = new BigInt64Array(len);
    const names: string[] = [];
    const groups: (string | null)[] = [];
    for (let i = 0; i < len; i++) {
      ids[i] = BigInt(start + i) + 9007199254740000n;
      names.push(`row ${start + i}`);
      groups.push((start + i) % 3 === 0 ? null : `g${(start + i) % 3}`);
    }
    yield new RecordBatch(numberedSchema, makeData({
      type: new Struct(numberedSchema.fields),
      length: len,
      nullCount: 0,
      children: [
        makeData({ type: new Int64(), length: len, nullCount: 0, data: ids }),
        vectorFromArray(names, new Utf8()).data[0]!,
        vectorFromArray(groups, new Utf8()).data[0]!,
      ],
    }));
    await Promise.resolve();
  }
}

export const numberedSchema = new Schema([
  new Field('id', new Int64(), false),
  new Field('name', new Utf8(), true),
  new Field('grp', new Utf8(), true),
]);

export async function* fromArray(batches: RecordBatch[]): AsyncIterable<RecordBatch> {
  for (const b of batches) yield b;
}

/** An output as a job file would give it, resolved against the built-in connectors (or `registry`). */
export function resolved(config: OutputConfig, registry: Registry = builtins): ResolvedOutput {
  return resolveOutput(config, registry);
}
