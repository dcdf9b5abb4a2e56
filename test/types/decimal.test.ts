import { describe, expect, it } from 'vitest';
import { normalizeDecimal, readDecimalWords, unscaledDigits, writeDecimalWords } from '../../src/types/decimal.ts';

describe('decimal text', () => {
  it('scales digits exactly without floating point', () => {
    expect(unscaledDigits('-1234567890123456789012345678.0123456789', 38, 10)).toBe('-12345678901234567890123456780123456789');
    expect(unscaledDigits('0.1', 3, 3)).toBe('100');
    expect(unscaledDigits('-000.0100', 5, 2)).toBe('-1');
    expect(unscaledDigits('+7', 1, 0)).toBe('7');
    expect(unscaledDigits('1.5e3', 10, 2)).toBe('150000');
    expect(unscaledDigits('1.5E-2', 10, 3)).toBe('15');
    expect(normalizeDecimal('.5', 3, 2)).toBe('0.50');
    expect(normalizeDecimal('-5', 5, 4)).toBe('-5.0000');
    expect(normalizeDecimal('0.0000000001', 38, 10)).toBe('0.0000000001');
  });

  it('refuses what does not fit, naming the limit', () => {
    expect(() => unscaledDigits('1.25', 5, 1)).toThrow(/more than 1 fractional digits for decimal\(5, 1\)/);
    expect(() => unscaledDigits('100', 4, 2)).toThrow(/more than 2 integer digits/);
    expect(() => unscaledDigits('1e300', 38, 0)).toThrow(/out of range|integer digits/);
    expect(() => unscaledDigits('1,5', 5, 1)).toThrow(/not a decimal number/);
    expect(() => unscaledDigits('', 5, 1)).toThrow(/not a decimal number/);
    expect(() => unscaledDigits('NaN', 5, 1)).toThrow(/not a decimal number/);
  });
});

describe('decimal words', () => {
  it('round-trips two-complement words for 128 and 256 bits, small and large', () => {
    const values = [0n, 1n, -1n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, 4_294_967_296n, -4_294_967_297n, 10n ** 38n - 1n, -(10n ** 38n) + 1n];
    for (const words of [4, 8]) {
      for (const v of [...values, ...(words === 8 ? [10n ** 76n - 1n, -(10n ** 76n) + 1n] : [])]) {
        const out = new Uint32Array(words * 2).fill(0xabcdef);
        writeDecimalWords(out, words, words, v);
        expect(readDecimalWords(out.subarray(words, 2 * words)), `${v} in ${words * 32} bits`).toBe(v);
        // The number fast path writes the same words as the bigint path.
        if (v < 2n ** 53n && v > -(2n ** 53n)) {
          const viaNumber = new Uint32Array(words);
          writeDecimalWords(viaNumber, 0, words, Number(v));
          expect([...viaNumber]).toEqual([...out.subarray(words, 2 * words)]);
        }
        // Words outside the slot are untouched.
        expect(out[words - 1]).toBe(0xabcdef);
      }
    }
  });
});
