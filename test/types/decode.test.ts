import { describe, expect, it } from 'vitest';
import { compileDecoder, compileRowDecoder, parseJsonLossless, parseType, ValueDecodeError } from '../../src/types/index.ts';

const decode = (type: string, value: unknown, options = {}) => compileDecoder(parseType(type), options)(value);

/** The ValueDecodeError a row decoder throws for one bad value. */
function decodeError(type: string, value: unknown, rowOffset = 7): ValueDecodeError {
  const decodeRow = compileRowDecoder([{ name: 'col', type }]);
  try {
    decodeRow({ col: value }, rowOffset);
  } catch (error) {
    if (error instanceof ValueDecodeError) return error;
    throw error;
  }
  throw new Error(`no error for ${type} ${String(value)}`);
}

const ALL_TYPES = [
  'boolean', 'tinyint', 'smallint', 'integer', 'bigint', 'uint256', 'int256', 'real', 'double',
  'decimal(38, 10)', 'decimal(50, 2)', 'varchar', 'varchar(3)', 'char(2)', 'varbinary', 'json', 'date',
  'time(3)', 'timestamp(3)', 'timestamp(6)', 'timestamp(3) with time zone', 'interval day to second',
  'interval year to month', 'array(bigint)', 'map(varchar, bigint)', 'row(a bigint)', 'uuid', 'ipaddress',
  'geometry',
];

describe('decoders', () => {
  it('decode NULL (and a missing key) as null in every type', () => {
    for (const type of ALL_TYPES) {
      expect(decode(type, null), type).toBeNull();
      expect(decode(type, undefined), type).toBeNull();
    }
    const row = compileRowDecoder(ALL_TYPES.map((type, i) => ({ name: `c${i}`, type })))({}, 0);
    expect(Object.values(row)).toEqual(ALL_TYPES.map(() => null));
  });

  it('decode small integers and booleans, checking ranges', () => {
    expect(decode('boolean', true)).toBe(true);
    expect(decode('tinyint', -128)).toBe(-128);
    expect(decode('smallint', 32_767)).toBe(32_767);
    expect(decode('integer', -2_147_483_648)).toBe(-2_147_483_648);
    expect(decodeError('tinyint', 128).message).toMatch(/out of range for tinyint/);
    expect(decodeError('integer', 2_147_483_648).message).toMatch(/out of range for integer/);
    expect(decodeError('integer', 1.5).message).toMatch(/not an integer/);
    expect(decodeError('boolean', 'true').message).toMatch(/not a boolean/);
  });

  it('decode bigint exactly at the edges, from numbers and lossless bigints', () => {
    const page = parseJsonLossless('[9223372036854775807, -9223372036854775808, 9007199254740993, 42]') as unknown[];
    expect(page.map((v) => decode('bigint', v))).toEqual([2n ** 63n - 1n, -(2n ** 63n), 9007199254740993n, 42n]);
  });

  it('reject bigint values that do not fit', () => {
    expect(decodeError('bigint', '42').message).toMatch(/not an integer \(bigint\)/);
    expect(decodeError('bigint', 2n ** 63n).message).toMatch(/out of range for bigint/);
    expect(decodeError('bigint', -(2n ** 63n) - 1n).message).toMatch(/out of range/);
    // A plain JSON.parse rounded it: refuse rather than pass on a wrong number.
    expect(decodeError('bigint', JSON.parse('9223372036854775807')).message).toMatch(/parseJsonLossless/);
  });

  it('decode uint256 and int256 at their edges from strings, numbers and bigints', () => {
    const max = 2n ** 256n - 1n;
    expect(decode('uint256', max.toString())).toBe(max);
    expect(decode('uint256', 0)).toBe(0n);
    expect(decode('uint256', 12n)).toBe(12n);
    expect(decode('int256', (-(2n ** 255n)).toString())).toBe(-(2n ** 255n));
    expect(decode('int256', (2n ** 255n - 1n).toString())).toBe(2n ** 255n - 1n);
    expect(decode('int256', -5)).toBe(-5n);
  });

  it('reject 256-bit integers out of range', () => {
    expect(decodeError('uint256', (2n ** 256n).toString()).message).toMatch(/out of range for uint256/);
    expect(decodeError('uint256', '1'.repeat(79)).message).toMatch(/out of range for uint256/);
    expect(decodeError('uint256', '-1').message).toMatch(/out of range for uint256/);
    expect(decodeError('uint256', -1).message).toMatch(/out of range for uint256/);
    expect(decodeError('int256', (2n ** 255n).toString()).message).toMatch(/out of range for int256/);
    expect(decodeError('int256', (-(2n ** 255n) - 1n).toString()).message).toMatch(/out of range for int256/);
    expect(decodeError('int256', '12.5').message).toMatch(/not an integer \(int256\)/);
    expect(decodeError('uint256', '9'.repeat(5000)).message).toMatch(/not an integer/);
  });

  it('decode floats, including NaN and infinities written as text', () => {
    expect(decode('double', 1.5)).toBe(1.5);
    expect(decode('real', -0.25)).toBe(-0.25);
    expect(decode('double', 10n ** 20n)).toBe(1e20);
    expect(decode('double', 'NaN')).toBeNaN();
    expect(decode('double', 'Infinity')).toBe(Number.POSITIVE_INFINITY);
    expect(decode('double', '-Infinity')).toBe(Number.NEGATIVE_INFINITY);
    expect(decodeError('double', '1.5').message).toMatch(/not a floating-point number/);
  });

  it('decode decimals exactly, normalized to the scale', () => {
    const d = '-1234567890123456789012345678.0123456789';
    expect(decode('decimal(38, 10)', d)).toBe(d);
    expect(decode('decimal(10, 2)', '12.5')).toBe('12.50');
    expect(decode('decimal(10, 2)', 12.5)).toBe('12.50');
    expect(decode('decimal(10, 2)', '-0.05')).toBe('-0.05');
    expect(decode('decimal(10, 2)', '-0.00')).toBe('0.00');
    expect(decode('decimal(10, 0)', 7)).toBe('7');
    expect(decode('decimal(38, 0)', 12345678901234567890n)).toBe('12345678901234567890');
    expect(decode('decimal(10, 3)', '1.50000')).toBe('1.500');
    expect(decode('decimal(30, 2)', 1e21)).toBe('1000000000000000000000.00');
    expect(decode('decimal(12, 10)', 1.5e-7)).toBe('0.0000001500');
    expect(decode('decimal(76, 0)', '9'.repeat(76))).toBe('9'.repeat(76));
  });

  it('reject decimals that do not fit', () => {
    expect(decodeError('decimal(10, 2)', '1.234').message).toMatch(/more than 2 fractional digits/);
    expect(decodeError('decimal(4, 2)', '123.4').message).toMatch(/more than 2 integer digits/);
    expect(decodeError('decimal(10, 2)', 'abc').message).toMatch(/not a decimal number/);
    expect(decodeError('decimal(10, 2)', true).message).toMatch(/not a decimal/);
    expect(decodeError('decimal(10, 2)', Number.NaN).message).toMatch(/not a decimal/);
  });

  it('decode strings, json text and unknown types', () => {
    expect(decode('varchar', 'héllo')).toBe('héllo');
    expect(decode('char(2)', 'ab')).toBe('ab');
    expect(decode('uuid', '0b0a4a7e-9f2c-4c61-a5a0-3c1c3d0e8f11')).toBe('0b0a4a7e-9f2c-4c61-a5a0-3c1c3d0e8f11');
    expect(decode('ipaddress', '::1')).toBe('::1');
    expect(decode('json', '{"a":1}')).toBe('{"a":1}');
    // A json value sent as a JSON value (not its text) is re-serialized, bigints exactly.
    expect(decode('json', { a: 12345678901234567890n, b: [1] })).toBe('{"a":12345678901234567890,"b":[1]}');
    expect(decode('geometry', 'POINT (1 2)')).toBe('POINT (1 2)');
    expect(decode('geometry', { x: 1 })).toBe('{"x":1}');
    expect(decodeError('varchar', 5).message).toMatch(/not a string/);
  });

  it('decode varbinary hex into a plain Uint8Array', () => {
    const bytes = decode('varbinary', '0xdeadBEEF00');
    expect(bytes).toEqual(new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00]));
    expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
    expect(decode('varbinary', '0x')).toEqual(new Uint8Array(0));
    expect(decodeError('varbinary', '0xabc').message).toMatch(/hex/);
    expect(decodeError('varbinary', 'deadbeef').message).toMatch(/hex/);
    expect(decodeError('varbinary', '0xzz').message).toMatch(/hex/);
  });

  it('decode dates as text by default, as UTC Dates on request, and check the calendar', () => {
    expect(decode('date', '2024-02-29')).toBe('2024-02-29');
    expect(decode('date', '2026-11-20', { dates: 'date' })).toEqual(new Date('2026-11-20T00:00:00Z'));
    expect(decode('date', '1969-12-31', { dates: 'date' })).toEqual(new Date('1969-12-31T00:00:00Z'));
    expect(decode('date', '0001-01-01', { dates: 'date' })).toEqual(new Date('0001-01-01T00:00:00Z'));
    for (const bad of ['2023-02-29', '2026-13-01', '2026-00-10', '2026-1-1', '2026/01/01', '20260101', 20260101]) {
      expect(decodeError('date', bad).message, String(bad)).toMatch(/not a valid date/);
    }
  });

  it('decode time as validated text', () => {
    expect(decode('time(3)', '10:15:30.123')).toBe('10:15:30.123');
    expect(decode('time(0)', '23:59:59')).toBe('23:59:59');
    // The end of a day is a time (DuckDB and SQL hold it); nothing past it is.
    expect(decode('time(6)', '24:00:00.000000')).toBe('24:00:00.000000');
    expect(decode('time(0)', '24:00:00')).toBe('24:00:00');
    for (const bad of ['24:00:01', '24:00:00.000001', '25:00:00', '24:01:00']) expect(decodeError('time(3)', bad).message, bad).toMatch(/not a valid time/);
  });

  it('decode timestamps: Date for p <= 3, exact text beyond, Date (UTC) with time zone', () => {
    expect(decode('timestamp(3)', '2026-11-20 10:15:30.123')).toEqual(new Date('2026-11-20T10:15:30.123Z'));
    expect(decode('timestamp(0)', '2026-11-20 10:15:30')).toEqual(new Date('2026-11-20T10:15:30Z'));
    expect(decode('timestamp(6)', '2026-11-20 10:15:30.123456')).toBe('2026-11-20 10:15:30.123456');
    expect(decode('timestamp(9)', '1900-01-01 00:00:00.000000001')).toBe('1900-01-01 00:00:00.000000001');
    expect(decode('timestamp(3) with time zone', '2026-11-20 10:15:30.123 UTC')).toEqual(
      new Date('2026-11-20T10:15:30.123Z'),
    );
    expect(decode('timestamp(3) with time zone', '2026-11-20 12:15:30.123 +02:00')).toEqual(
      new Date('2026-11-20T10:15:30.123Z'),
    );
    expect(decode('timestamp(6) with time zone', '2026-11-20 10:15:30.123456 UTC')).toEqual(
      new Date('2026-11-20T10:15:30.123Z'),
    );
    expect(decode('timestamp(3)', '1969-12-31 23:59:59.999')).toEqual(new Date('1969-12-31T23:59:59.999Z'));
  });

  it('keep timestamp text exactly with timestamps: string', () => {
    const text = '2026-11-20 10:15:30.123456 UTC';
    expect(decode('timestamp(6) with time zone', text, { timestamps: 'string' })).toBe(text);
    expect(decode('timestamp(3)', '2026-11-20 10:15:30.123', { timestamps: 'string' })).toBe('2026-11-20 10:15:30.123');
  });

  it('decode timestamps exactly as epoch microseconds or nanoseconds (bigint) on request', () => {
    const base = BigInt(Date.UTC(2026, 10, 20, 10, 15, 30)) * 1000n;
    expect(decode('timestamp(6) with time zone', '2026-11-20 10:15:30.234567 UTC', { timestamps: 'micros' })).toBe(base + 234_567n);
    expect(decode('timestamp(6) with time zone', '2026-11-20 12:15:30.234567 +02:00', { timestamps: 'micros' })).toBe(base + 234_567n);
    expect(decode('timestamp(6) with time zone', '2026-11-20 10:15:30.234567 UTC', { timestamps: 'nanos' })).toBe((base + 234_567n) * 1000n);
    expect(decode('timestamp(3)', '2026-11-20 10:15:30.2', { timestamps: 'micros' })).toBe(base + 200_000n);
    expect(decode('timestamp(9)', '1969-12-31 23:59:59.999999999', { timestamps: 'nanos' })).toBe(-1n);
    expect(decode('timestamp(0)', '1969-12-31 23:59:59', { timestamps: 'micros' })).toBe(-1_000_000n);
    // Years outside 0000-9999 and BC take the general path to the same numbers.
    expect(decode('timestamp(6)', '10000-01-01 00:00:00', { timestamps: 'micros' })).toBe(BigInt(Date.UTC(10000, 0, 1)) * 1000n);
    expect(decode('timestamp(3) with time zone', null, { timestamps: 'micros' })).toBeNull();
    // Digits the unit cannot hold are refused, not dropped.
    expect(() => decode('timestamp(9)', '2026-11-20 10:15:30.123456789', { timestamps: 'micros' })).toThrow(/nanos/);
    expect(decode('timestamp(9)', '2026-11-20 10:15:30.123456000', { timestamps: 'micros' })).toBe(base + 123_456n);
  });

  it('reject malformed or mismatched timestamps', () => {
    expect(decodeError('timestamp(3)', '2026-11-20').message).toMatch(/not a valid timestamp/);
    expect(decodeError('timestamp(3)', '2026-11-20 10:15:30.123 UTC').message).toMatch(/has a time zone/);
    expect(decodeError('timestamp(3) with time zone', '2026-11-20 10:15:30.123').message).toMatch(/no time zone/);
    expect(decodeError('timestamp(3) with time zone', '2026-11-20 10:15:30 Europe/Berlin').message).toMatch(
      /not a valid timestamp/,
    );
    expect(decodeError('timestamp(3)', '2026-11-20 10:15:30.1234').message).toMatch(/more fractional digits/);
    expect(decodeError('timestamp(3)', 1_700_000_000_000).message).toMatch(/not a valid timestamp/);
    // Cut short in the seconds: once read as a timestamp of NaN seconds.
    expect(decodeError('timestamp(6)', '2026-10-31 23:59:5').message).toMatch(/"2026-10-31 23:59:5" is not a valid timestamp/);
    expect(decodeError('timestamp(3)', '2026-10-31 23:59:5').message).toMatch(/not a valid timestamp/);
  });

  it('decode intervals from milliseconds / months or their text form', () => {
    expect(decode('interval day to second', 93_784_567)).toBe(93_784_567);
    expect(decode('interval day to second', '1 02:03:04.567')).toBe(93_784_567);
    expect(decode('interval day to second', '-1 02:03:04.567')).toBe(-93_784_567);
    // The service's exact form: six fraction digits; milliseconds decode exactly, finer fails loudly.
    expect(decode('interval day to second', '-1 02:03:04.567000')).toBe(-93_784_567);
    expect(() => decode('interval day to second', '0 00:00:00.000001')).toThrow(/has microseconds, which milliseconds cannot hold/);
    expect(() => decode('interval day to second', '14 months 3 01:02:03.000000')).toThrow(/month part, which has no fixed length/);
    expect(decode('interval day to second', '00:00:01')).toBe(1000);
    expect(decode('interval year to month', 14)).toBe(14);
    expect(decode('interval year to month', '1-2')).toBe(14);
    expect(decode('interval year to month', '-1-2')).toBe(-14);
    expect(decodeError('interval day to second', '1 day').message).toMatch(/interval day to second/);
    expect(decodeError('interval day to second', '00:00:00.0005').message).toMatch(/interval day to second/);
    expect(decodeError('interval year to month', '1-12').message).toMatch(/interval year to month/);
  });

  it('decode arrays, maps and rows, nested and empty', () => {
    const t = 'array(row(a bigint, b map(varchar, array(double))))';
    const raw = parseJsonLossless('[{"a": 9223372036854775807, "b": {"x": [1.5, 2], "y": []}}, {"a": null, "b": {}}, null]');
    expect(decode(t, raw)).toEqual([
      { a: 2n ** 63n - 1n, b: new Map([['x', [1.5, 2]], ['y', []]]) },
      { a: null, b: new Map() },
      null,
    ]);
    expect(decode('array(bigint)', [])).toEqual([]);
    expect(decode('array(array(varchar))', [[], ['a', null]])).toEqual([[], ['a', null]]);
    expect(decode('row(a bigint, b row(c varchar))', { a: 1, b: { c: 'z' }, extra: true })).toEqual({ a: 1n, b: { c: 'z' } });
    expect(decode('row(a bigint, b varchar)', [1, 'x'])).toEqual({ a: 1n, b: 'x' });
  });

  it('decode map keys from their JSON text to the key type', () => {
    expect(decode('map(bigint, varchar)', { '1': 'a', '-9223372036854775808': 'b' })).toEqual(
      new Map<bigint, string>([[1n, 'a'], [-(2n ** 63n), 'b']]),
    );
    expect(decode('map(double, boolean)', { '1.5': true })).toEqual(new Map([[1.5, true]]));
    expect(decode('map(boolean, integer)', { true: 1 })).toEqual(new Map([[true, 1]]));
    expect(decode('map(varchar, integer)', [['k', 1]])).toEqual(new Map([['k', 1]]));
    expect(decodeError('map(bigint, varchar)', { x: 'a' }).message).toMatch(/at \{x\}: "x" is not an integer/);
  });

  it('keep a column or field named __proto__ as a plain property', () => {
    const row = compileRowDecoder([{ name: '__proto__', type: 'bigint' }])(JSON.parse('{"__proto__": 1}'), 0);
    expect(Object.keys(row)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe(1n);
  });
});

describe('compileRowDecoder', () => {
  it('returns rows keyed in column order with typed values', () => {
    const decodeRow = compileRowDecoder([
      { name: 'z', type: 'bigint' },
      { name: 'a', type: 'varchar' },
      { name: 'd', type: 'date' },
    ]);
    const row = decodeRow({ a: 'x', d: '2026-01-02', z: 5 }, 0);
    expect(Object.keys(row)).toEqual(['z', 'a', 'd']);
    expect(row).toEqual({ z: 5n, a: 'x', d: '2026-01-02' });
  });

  it('names the column, the row offset, the nested path and the value in errors', () => {
    const decodeRow = compileRowDecoder([
      { name: 'id', type: 'bigint' },
      { name: 'tags', type: 'array(row(k varchar, v bigint))' },
    ]);
    try {
      decodeRow({ id: 1, tags: [{ k: 'a', v: 1 }, { k: 'b', v: 'two' }] }, 1234);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValueDecodeError);
      const e = error as ValueDecodeError;
      expect(e.code).toBe('VALUE_DECODE');
      expect(e.column).toBe('tags');
      expect(e.rowOffset).toBe(1234);
      expect(e.path).toBe('[1].v');
      expect(e.value).toBe('two');
      expect(e.message).toBe(
        'column "tags" (array(row(k varchar, v bigint))), row 1234, at [1].v: "two" is not an integer (bigint)',
      );
    }
  });

  it('errors for a value that is the wrong shape name it', () => {
    const e = decodeError('bigint', 'not a number', 99);
    expect(e.message).toBe('column "col" (bigint), row 99: "not a number" is not an integer (bigint)');
    expect(e.value).toBe('not a number');
    const long = decodeError('bigint', 'x'.repeat(500));
    expect(long.message.length).toBeLessThan(220);
    expect(long.message).toMatch(/\(502 chars\)/);
  });

  it('rejects a row that is not an object', () => {
    const decodeRow = compileRowDecoder([{ name: 'a', type: 'bigint' }]);
    expect(() => decodeRow([1], 3)).toThrow(/row 3: \[1\] is not a row object/);
    expect(() => decodeRow(null, 4)).toThrow(ValueDecodeError);
  });
});
