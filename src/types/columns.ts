import { DataType, makeData, type Data, type Field, type Map_, type Struct } from 'apache-arrow';
import { canonicalUnscaled, unscaledDigits, writeDecimalWords } from './decimal.ts';
import { Misfit, atPath } from './errors.ts';
import type { SqlKind, SqlOf, SqlType } from './sqlType.ts';
import {
  canonicalFracUnits,
  dateToDays,
  fracToUnits,
  parseDateDays,
  parseTimeMicros,
  parseTimestamp,
  scanCanonicalTimestamp,
  type CanonicalTimestamp,
  type TimestampParts,
} from './temporal.ts';
import { Validity } from './validity.ts';

/**
 * Column builders: append the JS values of decode.ts (types.md), finish into an Arrow Data
 * of exactly the field's type. Typed arrays grow by doubling; `finish` hands the filled
 * part to Arrow and starts fresh buffers, so a batch never shares memory with the next.
 * A builder throws a Misfit on a value its column cannot hold; nothing is coerced.
 */
export interface ColumnBuilder {
  /** Append one value; `null` and `undefined` are SQL NULL. */
  append(value: unknown): void;
  /** The values appended since the last finish, as Arrow Data; resets the builder. */
  finish(): Data;
}

const INITIAL = 1024;

type FixedArray = Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;
type FixedArrayCtor = new (length: number) => FixedArray;

function grown<T extends FixedArray | Uint8Array | Uint32Array | Int32Array>(values: T, needed: number): T {
  const Ctor = values.constructor as new (n: number) => T;
  const next = new Ctor(Math.max(values.length * 2, needed));
  next.set(values);
  return next;
}

/** Numbers into an Int8/16/32 or Float32/64 array; `check` says why a value does not fit. */
export class NumberColumn implements ColumnBuilder {
  private values: FixedArray;
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly Ctor: FixedArrayCtor;
  private readonly check: (v: unknown) => string | undefined;

  constructor(type: DataType, Ctor: FixedArrayCtor, check: (v: unknown) => string | undefined) {
    this.type = type;
    this.Ctor = Ctor;
    this.check = check;
    this.values = new Ctor(INITIAL);
  }

  append(v: unknown): void {
    const i = this.length;
    if (i === this.values.length) this.values = grown(this.values, i + 1);
    if (v == null) {
      this.validity.setNull(i);
    } else {
      const problem = this.check(v);
      if (problem !== undefined) throw new Misfit(v, problem);
      this.values[i] = v as number;
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  /** Append a number already known to fit (no check). */
  appendNumber(v: number): void {
    const i = this.length;
    if (i === this.values.length) this.values = grown(this.values, i + 1);
    this.values[i] = v;
    this.validity.setValid(i);
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({ type: this.type, length, data: this.values.subarray(0, length), ...this.validity.take(length) } as never);
    this.values = new this.Ctor(Math.max(INITIAL, length));
    this.length = 0;
    return data;
  }
}

function intCheck(min: number, max: number, name: string): (v: unknown) => string | undefined {
  return (v) =>
    typeof v !== 'number' || !Number.isInteger(v)
      ? `is not an integer (${name})`
      : v < min || v > max
        ? `is out of range for ${name}`
        : undefined;
}

function floatCheck(v: unknown): string | undefined {
  return typeof v === 'number' ? undefined : 'is not a number';
}

export class BoolColumn implements ColumnBuilder {
  private bits = new Uint8Array(INITIAL >> 3);
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;

  constructor(type: DataType) {
    this.type = type;
  }

  append(v: unknown): void {
    const i = this.length;
    if (i >> 3 >= this.bits.length) this.bits = grown(this.bits, (i >> 3) + 1);
    if (v == null) {
      this.validity.setNull(i);
    } else {
      if (typeof v !== 'boolean') throw new Misfit(v, 'is not a boolean');
      if (v) this.bits[i >> 3]! |= 1 << (i & 7);
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({ type: this.type, length, data: this.bits.subarray(0, (length + 7) >> 3), ...this.validity.take(length) } as never);
    this.bits = new Uint8Array(Math.max(INITIAL, length) >> 3);
    this.length = 0;
    return data;
  }
}

const TWO_32 = 4_294_967_296;
export const SAFE = 2 ** 53;
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/**
 * 64-bit slots (Int64, Timestamp, Time64, Duration). A safe integer is written as two
 * 32-bit halves, so the common case allocates no bigint; `toSlot` turns a JS value into
 * a number (safe integer) or a bigint, or throws a Misfit.
 */
export class Int64Column implements ColumnBuilder {
  private words = new Uint32Array(INITIAL * 2);
  /** The same memory as `words`, for values that arrive as bigints. */
  private big = new BigInt64Array(this.words.buffer);
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly toSlot: (v: unknown) => number | bigint;

  constructor(type: DataType, toSlot: (v: unknown) => number | bigint) {
    this.type = type;
    this.toSlot = toSlot;
  }

  append(v: unknown): void {
    const i = this.length;
    if (i === this.big.length) {
      this.words = grown(this.words, i * 2 + 2);
      this.big = new BigInt64Array(this.words.buffer);
    }
    if (v == null) {
      this.validity.setNull(i);
    } else {
      const n = this.toSlot(v);
      if (typeof n === 'number') {
        this.words[2 * i] = n >>> 0;
        this.words[2 * i + 1] = Math.floor(n / TWO_32) >>> 0;
      } else {
        if (n < INT64_MIN || n > INT64_MAX) throw new Misfit(v, 'does not fit in 64 bits');
        this.big[i] = n;
      }
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  /** Append a safe integer (no check). */
  appendSafe(n: number): void {
    const i = this.length;
    if (i === this.big.length) {
      this.words = grown(this.words, i * 2 + 2);
      this.big = new BigInt64Array(this.words.buffer);
    }
    this.words[2 * i] = n >>> 0;
    this.words[2 * i + 1] = Math.floor(n / TWO_32) >>> 0;
    this.validity.setValid(i);
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({ type: this.type, length, data: this.big.subarray(0, length), ...this.validity.take(length) } as never);
    this.words = new Uint32Array(Math.max(INITIAL, length) * 2);
    this.big = new BigInt64Array(this.words.buffer);
    this.length = 0;
    return data;
  }
}

function bigintSlot(v: unknown): number | bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw new Misfit(v, 'is not an integer (bigint)');
}

function durationSlot(v: unknown): number | bigint {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  throw new Misfit(v, 'is not a whole number of milliseconds');
}

function timeSlot(v: unknown): number | bigint {
  const us = typeof v === 'string' ? parseTimeMicros(v) : Number.NaN;
  if (Number.isNaN(us)) throw new Misfit(v, 'is not a time HH:MM:SS[.ffffff] (microseconds at most)');
  return us;
}

/** Timestamp slots by unit: 3 = ms, 6 = us, 9 = ns. */
function timestampSlot(digits: 3 | 6 | 9): (v: unknown) => number | bigint {
  const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
  const canonical: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
  const perMs = digits === 3 ? 1 : digits === 6 ? 1000 : 1_000_000;
  return (v) => {
    if (v instanceof Date) {
      const ms = v.getTime();
      if (Number.isNaN(ms)) throw new Misfit(v, 'is an invalid Date');
      const n = ms * perMs;
      return n < SAFE && n > -SAFE ? n : BigInt(ms) * BigInt(perMs);
    }
    if (typeof v === 'string' && digits !== 9 && scanCanonicalTimestamp(v, canonical) && canonical.fracLength <= digits) {
      const n = canonical.seconds * (digits === 3 ? 1000 : 1_000_000) + canonicalFracUnits(v, canonical, digits);
      if (n < SAFE && n > -SAFE) return n;
    }
    if (typeof v !== 'string' || !parseTimestamp(v, parts)) throw new Misfit(v, 'is not a timestamp (Date or text)');
    const { units, exact } = fracToUnits(parts.frac, digits);
    if (!exact) throw new Misfit(v, `has more fractional digits than the column's unit holds`);
    if (digits === 9) return BigInt(parts.seconds) * 1_000_000_000n + BigInt(units);
    const n = parts.seconds * (digits === 3 ? 1000 : 1_000_000) + units;
    return n < SAFE && n > -SAFE ? n : BigInt(parts.seconds) * BigInt(digits === 3 ? 1000 : 1_000_000) + BigInt(units);
  };
}

export class DateDayColumn extends NumberColumn {
  override append(v: unknown): void {
    if (v == null) return super.append(null);
    const days = typeof v === 'string' ? parseDateDays(v) : v instanceof Date ? dateToDays(v) : Number.NaN;
    if (Number.isNaN(days) || days < -2_147_483_648 || days > 2_147_483_647) {
      throw new Misfit(v, 'is not a valid date (YYYY-MM-DD text or Date)');
    }
    super.append(days);
  }
}

/** Decimal128/256 slots from exact decimal text (decimal columns) or bigints (int256 as Decimal256). */
export class DecimalColumn implements ColumnBuilder {
  private words: Uint32Array;
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly stride: number;
  private readonly toUnscaled: (v: unknown) => number | bigint;

  constructor(type: DataType, bitWidth: number, toUnscaled: (v: unknown) => number | bigint) {
    this.type = type;
    this.stride = bitWidth / 32;
    this.toUnscaled = toUnscaled;
    this.words = new Uint32Array(INITIAL * this.stride);
  }

  append(v: unknown): void {
    const i = this.length;
    const at = i * this.stride;
    if (at === this.words.length) this.words = grown(this.words, at + this.stride);
    if (v == null) {
      this.validity.setNull(i);
    } else {
      writeDecimalWords(this.words, at, this.stride, this.toUnscaled(v));
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  /** Append an unscaled value already known to fit (no check). */
  appendUnscaled(n: number): void {
    const i = this.length;
    const at = i * this.stride;
    if (at === this.words.length) this.words = grown(this.words, at + this.stride);
    writeDecimalWords(this.words, at, this.stride, n);
    this.validity.setValid(i);
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({
      type: this.type,
      length,
      data: this.words.subarray(0, length * this.stride),
      ...this.validity.take(length),
    } as never);
    this.words = new Uint32Array(Math.max(INITIAL, length) * this.stride);
    this.length = 0;
    return data;
  }
}

function decimalText(precision: number, scale: number): (v: unknown) => number | bigint {
  return (v) => {
    if (typeof v !== 'string') throw new Misfit(v, `is not decimal text (decimal(${precision}, ${scale}))`);
    const unscaled = canonicalUnscaled(v, precision, scale);
    if (unscaled === unscaled) return unscaled;
    const digits = unscaledDigits(v, precision, scale);
    const length = digits.charCodeAt(0) === 45 ? digits.length - 1 : digits.length;
    return length <= 15 ? Number(digits) : BigInt(digits);
  };
}

const DECIMAL256_LIMIT = 10n ** 76n;

function int256Decimal(v: unknown): bigint {
  if (typeof v !== 'bigint') throw new Misfit(v, 'is not a bigint');
  if (v >= DECIMAL256_LIMIT || v <= -DECIMAL256_LIMIT) {
    throw new Misfit(v, "has more than 76 digits: it does not fit Decimal256(76, 0); use int256As: 'utf8'");
  }
  return v;
}

/**
 * Utf8: each value's UTF-8 bytes are written as it is appended, into a buffer kept between batches
 * of a similar size; `finish` hands Arrow a copy of the filled part. Text read from a page
 * (`appendChars`) is copied char by char when it is ASCII with no control character, with no string
 * made. Nothing but the bytes outlives an append, so a page's values are not kept alive (and copied
 * by the garbage collector) until the batch ends.
 */
export class Utf8Column implements ColumnBuilder {
  private data = new Uint8Array(0);
  private bytes = 0;
  private offsets: Int32Array = new Int32Array(INITIAL + 1);
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly toText: (v: unknown) => string;

  constructor(type: DataType, toText: (v: unknown) => string) {
    this.type = type;
    this.toText = toText;
  }

  append(v: unknown): void {
    if (v != null) {
      if (!this.appendText(this.toText(v))) throw new Misfit(v, 'overflows the 2 GiB of a Utf8 batch: flush smaller batches');
      return;
    }
    this.validity.setNull(this.length);
    this.endValue();
  }

  /**
   * Append text as it is (no conversion by `toText`); false, with nothing appended, when it would
   * overflow the batch (`append` then says so about the value as the column received it).
   */
  appendText(s: string): boolean {
    if (!this.write(s)) return false;
    this.validity.setValid(this.length);
    this.endValue();
    return true;
  }

  /**
   * Append chars `at` to `end` of `s` when they are all ASCII and none a control character: the
   * value `appendText(s.slice(at, end))` appends, with no string made. False, with nothing appended,
   * otherwise (the caller then takes the text as a string).
   */
  appendChars(s: string, at: number, end: number): boolean {
    const start = this.bytes;
    if (start + (end - at) > MAX_UTF8_BYTES) return false;
    this.reserve(start + (end - at));
    const data = this.data;
    let b = start;
    for (let k = at; k < end; k++) {
      const c = s.charCodeAt(k);
      if (c >= 128 || c < 32) return false;
      data[b++] = c;
    }
    this.bytes = b;
    this.validity.setValid(this.length);
    this.endValue();
    return true;
  }

  /** Ends the value being appended (its validity set) at the bytes written so far. */
  private endValue(): void {
    const i = this.length;
    if (i + 1 === this.offsets.length) this.offsets = grown(this.offsets, i + 2);
    this.offsets[i + 1] = this.bytes;
    this.length = i + 1;
  }

  /** Writes `s`'s UTF-8 bytes after the ones written; false, with nothing written, past 2 GiB. */
  private write(s: string): boolean {
    const at = this.bytes;
    // A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, 2 units, is 4).
    const room = at + s.length * 3;
    if (room > this.data.length) {
      if (at + Buffer.byteLength(s, 'utf8') > MAX_UTF8_BYTES) return false;
      this.reserve(Math.min(room, MAX_UTF8_BYTES));
    }
    const data = this.data;
    const n = s.length;
    if (n <= SHORT_TEXT) {
      let b = at;
      for (let k = 0; k < n; k++) {
        const c = s.charCodeAt(k);
        if (c >= 128) return this.encode(s, at);
        data[b++] = c;
      }
      this.bytes = b;
      return true;
    }
    return this.encode(s, at);
  }

  /** Room for `bytes` bytes in all: the buffer doubles, up to what one batch can hold. */
  private reserve(bytes: number): void {
    if (bytes <= this.data.length) return;
    const next = new Uint8Array(Math.min(MAX_UTF8_BYTES, Math.max(this.data.length * 2, bytes, INITIAL * 16)));
    next.set(this.data.subarray(0, this.bytes));
    this.data = next;
  }

  private encode(s: string, at: number): boolean {
    const { written } = UTF8.encodeInto(s, this.data.subarray(at));
    if (at + written > MAX_UTF8_BYTES) return false;
    this.bytes = at + written;
    return true;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({
      type: this.type,
      length,
      valueOffsets: this.offsets.subarray(0, length + 1),
      data: this.data.slice(0, this.bytes),
      ...this.validity.take(length),
    } as never);
    // Kept for the next batch, unless this one was far smaller than the buffer: one outsized batch
    // does not pin its memory in a builder kept between pages.
    if (this.data.length > 4 * Math.max(this.bytes, INITIAL * 16)) this.data = new Uint8Array(0);
    this.offsets = new Int32Array(Math.max(INITIAL, length) + 1);
    this.length = 0;
    this.bytes = 0;
    return data;
  }
}

/** The bytes of one Utf8 batch: its offsets are int32. */
const MAX_UTF8_BYTES = 0x7fff_ffff;
/** Texts up to this length are copied char by char when ASCII; longer ones are encoded by `TextEncoder`. */
const SHORT_TEXT = 32;
const UTF8 = new TextEncoder();

function stringText(v: unknown): string {
  if (typeof v === 'string') return v;
  throw new Misfit(v, 'is not a string');
}

function int256Text(v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  throw new Misfit(v, 'is not a bigint');
}

export class BinaryColumn implements ColumnBuilder {
  private bytes = new Uint8Array(INITIAL * 16);
  /** `bytes` as a Buffer, for Node's native hex decoding. */
  private view = Buffer.from(this.bytes.buffer);
  private offsets: Int32Array = new Int32Array(INITIAL + 1);
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;

  constructor(type: DataType) {
    this.type = type;
  }

  append(v: unknown): void {
    const i = this.length;
    if (i + 1 === this.offsets.length) this.offsets = grown(this.offsets, i + 2);
    const at = this.offsets[i]!;
    if (v == null) {
      this.validity.setNull(i);
      this.offsets[i + 1] = at;
    } else {
      if (!(v instanceof Uint8Array)) throw new Misfit(v, 'is not a Uint8Array');
      if (at + v.length > 0x7fff_ffff) throw new Misfit(v, 'overflows the 2 GiB of a Binary batch: flush smaller batches');
      if (at + v.length > this.bytes.length) this.bytes = grown(this.bytes, at + v.length);
      this.bytes.set(v, at);
      this.offsets[i + 1] = at + v.length;
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  /**
   * Append the bytes of `0x` hex text of `byteLength` bytes (hexLength's answer) without making
   * them a Uint8Array first; false, with nothing appended, when they would overflow the batch.
   */
  appendHex(text: string, byteLength: number): boolean {
    const i = this.length;
    const at = this.offsets[i]!;
    if (at + byteLength > 0x7fff_ffff) return false;
    if (i + 1 === this.offsets.length) this.offsets = grown(this.offsets, i + 2);
    if (at + byteLength > this.bytes.length) this.bytes = grown(this.bytes, at + byteLength);
    if (this.view.buffer !== this.bytes.buffer) this.view = Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.length);
    this.view.write(text.slice(2), at, byteLength, 'hex');
    this.offsets[i + 1] = at + byteLength;
    this.validity.setValid(i);
    this.length = i + 1;
    return true;
  }

  finish(): Data {
    const length = this.length;
    const data = makeData({
      type: this.type,
      length,
      valueOffsets: this.offsets.subarray(0, length + 1),
      data: this.bytes.subarray(0, this.offsets[length]),
      ...this.validity.take(length),
    } as never);
    this.bytes = new Uint8Array(Math.max(INITIAL * 16, this.offsets[length]!));
    this.offsets = new Int32Array(Math.max(INITIAL, length) + 1);
    this.length = 0;
    return data;
  }
}

/** List<T> from JS arrays, and Map<K, V> (a list of key/value structs) from Maps. */
class ListColumn implements ColumnBuilder {
  private offsets: Int32Array = new Int32Array(INITIAL + 1);
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly child: ColumnBuilder;
  private readonly map: { key: ColumnBuilder; value: ColumnBuilder; type: DataType } | undefined;

  constructor(type: DataType, child: ColumnBuilder, map?: { key: ColumnBuilder; value: ColumnBuilder; type: DataType }) {
    this.type = type;
    this.child = child;
    this.map = map;
  }

  append(v: unknown): void {
    const i = this.length;
    if (i + 1 === this.offsets.length) this.offsets = grown(this.offsets, i + 2);
    let end = this.offsets[i]!;
    if (v == null) {
      this.validity.setNull(i);
    } else if (this.map === undefined) {
      if (!Array.isArray(v)) throw new Misfit(v, 'is not an array');
      for (let j = 0; j < v.length; j++) {
        try {
          this.child.append(v[j]);
        } catch (error) {
          throw atPath(error, `[${j}]`);
        }
      }
      end += v.length;
      this.validity.setValid(i);
    } else {
      const entries = v instanceof Map ? v : isPlainObject(v) ? new Map(Object.entries(v)) : undefined;
      if (entries === undefined) throw new Misfit(v, 'is not a Map');
      for (const [key, value] of entries) {
        if (key == null) throw new Misfit(key, 'is a null map key');
        try {
          this.map.key.append(key);
        } catch (error) {
          throw atPath(error, `{${String(key)}}`);
        }
        try {
          this.map.value.append(value);
        } catch (error) {
          throw atPath(error, `[${JSON.stringify(String(key))}]`);
        }
      }
      end += entries.size;
      this.validity.setValid(i);
    }
    this.offsets[i + 1] = end;
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const valueOffsets = this.offsets.subarray(0, length + 1);
    const child =
      this.map === undefined
        ? this.child.finish()
        : makeData({
            type: this.map.type as Struct,
            length: valueOffsets[length]!,
            nullCount: 0,
            children: [this.map.key.finish(), this.map.value.finish()],
          });
    const data = makeData({ type: this.type, length, valueOffsets, child, ...this.validity.take(length) } as never);
    this.offsets = new Int32Array(Math.max(INITIAL, length) + 1);
    this.length = 0;
    return data;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof Date);
}

/** Struct from row objects keyed by field name; a null row is null in every child too. */
class StructColumn implements ColumnBuilder {
  private length = 0;
  private readonly validity = new Validity();
  private readonly type: DataType;
  private readonly names: string[];
  private readonly children: ColumnBuilder[];

  constructor(type: DataType, names: string[], children: ColumnBuilder[]) {
    this.type = type;
    this.names = names;
    this.children = children;
  }

  append(v: unknown): void {
    const i = this.length;
    if (v == null) {
      for (const child of this.children) child.append(null);
      this.validity.setNull(i);
    } else {
      if (!isPlainObject(v)) throw new Misfit(v, 'is not a row object');
      for (let j = 0; j < this.children.length; j++) {
        try {
          this.children[j]!.append(v[this.names[j]!]);
        } catch (error) {
          throw atPath(error, `.${this.names[j]}`);
        }
      }
      this.validity.setValid(i);
    }
    this.length = i + 1;
  }

  finish(): Data {
    const length = this.length;
    const children = this.children.map((c) => c.finish());
    const data = makeData({ type: this.type as Struct, length, children, ...this.validity.take(length) });
    this.length = 0;
    return data;
  }
}

/**
 * The builder of a column of SQL type `sql` into Arrow field `field` (as `arrowField`
 * made it). The Arrow type decides the representation where types.md allows a choice
 * (uint256/int256 as Utf8 or Decimal256).
 */
export function columnBuilder(sql: SqlType, field: Field): ColumnBuilder {
  return (BUILDERS[sql.kind] as BuilderOf<SqlKind>)(sql, field.type as DataType);
}

type BuilderOf<K extends SqlKind> = (sql: SqlOf<K>, type: DataType) => ColumnBuilder;

export const INT32_RANGE = [-2_147_483_648, 2_147_483_647] as const;
const textColumn = (_sql: SqlType, type: DataType): ColumnBuilder => new Utf8Column(type, stringText);

/** The builder of each SQL type's column, from the Arrow type its field has. */
const BUILDERS: { [K in SqlKind]: BuilderOf<K> } = {
  boolean: (_sql, type) => new BoolColumn(type),
  tinyint: (_sql, type) => new NumberColumn(type, Int8Array, intCheck(-128, 127, 'tinyint')),
  smallint: (_sql, type) => new NumberColumn(type, Int16Array, intCheck(-32_768, 32_767, 'smallint')),
  integer: (_sql, type) => new NumberColumn(type, Int32Array, intCheck(...INT32_RANGE, 'integer')),
  interval_year_to_month: (_sql, type) => new NumberColumn(type, Int32Array, intCheck(...INT32_RANGE, 'months')),
  real: (_sql, type) => new NumberColumn(type, Float32Array, floatCheck),
  double: (_sql, type) => new NumberColumn(type, Float64Array, floatCheck),
  bigint: (_sql, type) => new Int64Column(type, bigintSlot),
  uint256: (_sql, type) => wideIntegerColumn(type),
  int256: (_sql, type) => wideIntegerColumn(type),
  decimal: (sql, type) => new DecimalColumn(type, sql.precision <= 38 ? 128 : 256, decimalText(sql.precision, sql.scale)),
  varbinary: (_sql, type) => new BinaryColumn(type),
  date: (_sql, type) => new DateDayColumn(type, Int32Array, intCheck(...INT32_RANGE, 'date')),
  time: (_sql, type) => new Int64Column(type, timeSlot),
  timestamp: (sql, type) => new Int64Column(type, timestampSlot(sql.precision <= 3 ? 3 : sql.precision <= 6 ? 6 : 9)),
  interval_day_to_second: (_sql, type) => new Int64Column(type, durationSlot),
  array: (sql, type) => new ListColumn(type, columnBuilder(sql.element, type.children[0]!)),
  map: mapColumn,
  row: (sql, type) =>
    new StructColumn(
      type,
      sql.fields.map((f) => f.name),
      sql.fields.map((f, j) => columnBuilder(f.type, type.children[j]!)),
    ),
  varchar: textColumn,
  char: textColumn,
  json: textColumn,
  uuid: textColumn,
  ipaddress: textColumn,
  unknown: textColumn,
};

/** uint256 and int256: Decimal256 when the field is one, else their text. */
function wideIntegerColumn(type: DataType): ColumnBuilder {
  return DataType.isDecimal(type) ? new DecimalColumn(type, 256, int256Decimal) : new Utf8Column(type, int256Text);
}

/** A map is a list of key/value structs: one child builder each for the keys and the values. */
function mapColumn(sql: SqlOf<'map'>, type: DataType): ColumnBuilder {
  const entries = (type as Map_).children[0]!;
  const [keyField, valueField] = entries.type.children as Field[];
  const key = columnBuilder(sql.key, keyField!);
  const value = columnBuilder(sql.value, valueField!);
  return new ListColumn(type, key, { key, value, type: entries.type as DataType });
}
