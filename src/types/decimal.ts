import { Misfit } from './errors.ts';

/**
 * Exact decimal text, handled as digits: no value ever goes through a double, so
 * `-1234567890123456789012345678.0123456789` stays what it is.
 */

/**
 * The signed unscaled integer of a decimal text at `scale`, as digits: `"-12.5"` at scale 2
 * is `"-1250"`. Accepts `[-+]digits[.digits][e±n]` (the exponent form is what `String(number)`
 * gives for large or tiny numbers). Throws a Misfit when the text is not a number, when it
 * has non-zero digits beyond `scale`, or more than `precision - scale` integer digits.
 */
export function unscaledDigits(text: string, precision: number, scale: number): string {
  const m = DECIMAL.exec(text);
  if (m === null) throw new Misfit(text, `is not a decimal number`);
  const negative = m[1] === '-';
  let intPart = m[2] ?? '';
  let fracPart = m[3] ?? '';
  if (intPart === '' && fracPart === '') throw new Misfit(text, `is not a decimal number`);
  const exponent = m[4] === undefined ? 0 : Number(m[4]);
  if (exponent !== 0) {
    if (Math.abs(exponent) > 200) throw new Misfit(text, `is out of range for decimal(${precision}, ${scale})`);
    // Move the point: all digits, then re-split at the shifted position.
    const all = intPart + fracPart;
    const point = intPart.length + exponent;
    if (point <= 0) {
      intPart = '';
      fracPart = '0'.repeat(-point) + all;
    } else if (point >= all.length) {
      intPart = all + '0'.repeat(point - all.length);
      fracPart = '';
    } else {
      intPart = all.slice(0, point);
      fracPart = all.slice(point);
    }
  }
  if (fracPart.length > scale) {
    for (let i = scale; i < fracPart.length; i++) {
      if (fracPart.charCodeAt(i) !== 48) {
        throw new Misfit(text, `has more than ${scale} fractional digits for decimal(${precision}, ${scale})`);
      }
    }
    fracPart = fracPart.slice(0, scale);
  } else if (fracPart.length < scale) {
    fracPart = fracPart.padEnd(scale, '0');
  }
  let start = 0;
  while (start < intPart.length - 1 && intPart.charCodeAt(start) === 48) start++;
  if (start > 0) intPart = intPart.slice(start);
  if (intPart === '0') intPart = '';
  if (intPart.length > precision - scale) {
    throw new Misfit(text, `has more than ${precision - scale} integer digits for decimal(${precision}, ${scale})`);
  }
  let digits = intPart + fracPart;
  let lead = 0;
  while (lead < digits.length - 1 && digits.charCodeAt(lead) === 48) lead++;
  digits = digits.slice(lead);
  if (digits === '') digits = '0';
  return negative && digits !== '0' ? `-${digits}` : digits;
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/;

/** Canonical text of a decimal at `scale`: `"12.50"` for 12.5 at scale 2, `"-0.05"`, `"7"`. */
export function formatUnscaled(unscaled: string, scale: number): string {
  if (scale === 0) return unscaled;
  const negative = unscaled.charCodeAt(0) === 45;
  const digits = negative ? unscaled.slice(1) : unscaled;
  const padded = digits.length <= scale ? digits.padStart(scale + 1, '0') : digits;
  const point = padded.length - scale;
  return `${negative ? '-' : ''}${padded.slice(0, point)}.${padded.slice(point)}`;
}

/** Canonical decimal text if `text` fits `decimal(precision, scale)`; throws a Misfit otherwise. */
export function normalizeDecimal(text: string, precision: number, scale: number): string {
  if (canonicalDigits(text, precision, scale) > 0) return text;
  return formatUnscaled(unscaledDigits(text, precision, scale), scale);
}

/**
 * How many digits `text` has when it is already the canonical text of a `decimal(precision, scale)`
 * (what the service sends): `-?(0|[1-9][0-9]*)` with at most `precision - scale` digits, then `.`
 * and exactly `scale` digits (no point at scale 0), and not a negative zero; 0 for anything
 * else, which the general parser then reads or rejects. A char loop, no regex.
 */
export function canonicalDigits(text: string, precision: number, scale: number): number {
  const n = text.length;
  const negative = text.charCodeAt(0) === 45;
  const start = negative ? 1 : 0;
  const point = scale > 0 ? n - 1 - scale : n;
  const intLength = point - start;
  if (intLength < 1 || (scale > 0 && text.charCodeAt(point) !== 46)) return 0;
  const first = text.charCodeAt(start) - 48;
  if ((first >>> 0) > 9 || (first === 0 && intLength > 1) || (first === 0 ? 0 : intLength) > precision - scale) return 0;
  let nonZero = first;
  for (let i = start + 1; i < point; i++) {
    const c = text.charCodeAt(i) - 48;
    if ((c >>> 0) > 9) return 0;
  }
  for (let i = point + 1; i < n; i++) {
    const c = text.charCodeAt(i) - 48;
    if ((c >>> 0) > 9) return 0;
    nonZero |= c;
  }
  // `nonZero` ORs the leading digit and the fraction digits: zero only for a zero value, whose canonical text has no sign.
  if (negative && nonZero === 0) return 0;
  return intLength + scale;
}

/**
 * The unscaled value of a canonical decimal text of 15 digits or fewer (see canonicalDigits), as
 * an exact double; NaN for any other text. One pass over the chars. `at` and `end`: where the text
 * is in `text` (a page's text).
 */
export function canonicalUnscaled(text: string, precision: number, scale: number, at = 0, end = text.length): number {
  const n = end;
  const negative = text.charCodeAt(at) === 45;
  const start = negative ? at + 1 : at;
  const point = scale > 0 ? n - 1 - scale : n;
  // Digits before the point: at least one, no leading zero, at most precision - scale significant.
  const intLength = point - start;
  if (intLength < 1 || intLength + scale > 15 || (scale > 0 && text.charCodeAt(point) !== 46)) return Number.NaN;
  const first = text.charCodeAt(start) - 48;
  if ((first >>> 0) > 9 || (first === 0 && intLength > 1) || (first === 0 ? 0 : intLength) > precision - scale) return Number.NaN;
  let v = first;
  for (let i = start + 1; i < point; i++) {
    const c = text.charCodeAt(i) - 48;
    if ((c >>> 0) > 9) return Number.NaN;
    v = v * 10 + c;
  }
  for (let i = point + 1; i < n; i++) {
    const c = text.charCodeAt(i) - 48;
    if ((c >>> 0) > 9) return Number.NaN;
    v = v * 10 + c;
  }
  if (negative) return v === 0 ? Number.NaN : -v;
  return v;
}

/** Digits an integer text may have and still be in range for sure: 2^256 has 78, 2^255 has 77. */
export const UINT256_SAFE_DIGITS = 77;
export const INT256_SAFE_DIGITS = 76;

/**
 * `0` or `[1-9][0-9]*` of at most `maxDigits` digits, with a `-` before a non-zero one when
 * `signed`: integer text whose bigint prints back to the same text.
 */
export function isCanonicalInteger(v: string, signed: boolean, maxDigits: number): boolean {
  const start = signed && v.charCodeAt(0) === 45 ? 1 : 0;
  const length = v.length - start;
  if (length < 1 || length > maxDigits) return false;
  const first = v.charCodeAt(start) - 48;
  if ((first >>> 0) > 9 || (first === 0 && (length > 1 || start === 1))) return false;
  for (let i = start + 1; i < v.length; i++) if ((v.charCodeAt(i) - 48) >>> 0 > 9) return false;
  return true;
}

/** 2^53: below it (15 digits always are) an unscaled value can be written without a bigint. */
const SAFE = 2 ** 53;

/**
 * Write a signed integer as `words` little-endian 32-bit two's-complement words
 * (Arrow's Decimal128/256 layout) at word index `at` of `out`.
 */
export function writeDecimalWords(out: Uint32Array, at: number, words: number, value: number | bigint): void {
  if (typeof value === 'number' && value < SAFE && value > -SAFE) {
    // ToUint32 is exact modulo 2^32 for any integer double; floor() carries the sign upward.
    out[at] = value >>> 0;
    out[at + 1] = Math.floor(value / 4_294_967_296) >>> 0;
    const fill = value < 0 ? 0xffff_ffff : 0;
    for (let i = 2; i < words; i++) out[at + i] = fill;
    return;
  }
  let v = BigInt(value);
  for (let i = 0; i < words; i++) {
    out[at + i] = Number(BigInt.asUintN(32, v));
    v >>= 32n;
  }
}

/** Read back `words` 32-bit two's-complement words as a bigint (tests and readers). */
export function readDecimalWords(words: Uint32Array): bigint {
  let v = 0n;
  for (let i = words.length - 1; i >= 0; i--) v = (v << 32n) | BigInt(words[i]!);
  return BigInt.asIntN(words.length * 32, v);
}
