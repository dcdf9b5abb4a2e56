import { type Data, type DataType, type Field, makeVector, Type, TimeUnit, DateUnit, Precision } from 'apache-arrow';
import { dateText } from './dateText.ts';

/**
 * Exact text for every Arrow value, per the column type mapping (docs/library.md, "Column types"): CSV cells and NDJSON values
 * come from here so both formats agree. Values are read from the Arrow buffers, never through
 * `Vector.get`, which turns int64 timestamps into float milliseconds and decimals into objects.
 */
export interface ValueText {
  /** Text of the value at `index` (CSV cell), or null for SQL NULL. Nested values are JSON. */
  text(data: Data, index: number): string | null;
  /** JSON text of the value at `index`; `null` for SQL NULL. */
  json(data: Data, index: number): string;
}

type Reader = (data: Data, index: number) => string;

export function valueText(field: Field): ValueText {
  return compile(field.type);
}

function compile(type: DataType): ValueText {
  const { text, json } = readers(type);
  return {
    text: (data, index) => (data.getValid(index) ? text(data, index) : null),
    json: (data, index) => (data.getValid(index) ? json(data, index) : 'null'),
  };
}

const quote = (s: string): string => JSON.stringify(s);

/** The text and the JSON of one column's values. */
interface Readers {
  text: Reader;
  json: Reader;
}

function readers(type: DataType): Readers {
  return (READERS.get(type.typeId) ?? otherReaders)(type);
}

/** The readers of each Arrow type (by its type id), made once per column from its type. */
const READERS: ReadonlyMap<Type, (type: DataType) => Readers> = new Map<Type, (type: DataType) => Readers>([
  [Type.Null, () => same(() => 'null')],
  [Type.Bool, () => same(boolText)],
  [Type.Int, () => same((d, i) => String((d.values as ArrayLike<number | bigint>)[i]))],
  [Type.Float, floatReaders],
  [Type.Decimal, decimalReaders],
  [Type.Utf8, () => quoted((d, i) => utf8.decode(bytesAt(d, i)))],
  [Type.LargeUtf8, () => quoted((d, i) => utf8.decode(bytesAt(d, i)))],
  [Type.Binary, () => quoted((d, i) => hex(bytesAt(d, i)))],
  [Type.LargeBinary, () => quoted((d, i) => hex(bytesAt(d, i)))],
  [Type.FixedSizeBinary, fixedSizeBinaryReaders],
  [Type.Date, dateReaders],
  [Type.Time, timeReaders],
  [Type.Timestamp, timestampReaders],
  [Type.Duration, () => same((d, i) => String((d.values as BigInt64Array)[i]))],
  [Type.List, listReaders],
  [Type.LargeList, listReaders],
  [Type.Map, mapReaders],
  [Type.FixedSizeList, fixedSizeListReaders],
  [Type.Struct, structReaders],
]);

function boolText(d: Data, i: number): string {
  const bit = d.offset + i;
  return ((d.values as Uint8Array)[bit >> 3]! >> (bit & 7)) & 1 ? 'true' : 'false';
}

function floatReaders(type: DataType): Readers {
  const precision = (type as unknown as { precision: Precision }).precision;
  const read: (v: number) => string = precision === Precision.SINGLE ? float32Text : float64Text;
  if (precision === Precision.HALF) {
    const get = (d: Data, i: number): number => makeVector(d).get(i) as number;
    return { text: (d, i) => read(get(d, i)), json: (d, i) => floatJson(get(d, i), read) };
  }
  return {
    text: (d, i) => read((d.values as Float32Array | Float64Array)[i]!),
    json: (d, i) => floatJson((d.values as Float32Array | Float64Array)[i]!, read),
  };
}

function decimalReaders(type: DataType): Readers {
  const { scale, bitWidth } = type as unknown as { scale: number; bitWidth: number };
  const words = bitWidth / 32;
  // JSON numbers with 20+ significant digits are rounded by most readers: keep them strings.
  return quoted((d, i) => decimalText(d.values as Uint32Array, i * words, words, scale));
}

function fixedSizeBinaryReaders(type: DataType): Readers {
  const width = (type as unknown as { byteWidth: number }).byteWidth;
  return quoted((d, i) => hex((d.values as Uint8Array).subarray(i * width, (i + 1) * width)));
}

function dateReaders(type: DataType): Readers {
  const unit = (type as unknown as { unit: DateUnit }).unit;
  return quoted(
    unit === DateUnit.DAY
      ? (d, i) => dateText((d.values as Int32Array)[i]!)
      : (d, i) => dateText(Math.floor(Number((d.values as unknown as ArrayLike<bigint | number>)[i]) / 86_400_000)),
  );
}

function timeReaders(type: DataType): Readers {
  const unit = (type as unknown as { unit: TimeUnit }).unit;
  return quoted((d, i) => timeOfDay(BigInt((d.values as ArrayLike<number | bigint>)[i]!), unit));
}

function timestampReaders(type: DataType): Readers {
  const { unit, timezone } = type as unknown as { unit: TimeUnit; timezone: string | null };
  // Values are UTC instants whenever a zone is set, so `Z` is exact for any zone name.
  const suffix = timezone ? 'Z' : '';
  return quoted((d, i) => isoTimestamp((d.values as BigInt64Array)[i]!, unit) + suffix);
}

/** A list as a JSON array of its items' JSON; the item's readers are compiled at the first value. */
function listReaders(type: DataType): Readers {
  let item: ValueText | undefined;
  return same((d, i) => {
    const offsets = d.valueOffsets as ArrayLike<number | bigint>;
    const end = Number(offsets[i + 1]);
    const inner = d.children[0]!;
    item ??= compile((type.children[0] as Field).type);
    const parts: string[] = [];
    for (let j = Number(offsets[i]); j < end; j++) parts.push(item.json(inner, j));
    return `[${parts.join(',')}]`;
  });
}

/** A map as a JSON object: each key's text as a name, each value's JSON. */
function mapReaders(type: DataType): Readers {
  let entries: { key: ValueText; value: ValueText } | undefined;
  return same((d, i) => {
    const offsets = d.valueOffsets as ArrayLike<number | bigint>;
    const end = Number(offsets[i + 1]);
    entries ??= mapEntries((type.children[0] as Field).type);
    const [keys, values] = d.children[0]!.children as [Data, Data];
    const parts: string[] = [];
    for (let j = Number(offsets[i]); j < end; j++) {
      parts.push(`${quote(entries.key.text(keys, j) ?? 'null')}:${entries.value.json(values, j)}`);
    }
    return `{${parts.join(',')}}`;
  });
}

function fixedSizeListReaders(type: DataType): Readers {
  const size = (type as unknown as { listSize: number }).listSize;
  let item: ValueText | undefined;
  return same((d, i) => {
    item ??= compile((type.children[0] as Field).type);
    const parts: string[] = [];
    for (let j = i * size; j < (i + 1) * size; j++) parts.push(item.json(d.children[0]!, j));
    return `[${parts.join(',')}]`;
  });
}

function structReaders(type: DataType): Readers {
  const fields = type.children as Field[];
  let members: ValueText[] | undefined;
  return same((d, i) => {
    members ??= fields.map((f) => compile(f.type));
    const parts = fields.map((f, k) => `${quote(f.name)}:${members![k]!.json(d.children[k]!, i)}`);
    return `{${parts.join(',')}}`;
  });
}

/** Dictionary, unions, intervals: rare here; Vector.get is exact enough for them. */
function otherReaders(): Readers {
  const get = (d: Data, i: number): unknown => makeVector(d).get(i);
  return {
    text: (d, i) => {
      const v = get(d, i);
      return typeof v === 'string' ? v : jsonOfUnknown(v);
    },
    json: (d, i) => jsonOfUnknown(get(d, i)),
  };
}

/** A value whose JSON is its text as a JSON string. */
function quoted(read: Reader): Readers {
  return { text: read, json: (d, i) => quote(read(d, i)) };
}

function same(read: Reader): Readers {
  return { text: read, json: read };
}

function mapEntries(entryType: DataType): { key: ValueText; value: ValueText } {
  const [key, value] = entryType.children as [Field, Field];
  return { key: compile(key.type), value: compile(value.type) };
}

function jsonOfUnknown(value: unknown): string {
  return (
    JSON.stringify(value, (_k, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (v instanceof Map) return Object.fromEntries(v);
      return v;
    }) ?? 'null'
  );
}

// ignoreBOM: a value that begins with U+FEFF keeps it (the default decoder drops it as a byte order mark).
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

function bytesAt(d: Data, i: number): Uint8Array {
  const offsets = d.valueOffsets as ArrayLike<number | bigint>;
  return (d.values as Uint8Array).subarray(Number(offsets[i]), Number(offsets[i + 1]));
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

export function hex(bytes: Uint8Array): string {
  let out = '0x';
  for (let k = 0; k < bytes.length; k++) out += HEX[bytes[k]!];
  return out;
}

function float64Text(v: number): string {
  // String() is the shortest text that round-trips, and already spells NaN and Infinity.
  return Object.is(v, -0) ? '-0' : String(v);
}

function float32Text(v: number): string {
  if (!Number.isFinite(v) || v === 0) return float64Text(v);
  for (let p = 1; p < 9; p++) {
    const candidate = Number(v.toPrecision(p));
    if (Math.fround(candidate) === v) return String(candidate);
  }
  return String(v);
}

function floatJson(v: number, read: (v: number) => string): string {
  return Number.isFinite(v) ? read(v) : quote(read(v));
}

export function decimalText(words: Uint32Array, at: number, count: number, scale: number): string {
  // Fast path, no BigInt: non-negative values below 2^53 (most amounts).
  let small = words[at + 1]! < 0x20_0000;
  for (let k = 2; small && k < count; k++) small = words[at + k] === 0;
  if (small) return withScale(String(words[at + 1]! * 0x1_0000_0000 + words[at]!), scale, false);
  let value = 0n;
  for (let k = count - 1; k >= 0; k--) value = (value << 32n) | BigInt(words[at + k]!);
  if (words[at + count - 1]! & 0x8000_0000) value -= 1n << BigInt(count * 32);
  const negative = value < 0n;
  return withScale((negative ? -value : value).toString(), scale, negative);
}

function withScale(digits: string, scale: number, negative: boolean): string {
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  } else if (scale < 0) {
    digits += '0'.repeat(-scale);
  }
  return negative ? `-${digits}` : digits;
}

const PER_SECOND: Record<TimeUnit, bigint> = {
  [TimeUnit.SECOND]: 1n,
  [TimeUnit.MILLISECOND]: 1_000n,
  [TimeUnit.MICROSECOND]: 1_000_000n,
  [TimeUnit.NANOSECOND]: 1_000_000_000n,
};
const FRACTION_DIGITS: Record<TimeUnit, number> = {
  [TimeUnit.SECOND]: 0,
  [TimeUnit.MILLISECOND]: 3,
  [TimeUnit.MICROSECOND]: 6,
  [TimeUnit.NANOSECOND]: 9,
};

function splitSeconds(value: bigint, unit: TimeUnit): [seconds: bigint, fraction: string] {
  const per = PER_SECOND[unit];
  let seconds = value / per;
  let rest = value % per;
  if (rest < 0n) {
    rest += per;
    seconds -= 1n;
  }
  const digits = FRACTION_DIGITS[unit];
  return [seconds, digits === 0 ? '' : `.${rest.toString().padStart(digits, '0')}`];
}

/** The ISO years `Date.toISOString` writes with four digits: 0000-01-01 to 9999-12-31, in ms. */
const FOUR_DIGIT_YEARS_MS = [-62_167_219_200_000, 253_402_300_800_000] as const;

/**
 * ISO 8601 without zone, with as many fraction digits as the unit carries. Years outside
 * 0000-9999 are written as DuckDB reads them (`10000-01-01T...`, `-0001-...`), not in ISO's
 * expanded `+010000` form, and through the whole range of the unit (a JS Date stops at 275760).
 */
export function isoTimestamp(value: bigint, unit: TimeUnit): string {
  if (unit === TimeUnit.MILLISECOND) {
    const ms = Number(value);
    if (ms >= FOUR_DIGIT_YEARS_MS[0] && ms < FOUR_DIGIT_YEARS_MS[1]) return new Date(ms).toISOString().slice(0, -1);
  }
  if (unit === TimeUnit.MICROSECOND && value >= 0n && value < 9_007_199_254_740_992n) {
    // Fast path without BigInt division: exact while the value fits a double (years 1970-2255).
    const us = Number(value);
    const micros = us % 1_000_000;
    return `${new Date((us - micros) / 1000).toISOString().slice(0, -5)}.${String(micros).padStart(6, '0')}`;
  }
  const [seconds, fraction] = splitSeconds(value, unit);
  const s = Number(seconds);
  const days = Math.floor(s / 86_400);
  return `${dateText(days)}T${clock(s - days * 86_400)}${fraction}`;
}

/** `HH:MM:SS` of a second of the day. */
function clock(s: number): string {
  const hh = String(Math.floor(s / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return `${hh}:${mm}:${ss}`;
}

function timeOfDay(value: bigint, unit: TimeUnit): string {
  const [seconds, fraction] = splitSeconds(value, unit);
  return `${clock(Number(seconds))}${fraction}`;
}
