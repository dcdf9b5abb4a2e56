import { DateDay, Field, Float32, makeData, TimeUnit, Timestamp, Time, Decimal, type Data, type DataType } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { decimalText, valueText } from '../../src/kit/index.ts';

const cell = (type: DataType, data: Data, i = 0) => valueText(new Field('c', type, true)).text(data, i);

describe('valueText', () => {
  it('writes float32 as the shortest text that round-trips', () => {
    const type = new Float32();
    const data = makeData({ type, length: 4, nullCount: 0, data: new Float32Array([0.1, 1 / 3, 16777216, Number.NaN]) });
    expect([0, 1, 2, 3].map((i) => cell(type, data, i))).toEqual(['0.1', '0.33333334', '16777216', 'NaN']);
  });

  it('writes nanosecond and second timestamps exactly, before and after 1970', () => {
    const ns = new Timestamp(TimeUnit.NANOSECOND, 'UTC');
    const data = makeData({ type: ns, length: 2, nullCount: 0, data: new BigInt64Array([1700000000123456789n, -1n]) });
    expect(cell(ns, data, 0)).toBe('2023-11-14T22:13:20.123456789Z');
    expect(cell(ns, data, 1)).toBe('1969-12-31T23:59:59.999999999Z');
    const s = new Timestamp(TimeUnit.SECOND);
    expect(cell(s, makeData({ type: s, length: 1, nullCount: 0, data: new BigInt64Array([86400n]) }))).toBe('1970-01-02T00:00:00');
  });

  it('writes dates and timestamps outside years 0000-9999 as DuckDB reads them: no `+`, `-` before year 0, the whole int64 range', () => {
    const day = new DateDay();
    const days = makeData({ type: day, length: 5, nullCount: 0, data: new Int32Array([2_932_897, -719_163, -735_160, 2_147_483_646, -2_147_483_646]) });
    expect([0, 1, 2, 3, 4].map((i) => cell(day, days, i))).toEqual(['10000-01-01', '0000-12-31', '-0043-03-15', '5881580-07-10', '-5877641-06-25']);
    const us = new Timestamp(TimeUnit.MICROSECOND);
    const micros = makeData({ type: us, length: 3, nullCount: 0, data: new BigInt64Array([253_402_387_199_999_999n, 9_223_372_036_854_775_806n, -9_223_372_022_400_000_000n]) });
    expect([0, 1, 2].map((i) => cell(us, micros, i))).toEqual(['10000-01-01T23:59:59.999999', '294247-01-10T04:00:54.775806', '-290308-12-22T00:00:00.000000']);
    const ms = new Timestamp(TimeUnit.MILLISECOND, 'UTC');
    const millis = makeData({ type: ms, length: 2, nullCount: 0, data: new BigInt64Array([253_402_300_800_000n, -62_167_219_200_001n]) });
    expect([0, 1].map((i) => cell(ms, millis, i))).toEqual(['10000-01-01T00:00:00.000Z', '-0001-12-31T23:59:59.999Z']);
  });

  it('writes time of day with the unit precision', () => {
    const t = new Time(TimeUnit.MICROSECOND, 64);
    expect(cell(t, makeData({ type: t, length: 1, nullCount: 0, data: new BigInt64Array([3723000001n]) }))).toBe('01:02:03.000001');
  });

  it('writes 256-bit decimals exactly, negative and with scale', () => {
    const words = new Uint32Array(8).fill(0xffff_ffff); // -1
    expect(decimalText(words, 0, 8, 0)).toBe('-1');
    expect(decimalText(words, 0, 8, 3)).toBe('-0.001');
    const big = new Uint32Array(8);
    let v = 10n ** 75n + 5n;
    for (let k = 0; k < 8; k++) {
      big[k] = Number(v & 0xffff_ffffn);
      v >>= 32n;
    }
    expect(decimalText(big, 0, 8, 2)).toBe(`${'1' + '0'.repeat(73)}.05`);
    const type = new Decimal(2, 76, 256);
    expect(cell(type, makeData({ type, length: 1, nullCount: 0, data: big }))).toBe(`${'1' + '0'.repeat(73)}.05`);
  });

  it('returns null for SQL NULL and "null" JSON', () => {
    const type = new Float32();
    const data = makeData({ type, length: 1, nullCount: 1, nullBitmap: new Uint8Array([0]), data: new Float32Array([1]) });
    const text = valueText(new Field('c', type, true));
    expect(text.text(data, 0)).toBeNull();
    expect(text.json(data, 0)).toBe('null');
  });
});
