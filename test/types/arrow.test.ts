import { Schema, Table, Utf8, tableFromIPC, tableToIPC, type DataType, type RecordBatch, type Vector } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { columnBuilder } from '../../src/types/columns.ts';
import { readDecimalWords } from '../../src/types/decimal.ts';
import { textAppender } from '../../src/types/wireAppenders.ts';
import {
  ArrowValueError,
  arrowSchema,
  compileRowDecoder,
  createBatchBuilder,
  parseJsonLossless,
  parseType,
  SCHEMA_METADATA_KEYS,
  TYPE_METADATA_KEY,
  type ColumnSpec,
} from '../../src/types/index.ts';

const COLUMNS: ColumnSpec[] = [
  { name: 'bool', type: 'boolean' },
  { name: 'i8', type: 'tinyint' },
  { name: 'i16', type: 'smallint' },
  { name: 'i32', type: 'integer' },
  { name: 'i64', type: 'bigint' },
  { name: 'u256', type: 'uint256' },
  { name: 'i256', type: 'int256' },
  { name: 'f32', type: 'real' },
  { name: 'f64', type: 'double' },
  { name: 'dec', type: 'decimal(38, 10)' },
  { name: 'dec_wide', type: 'decimal(50, 4)' },
  { name: 'str', type: 'varchar' },
  { name: 'chr', type: 'char(2)' },
  { name: 'bin', type: 'varbinary' },
  { name: 'js', type: 'json' },
  { name: 'day', type: 'date' },
  { name: 'tod', type: 'time(6)' },
  { name: 'ts3', type: 'timestamp(3)' },
  { name: 'ts6', type: 'timestamp(6)' },
  { name: 'ts9', type: 'timestamp(9)' },
  { name: 'tz3', type: 'timestamp(3) with time zone' },
  { name: 'tz6', type: 'timestamp(6) with time zone' },
  { name: 'ids', type: 'interval day to second' },
  { name: 'iym', type: 'interval year to month' },
  { name: 'uid', type: 'uuid' },
  { name: 'ip', type: 'ipaddress' },
  { name: 'arr', type: 'array(bigint)' },
  { name: 'mp', type: 'map(varchar, array(double))' },
  { name: 'rw', type: 'row(a bigint, "B c" varchar)' },
  { name: 'deep', type: 'array(row(a bigint, b map(varchar, array(double))))' },
  { name: 'geo', type: 'geometry' },
];

/** The golden page: edge values in row 0, other values in row 1, NULL everywhere in row 2. */
const PAGE = `[
  {"bool": true, "i8": -128, "i16": 32767, "i32": -2147483648, "i64": 9223372036854775807,
   "u256": "115792089237316195423570985008687907853269984665640564039457584007913129639935",
   "i256": "-57896044618658097711785492504343953926634992332820282019728792003956564819968",
   "f32": 1.5, "f64": -2.5e-300, "dec": "-1234567890123456789012345678.0123456789",
   "dec_wide": "-1234567890123456789012345678901234567890123456.7891", "str": "héllo ✓", "chr": "ab",
   "bin": "0xdeadbeef", "js": "{\\"a\\":1}", "day": "1969-12-31", "tod": "23:59:59.999999",
   "ts3": "2026-11-20 10:15:30.123", "ts6": "2026-11-20 10:15:30.123456", "ts9": "2026-11-20 10:15:30.123456789",
   "tz3": "2026-11-20 10:15:30.123 UTC", "tz6": "2026-11-20 10:15:30.123456 UTC",
   "ids": "1 02:03:04.567", "iym": "-1-2", "uid": "0b0a4a7e-9f2c-4c61-a5a0-3c1c3d0e8f11", "ip": "10.0.0.1",
   "arr": [-9223372036854775808, 0, 9223372036854775807], "mp": {"x": [1.5, 2], "y": []},
   "rw": {"a": 1, "B c": "z"}, "deep": [{"a": 1, "b": {"k": [0.5]}}, {"a": null, "b": {}}], "geo": "POINT (1 2)"},
  {"bool": false, "i8": 0, "i16": -1, "i32": 7, "i64": -9223372036854775808, "u256": "0", "i256": "57896044618658097711785492504343953926634992332820282019728792003956564819967",
   "f32": -0.25, "f64": 1e300, "dec": "0.0000000001", "dec_wide": "5", "str": "", "chr": "xy", "bin": "0x",
   "js": "[]", "day": "2024-02-29", "tod": "00:00:00", "ts3": "1969-12-31 23:59:59.999", "ts6": "1900-01-01 00:00:00.000001",
   "ts9": "1970-01-01 00:00:00.000000001", "tz3": "2026-11-20 12:15:30.000 +02:00", "tz6": "2026-11-20 10:15:30.000001 UTC",
   "ids": -1, "iym": 0, "uid": "00000000-0000-0000-0000-000000000000", "ip": "::1", "arr": [], "mp": {},
   "rw": {"a": null, "B c": null}, "deep": [], "geo": {"type": "Point"}},
  {}
]`;

function buildGolden(options: { timestamps?: 'auto' | 'string' } = {}): { batch: RecordBatch; rows: Record<string, unknown>[] } {
  const decode = compileRowDecoder(COLUMNS, options);
  const rows = (parseJsonLossless(PAGE) as unknown[]).map((r, i) => decode(r, i));
  const builder = createBatchBuilder(COLUMNS, { meta: { executionId: '01EXEC', queryId: 42, parameters: { day: '2026-01-01', n: 3 }, endedAt: '2026-11-20T10:15:30.123Z' } });
  for (const row of rows) builder.append(row);
  return { batch: builder.flush(), rows };
}

function col(batch: RecordBatch, name: string): Vector {
  const v = batch.getChild(name);
  if (v === null) throw new Error(`no column ${name}`);
  return v;
}

/** The raw 64-bit slot of a Timestamp/Time64/Duration column. */
function slot(batch: RecordBatch, name: string, i: number): bigint {
  return (col(batch, name).data[0]!.values as BigInt64Array)[i]!;
}

function decimalAt(batch: RecordBatch, name: string, i: number): bigint {
  return readDecimalWords(col(batch, name).get(i) as Uint32Array);
}

describe('arrowSchema', () => {
  it('maps every type as types.md says', () => {
    const schema = arrowSchema(COLUMNS);
    const types = Object.fromEntries(schema.fields.map((f) => [f.name, String(f.type)]));
    expect(types).toEqual({
      bool: 'Bool',
      i8: 'Int8',
      i16: 'Int16',
      i32: 'Int32',
      i64: 'Int64',
      u256: 'Utf8',
      i256: 'Utf8',
      f32: 'Float32',
      f64: 'Float64',
      dec: 'Decimal[38e+10]',
      dec_wide: 'Decimal[50e+4]',
      str: 'Utf8',
      chr: 'Utf8',
      bin: 'Binary',
      js: 'Utf8',
      day: 'Date32<DAY>',
      tod: 'Time64<MICROSECOND>',
      ts3: 'Timestamp<MILLISECOND>',
      ts6: 'Timestamp<MICROSECOND>',
      ts9: 'Timestamp<NANOSECOND>',
      tz3: 'Timestamp<MILLISECOND, UTC>',
      tz6: 'Timestamp<MICROSECOND, UTC>',
      ids: 'Duration<MILLISECOND>',
      iym: 'Int32',
      uid: 'Utf8',
      ip: 'Utf8',
      arr: 'List<Int64>',
      mp: 'Map<{key:Utf8, value:List<Float64>}>',
      rw: 'Struct<{a:Int64, B c:Utf8}>',
      deep: 'List<Struct<{a:Int64, b:Map<{key:Utf8, value:List<Float64>}>}>>',
      geo: 'Utf8',
    });
    const fields = Object.fromEntries(schema.fields.map((f) => [f.name, f]));
    expect((fields.dec!.type as { bitWidth: number }).bitWidth).toBe(128);
    expect((fields.dec_wide!.type as { bitWidth: number }).bitWidth).toBe(256);
    expect(schema.fields.every((f) => f.nullable)).toBe(true);
  });

  it('keeps the original type string in field metadata and provenance in schema metadata', () => {
    const schema = arrowSchema(
      [{ name: 'x', type: 'DECIMAL(10,2)' }, { name: 'g', type: 'array(geometry)' }],
      { executionId: '01EXEC', queryId: 42, parameters: { a: 'b' }, endedAt: new Date('2026-11-20T10:15:30.123Z') },
    );
    expect(schema.fields[0]!.metadata.get(TYPE_METADATA_KEY)).toBe('DECIMAL(10,2)');
    expect(schema.fields[1]!.metadata.get(TYPE_METADATA_KEY)).toBe('array(geometry)');
    // Nested fields carry their own canonical type.
    expect((schema.fields[1]!.type as DataType).children[0]!.metadata.get(TYPE_METADATA_KEY)).toBe('geometry');
    expect(Object.fromEntries(schema.metadata)).toEqual({
      [SCHEMA_METADATA_KEYS.executionId]: '01EXEC',
      [SCHEMA_METADATA_KEYS.queryId]: '42',
      [SCHEMA_METADATA_KEYS.parameters]: '{"a":"b"}',
      [SCHEMA_METADATA_KEYS.endedAt]: '2026-11-20T10:15:30.123Z',
    });
    expect(SCHEMA_METADATA_KEYS.executionId).toBe('service.execution_id');
  });

  it('maps uint256/int256 to Decimal256(76, 0) on request', () => {
    const schema = arrowSchema([{ name: 'u', type: 'uint256' }, { name: 'a', type: 'array(int256)' }], {}, { int256As: 'decimal256' });
    expect(String(schema.fields[0]!.type)).toBe('Decimal[76e0]');
    expect((schema.fields[0]!.type as { bitWidth: number }).bitWidth).toBe(256);
    expect(String(schema.fields[1]!.type)).toBe('List<Decimal[76e0]>');
  });
});

describe('createBatchBuilder', () => {
  it('builds every type and reads back exactly the source values', () => {
    const { batch, rows } = buildGolden();
    expect(batch.numRows).toBe(3);
    const [r0, r1] = rows as [Record<string, unknown>, Record<string, unknown>];

    expect(col(batch, 'bool').get(0)).toBe(true);
    expect(col(batch, 'bool').get(1)).toBe(false);
    expect(col(batch, 'i8').get(0)).toBe(-128);
    expect(col(batch, 'i16').get(0)).toBe(32767);
    expect(col(batch, 'i32').get(0)).toBe(-2147483648);
    expect(col(batch, 'i64').get(0)).toBe(2n ** 63n - 1n);
    expect(col(batch, 'i64').get(1)).toBe(-(2n ** 63n));
    expect(col(batch, 'u256').get(0)).toBe((2n ** 256n - 1n).toString());
    expect(col(batch, 'i256').get(0)).toBe((-(2n ** 255n)).toString());
    expect(col(batch, 'i256').get(1)).toBe((2n ** 255n - 1n).toString());
    expect(col(batch, 'f32').get(0)).toBe(1.5);
    expect(col(batch, 'f64').get(0)).toBe(-2.5e-300);
    expect(decimalAt(batch, 'dec', 0)).toBe(-12345678901234567890123456780123456789n);
    expect(decimalAt(batch, 'dec', 1)).toBe(1n);
    expect(decimalAt(batch, 'dec_wide', 0)).toBe(-12345678901234567890123456789012345678901234567891n);
    expect(decimalAt(batch, 'dec_wide', 1)).toBe(50000n);
    expect(col(batch, 'str').get(0)).toBe('héllo ✓');
    expect(col(batch, 'str').get(1)).toBe('');
    expect(col(batch, 'chr').get(1)).toBe('xy');
    expect(col(batch, 'bin').get(0)).toEqual(new Uint8Array([0xde, 0xad, 0xbe, 0xef]));
    expect(col(batch, 'bin').get(1)).toEqual(new Uint8Array(0));
    expect(col(batch, 'js').get(0)).toBe('{"a":1}');
    expect(col(batch, 'day').data[0]!.values[0]).toBe(-1);
    expect(col(batch, 'day').data[0]!.values[1]).toBe(19782);
    expect(slot(batch, 'tod', 0)).toBe(86_399_999_999n);
    expect(slot(batch, 'ts3', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30.123Z')));
    expect(slot(batch, 'ts3', 1)).toBe(-1n);
    expect(slot(batch, 'ts6', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')) * 1000n + 123_456n);
    expect(slot(batch, 'ts6', 1)).toBe(BigInt(Date.parse('1900-01-01T00:00:00Z')) * 1000n + 1n);
    expect(slot(batch, 'ts9', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')) * 1_000_000n + 123_456_789n);
    expect(slot(batch, 'ts9', 1)).toBe(1n);
    expect(slot(batch, 'tz3', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30.123Z')));
    expect(slot(batch, 'tz3', 1)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')));
    // Decoded as a Date (types.md), so microseconds are gone: see the timestamps: 'string' test.
    expect(slot(batch, 'tz6', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30.123Z')) * 1000n);
    expect(slot(batch, 'ids', 0)).toBe(93_784_567n);
    expect(slot(batch, 'ids', 1)).toBe(-1n);
    expect(col(batch, 'iym').get(0)).toBe(-14);
    expect(col(batch, 'uid').get(0)).toBe(r0.uid);
    expect(col(batch, 'ip').get(1)).toBe('::1');
    expect([...(col(batch, 'arr').get(0) as Vector)]).toEqual([-(2n ** 63n), 0n, 2n ** 63n - 1n]);
    expect([...(col(batch, 'arr').get(1) as Vector)]).toEqual([]);
    const mp = col(batch, 'mp').get(0) as Iterable<[string, Vector]>;
    expect([...mp].map(([k, v]) => [k, [...v]])).toEqual([['x', [1.5, 2]], ['y', []]]);
    expect([...(col(batch, 'mp').get(1) as Iterable<unknown>)]).toEqual([]);
    expect((col(batch, 'rw').get(0) as { toJSON(): unknown }).toJSON()).toEqual({ a: 1n, 'B c': 'z' });
    expect((col(batch, 'rw').get(1) as { toJSON(): unknown }).toJSON()).toEqual({ a: null, 'B c': null });
    const deep = col(batch, 'deep').get(0) as Vector;
    expect(deep.length).toBe(2);
    const first = deep.get(0) as { a: bigint; b: Iterable<[string, Vector]> };
    expect(first.a).toBe(1n);
    expect([...first.b].map(([k, v]) => [k, [...v]])).toEqual([['k', [0.5]]]);
    expect((deep.get(1) as { a: unknown }).a).toBeNull();
    expect((col(batch, 'deep').get(1) as Vector).length).toBe(0);
    expect(col(batch, 'geo').get(0)).toBe('POINT (1 2)');
    expect(col(batch, 'geo').get(1)).toBe(r1.geo);
  });

  it('makes NULL a null slot in every type, with a validity bitmap', () => {
    const { batch } = buildGolden();
    for (const { name } of COLUMNS) {
      const v = col(batch, name);
      expect(v.isValid(2), name).toBe(false);
      expect(v.get(2), name).toBeNull();
      expect(v.isValid(0), name).toBe(true);
      expect(v.nullCount, name).toBe(1);
    }
  });

  it('keeps microseconds of timestamp with time zone from exact text', () => {
    const { batch } = buildGolden({ timestamps: 'string' });
    expect(slot(batch, 'tz6', 0)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')) * 1000n + 123_456n);
    expect(slot(batch, 'tz6', 1)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')) * 1000n + 1n);
    expect(slot(batch, 'tz3', 1)).toBe(BigInt(Date.parse('2026-11-20T10:15:30Z')));
  });

  it('shares one Schema object across batches, metadata included', () => {
    const builder = createBatchBuilder(COLUMNS, { meta: { executionId: 'E' } });
    builder.append({ i64: 1n });
    const a = builder.flush();
    builder.append({ i64: 2n });
    builder.append({ i64: 3n });
    expect(builder.length).toBe(2);
    const b = builder.flush();
    expect(builder.length).toBe(0);
    expect(a.schema).toBe(builder.schema);
    expect(b.schema).toBe(builder.schema);
    expect([a.numRows, b.numRows]).toEqual([1, 2]);
    // A batch keeps its values after the builder moves on.
    expect(col(a, 'i64').get(0)).toBe(1n);
    expect([...col(b, 'i64')]).toEqual([2n, 3n]);
    expect(b.schema.metadata.get(SCHEMA_METADATA_KEYS.executionId)).toBe('E');
    expect(builder.flush().numRows).toBe(0);
  });

  it('accepts a Schema made by arrowSchema, and refuses one without service.type', () => {
    const schema = arrowSchema([{ name: 'n', type: 'array(int256)' }], {}, { int256As: 'decimal256' });
    const builder = createBatchBuilder(schema);
    builder.append({ n: [-(10n ** 76n) + 1n, 5n] });
    const batch = builder.flush();
    expect(batch.schema).toBe(schema);
    const list = col(batch, 'n').get(0) as Vector;
    expect(readDecimalWords(list.get(0) as Uint32Array)).toBe(-(10n ** 76n) + 1n);
    expect(readDecimalWords(list.get(1) as Uint32Array)).toBe(5n);

    const bare = new Schema([schema.fields[0]!.clone({ metadata: new Map() })]);
    expect(() => createBatchBuilder(bare)).toThrow(/has no "service.type" metadata/);
    const mismatched = new Schema([schema.fields[0]!.clone({ type: new Utf8() })]);
    expect(() => createBatchBuilder(mismatched)).toThrow(/is Utf8 but "array\(int256\)" maps to/);
  });

  it('grows past its initial capacity and handles nulls after many valid rows', () => {
    const builder = createBatchBuilder([
      { name: 'n', type: 'bigint' },
      { name: 's', type: 'varchar' },
      { name: 'b', type: 'boolean' },
      { name: 'l', type: 'array(integer)' },
    ]);
    const n = 5000;
    for (let i = 0; i < n; i++) {
      const isNull = i % 1000 === 999;
      builder.append({ n: isNull ? null : BigInt(i), s: isNull ? null : `s${i}`, b: isNull ? null : i % 3 === 0, l: isNull ? null : [i, i + 1] });
    }
    const batch = builder.flush();
    expect(batch.numRows).toBe(n);
    for (const name of ['n', 's', 'b', 'l']) expect(col(batch, name).nullCount, name).toBe(5);
    expect(col(batch, 'n').get(4998)).toBe(4998n);
    expect(col(batch, 'n').get(4999)).toBeNull();
    expect(col(batch, 's').get(4321)).toBe('s4321');
    expect(col(batch, 'b').get(3000)).toBe(true);
    expect(col(batch, 'b').get(3001)).toBe(false);
    expect([...(col(batch, 'l').get(4000) as Vector)]).toEqual([4000, 4001]);
  });

  it('writes each text as its own UTF-8 bytes (short or long, any script, lone surrogates) and keeps a batch apart from the next', () => {
    const texts = ['', 'a', 'x'.repeat(200), 'é', '日本語', '😀', '\ud800', '\udc00', `${'y'.repeat(40)}é`, `é${'z'.repeat(40)}`, null, 'ok'];
    const builder = createBatchBuilder([{ name: 's', type: 'varchar' }]);
    for (const s of texts) builder.append({ s });
    const first = builder.flush();
    const data = first.getChildAt(0)!.data[0]!;
    // Value by value: a lone high surrogate followed by a lone low one is two replacement characters, not one pair.
    const expected = texts.map((s) => Buffer.from(s ?? '', 'utf8'));
    expect(Buffer.from(data.values).equals(Buffer.concat(expected))).toBe(true);
    let at = 0;
    expect([...data.valueOffsets]).toEqual([0, ...expected.map((b) => (at += b.length))]);
    expect([...col(first, 's')]).toEqual(texts.map((s) => (s === null ? null : Buffer.from(s, 'utf8').toString('utf8'))));
    // The buffer grows several times in this batch: every value must survive each growth.
    const seconds = Array.from({ length: 3000 }, (_, i) => (i % 100 === 7 ? null : `second ${i} ✓${i % 3 === 0 ? 'x'.repeat(i % 50) : ''}`));
    for (const s of seconds) builder.append({ s });
    const second = builder.flush();
    expect([...col(second, 's')]).toEqual(seconds);
    expect(col(first, 's').get(4)).toBe('日本語');
    expect(col(first, 's').get(2)).toBe('x'.repeat(200));
  });

  it('takes text straight from a page only when it is plain ASCII, and appends nothing otherwise', () => {
    const field = arrowSchema([{ name: 's', type: 'varchar' }]).fields[0]!;
    const builder = columnBuilder(parseType('varchar'), field);
    const take = textAppender(parseType('varchar'), builder)!;
    const long = 'L'.repeat(40_000);
    const page = `"plain","é","tab\there","","last","${long}"`;
    expect(take(page, 1, 6)).toBe(true);
    expect(take(page, 9, 10)).toBe(false);
    expect(take(page, 13, 21)).toBe(false);
    expect(take(page, 24, 24)).toBe(true);
    builder.append(null);
    expect(take(page, 27, 31)).toBe(true);
    expect(take(page, 34, 34 + long.length)).toBe(true);
    const data = builder.finish();
    expect(data.length).toBe(5);
    expect(data.nullCount).toBe(1);
    expect(Buffer.from(data.values).toString('latin1')).toBe(`plainlast${long}`);
    expect([...data.valueOffsets]).toEqual([0, 5, 5, 5, 9, 9 + long.length]);
  });

  it('fails loudly, naming column, row and value, when a value does not fit', () => {
    const wide = createBatchBuilder([{ name: 'u', type: 'uint256' }], { int256As: 'decimal256' });
    wide.append({ u: 10n ** 76n - 1n });
    let error: unknown;
    try {
      wide.append({ u: 2n ** 256n - 1n });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ArrowValueError);
    const e = error as ArrowValueError;
    expect(e.column).toBe('u');
    expect(e.rowOffset).toBe(1);
    expect(e.value).toBe(2n ** 256n - 1n);
    expect(e.message).toMatch(/^Arrow column "u" \(uint256\), row 1: 1157920892.* does not fit Decimal256\(76, 0\)/);
    // The half-appended builder refuses further use instead of emitting a skewed batch.
    expect(() => wide.flush()).toThrow(/unusable/);

    // A builder fed from the middle of a result counts offsets from where it starts, across flushes.
    const resumed = createBatchBuilder([{ name: 'u', type: 'uint256' }], { int256As: 'decimal256', firstRowOffset: 1_000 });
    resumed.append({ u: 1n });
    resumed.flush();
    expect(() => resumed.append({ u: 2n ** 256n - 1n })).toThrow(/^Arrow column "u" \(uint256\), row 1001: /);

    const cases: Array<[string, unknown, RegExp]> = [
      ['decimal(5, 2)', '1234.5', /more than 3 integer digits/],
      ['decimal(5, 2)', 1.5, /not decimal text/],
      ['integer', 2 ** 31, /out of range for integer/],
      ['tinyint', 200, /out of range for tinyint/],
      ['bigint', 2n ** 63n, /does not fit in 64 bits/],
      ['bigint', '5', /not an integer/],
      ['varchar', 5, /not a string/],
      ['varbinary', '0x00', /not a Uint8Array/],
      ['date', '2026-02-30', /not a date/],
      ['time(6)', '10:00:00.0000001', /microseconds at most/],
      ['timestamp(3)', '2026-01-01 00:00:00.0001', /more fractional digits/],
      ['timestamp(9)', '2300-01-01 00:00:00', /does not fit in 64 bits/],
      ['array(bigint)', [1n, 'x'], /at \[1\]: "x" is not an integer/],
      ['map(varchar, bigint)', new Map([['k', 'v']]), /at \["k"\]: "v"/],
      ['row(a row(b double))', { a: { b: 'q' } }, /at \.a\.b: "q" is not a number/],
    ];
    for (const [type, value, pattern] of cases) {
      const builder = createBatchBuilder([{ name: 'c', type }]);
      expect(() => builder.append({ c: value }), type).toThrow(pattern);
    }
  });

  it('round-trips through Arrow IPC with schema, metadata and values intact', () => {
    const { batch } = buildGolden({ timestamps: 'string' });
    const bytes = tableToIPC(new Table([batch, batch]), 'stream');
    const table = tableFromIPC(bytes);
    expect(table.numRows).toBe(6);
    expect(table.schema.metadata.get(SCHEMA_METADATA_KEYS.parameters)).toBe('{"day":"2026-01-01","n":3}');
    expect(table.schema.metadata.get(SCHEMA_METADATA_KEYS.endedAt)).toBe('2026-11-20T10:15:30.123Z');
    for (const field of batch.schema.fields) {
      const back = table.schema.fields.find((f) => f.name === field.name)!;
      expect(String(back.type), field.name).toBe(String(field.type));
      expect(back.metadata.get(TYPE_METADATA_KEY), field.name).toBe(field.metadata.get(TYPE_METADATA_KEY));
      const original = col(batch, field.name);
      const read = table.getChild(field.name)!;
      for (let i = 0; i < 6; i++) {
        expect(json(read.get(i)), `${field.name}[${i}]`).toEqual(json(original.get(i % 3)));
      }
    }
    expect(readDecimalWords(table.getChild('dec')!.get(3) as Uint32Array)).toBe(-12345678901234567890123456780123456789n);
    expect(table.getChild('i64')!.get(4)).toBe(-(2n ** 63n));
  });
});

/** A comparable rendering of any Arrow value (bigints as text, vectors and rows unfolded). */
function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Uint8Array || v instanceof Uint32Array) return [...v];
    return v;
  });
}
