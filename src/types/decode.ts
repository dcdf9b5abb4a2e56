import { INT256_SAFE_DIGITS, isCanonicalInteger, normalizeDecimal, UINT256_SAFE_DIGITS } from './decimal.ts';
import { Misfit, ValueDecodeError, atPath } from './errors.ts';
import { generated } from './generated.ts';
import { stringifyLossless } from './json.ts';
import { parseType } from './parse.ts';
import { formatType, type SqlKind, type SqlOf, type SqlType } from './sqlType.ts';
import {
  isTimeText,
  dateText,
  parseDateDays,
  parseIntervalDayToSecondMs,
  parseIntervalYearToMonth,
  parseTimestamp,
  scanFittingTimestamp,
  canonicalFracUnits,
  fracToUnits,
  timestampMillis,
  type CanonicalTimestamp,
  MS_PER_DAY,
  type TimestampParts,
} from './temporal.ts';

/**
 * Decoding JSON wire values (protocol.md section 5) into the JS values of types.md.
 *
 * Wire forms accepted, per type (`null`, and a missing key, are SQL NULL everywhere):
 * - boolean: `true`/`false`. tinyint/smallint/integer: integral numbers in range.
 * - bigint: numbers that are safe integers, or bigints from {@link parseJsonLossless};
 *   an unsafe integer as a plain number means the page was parsed lossily: an error.
 * - uint256/int256: decimal strings, safe-integer numbers, bigints; range-checked.
 * - real/double: numbers, bigints, and the strings `NaN`, `Infinity`, `-Infinity`.
 * - decimal(p, s): decimal strings or numbers; normalized to exactly `s` fraction digits.
 * - varchar/char/uuid/ipaddress: strings. json: its text (a non-string value is re-serialized).
 * - varbinary: `0x` + hex. date: `YYYY-MM-DD`. time(p): `HH:MM:SS[.f]`.
 * - timestamp(p): `YYYY-MM-DD HH:MM:SS[.f]` (also `T`); with time zone the same plus
 *   ` UTC`, `Z` or `±HH:MM`.
 * - interval day to second: milliseconds as a number, or text `[-]D HH:MM:SS[.fff]`
 *   (Trino's form; also without the day part).
 * - interval year to month: months as a number, or text `[-]Y-M` (Trino's form).
 * - array: JSON arrays. map: JSON objects (keys decoded from their text) or `[key, value]`
 *   pairs. row: JSON objects keyed by field name (or arrays, positionally).
 * - unknown types: strings as they are, other values as JSON text.
 */

/** Options of {@link compileRowDecoder}. */
export interface DecodeOptions {
  /** `date` columns as `YYYY-MM-DD` strings (default) or as Dates at UTC midnight. */
  dates?: 'string' | 'date';
  /**
   * `auto` (default) follows types.md: Date for timestamp(p <= 3) and for every
   * `with time zone`, exact string for timestamp(p > 3). A zoneless timestamp's Date has
   * the wall-clock time as its UTC fields (`2026-11-20 10:15:30` is `2026-11-20T10:15:30Z`);
   * a Date holds milliseconds, so `timestamp(6) with time zone` loses its last three digits.
   * Exact for every timestamp: `micros` or `nanos`, a bigint of microseconds or nanoseconds
   * since the epoch (UTC; a zoneless one's wall clock read as UTC), which is what
   * `Temporal.Instant.fromEpochNanoseconds` takes; a digit the unit cannot hold is an error, not
   * dropped. `string` keeps the wire text: what the Arrow batch path wants.
   */
  timestamps?: TimestampMode;
}

/** How timestamps come out of the decoders: see {@link DecodeOptions.timestamps}. */
export type TimestampMode = 'auto' | 'string' | 'micros' | 'nanos';

/** One value from the wire to its JS value; throws a Misfit when it does not fit. */
export type ValueDecoder = (value: unknown) => unknown;

/** A column as the service describes it: name and `column_types` entry. */
export interface ColumnSpec {
  name: string;
  type: string;
}

/** Whether `columns` are the columns a page's `column_names` and `column_types` name, in order. */
export function sameColumns(columns: readonly ColumnSpec[], names: readonly string[], types: readonly string[]): boolean {
  return columns.length === names.length && columns.every((c, i) => c.name === names[i] && c.type === types[i]);
}

/** A decoded row: keyed by column name, in `column_names` order. */
export type Row = Record<string, unknown>;

/**
 * Decode one raw row (an object keyed by column name, as on a JSON page) into typed JS
 * values. `rowOffset` is the row's offset in the whole result, for error messages.
 * Throws {@link ValueDecodeError}.
 */
export type RowDecoder = (raw: unknown, rowOffset: number) => Row;

/**
 * Compile the row decoder of a result's columns once; call it for every row.
 * Types are parsed here, never per row.
 */
export function compileRowDecoder(columns: readonly ColumnSpec[], options: DecodeOptions = {}): RowDecoder {
  const decoders = columns.map((c) => compileDecoder(parseType(c.type), options));
  const perColumn = columnByColumn(columns, decoders);
  const whole = wholeRow(
    columns.map((c) => c.name),
    decoders,
  );
  if (whole === undefined) return perColumn;
  return (raw, rowOffset) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return perColumn(raw, rowOffset);
    try {
      return whole(raw);
    } catch (error) {
      // Decoders are pure: the column-by-column pass meets the same misfit and names its column.
      perColumn(raw, rowOffset);
      throw error;
    }
  };
}

/**
 * A function that builds the decoded row as one object literal (`{"id": d0(r["id"]), ...}`):
 * the object is made with all its properties at once, in one shape, and every decoder has a call
 * site of its own. Undefined when a column is named `__proto__` (a literal would set the
 * prototype) or code cannot be generated here; the column-by-column decoder serves then.
 */
function wholeRow(names: readonly string[], decoders: readonly ValueDecoder[]): ((raw: object) => Row) | undefined {
  if (names.includes('__proto__')) return undefined;
  const params = decoders.map((_, i) => `d${i}`);
  const body = names.map((name, i) => `${JSON.stringify(name)}: d${i}(r[${JSON.stringify(name)}])`).join(',\n');
  const make = generated(params, `return function decodeRow(r) {\nreturn {\n${body}\n};\n};`);
  return make === undefined ? undefined : (make(...decoders) as (raw: object) => Row);
}

/** Decodes a row column by column, naming the column of a value that does not fit. */
function columnByColumn(columns: readonly ColumnSpec[], decoders: readonly ValueDecoder[]): RowDecoder {
  const names = columns.map((c) => c.name);
  const n = columns.length;
  const assign = makeAssigner(names);
  return (raw, rowOffset) => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      throw new ValueDecodeError({
        column: '*',
        type: 'row',
        rowOffset,
        path: '',
        value: raw,
        reason: 'is not a row object',
      });
    }
    const source = raw as Record<string, unknown>;
    const out: Row = {};
    for (let i = 0; i < n; i++) {
      const name = names[i]!;
      const value = source[name];
      try {
        assign(out, name, decoders[i]!(value));
      } catch (error) {
        throw toDecodeError(error, columns[i]!, rowOffset, value);
      }
    }
    return out;
  };
}

function toDecodeError(error: unknown, column: ColumnSpec, rowOffset: number, value: unknown): unknown {
  if (!(error instanceof Misfit)) return error;
  return new ValueDecodeError({
    column: column.name,
    type: column.type,
    rowOffset,
    path: error.path,
    value: error.value === undefined ? value : error.value,
    reason: error.message,
  });
}

/**
 * Plain assignment, except for a key `__proto__`, which would set the prototype instead of
 * a property; checked once per compile, so ordinary rows keep the fast path.
 */
function makeAssigner(names: readonly string[]): (o: Row, k: string, v: unknown) => void {
  if (!names.includes('__proto__')) {
    return (o, k, v) => {
      o[k] = v;
    };
  }
  return (o, k, v) => {
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
}

/**
 * Whether the decoder of `type` gives a string value back as it is (the text types, and json and
 * unknown as text). Every other decoder takes only text of a fixed grammar (digits, dates, hex).
 */
export function keepsText(type: SqlType): boolean {
  switch (type.kind) {
    case 'varchar':
    case 'char':
    case 'uuid':
    case 'ipaddress':
    case 'json':
    case 'unknown':
      return true;
    default:
      return false;
  }
}

/** The decoder of one SQL type (nested types compile their children once, here). */
export function compileDecoder(type: SqlType, options: DecodeOptions = {}): ValueDecoder {
  return (DECODERS[type.kind] as DecoderOf<SqlKind>)(type, options);
}

type DecoderOf<K extends SqlKind> = (type: SqlOf<K>, options: DecodeOptions) => ValueDecoder;

/** The decoder of each SQL type, from the type and the options. */
const DECODERS: { [K in SqlKind]: DecoderOf<K> } = {
  boolean: () => decodeBoolean,
  tinyint: () => intDecoder(-128, 127, 'tinyint'),
  smallint: () => intDecoder(-32_768, 32_767, 'smallint'),
  integer: () => intDecoder(-2_147_483_648, 2_147_483_647, 'integer'),
  bigint: () => bigIntDecoder(-(2n ** 63n), 2n ** 63n - 1n, 'bigint'),
  uint256: () => bigIntDecoder(0n, 2n ** 256n - 1n, 'uint256'),
  int256: () => bigIntDecoder(-(2n ** 255n), 2n ** 255n - 1n, 'int256'),
  real: () => decodeFloat,
  double: () => decodeFloat,
  decimal: (type) => decimalDecoder(type.precision, type.scale),
  varchar: () => decodeString,
  char: () => decodeString,
  uuid: () => decodeString,
  ipaddress: () => decodeString,
  json: () => decodeText,
  unknown: () => decodeText,
  varbinary: () => decodeVarbinary,
  date: (_type, options) => (options.dates === 'date' ? decodeDateAsDate : decodeDateAsString),
  time: () => decodeTime,
  timestamp: (type, options) => timestampDecoder(type.precision, type.withTimeZone, options.timestamps ?? 'auto'),
  interval_day_to_second: () => decodeIntervalDayToSecond,
  interval_year_to_month: () => decodeIntervalYearToMonth,
  array: (type, options) => arrayDecoder(compileDecoder(type.element, options)),
  map: (type, options) => mapDecoder(type, options),
  row: (type, options) => rowDecoder(type, options),
};

function decodeBoolean(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'boolean') return v;
  throw new Misfit(v, 'is not a boolean');
}

function intDecoder(min: number, max: number, name: string): ValueDecoder {
  return (v) => {
    if (v == null) return null;
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return v;
    const inRangeKind = (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
    throw new Misfit(v, inRangeKind ? `is out of range for ${name}` : `is not an integer (${name})`);
  };
}

const TOO_LONG = 90;
const INTEGER_TEXT = /^-?\d+$/;

function bigIntDecoder(min: bigint, max: bigint, name: string): ValueDecoder {
  const acceptsText = name !== 'bigint';
  const signed = name !== 'uint256';
  const safeDigits = name === 'uint256' ? UINT256_SAFE_DIGITS : INT256_SAFE_DIGITS;
  return (v) => {
    if (v == null) return null;
    // In range for sure: a safe integer (non-negative for uint256), and for the 256-bit types
    // canonical integer text short enough; no regex, no bigint comparisons.
    if (typeof v === 'number') {
      if (Number.isSafeInteger(v) && (signed || v >= 0)) return BigInt(v);
    } else if (acceptsText && typeof v === 'string' && isCanonicalInteger(v, signed, safeDigits)) {
      return BigInt(v);
    }
    let n: bigint;
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) {
        throw new Misfit(
          v,
          Number.isInteger(v)
            ? 'is an integer beyond 2^53 parsed as a double, maybe rounded (parse pages with parseJsonLossless)'
            : `is not an integer (${name})`,
        );
      }
      n = BigInt(v);
    } else if (typeof v === 'bigint') {
      n = v;
    } else if (acceptsText && typeof v === 'string' && v.length < TOO_LONG && INTEGER_TEXT.test(v)) {
      n = BigInt(v);
    } else {
      throw new Misfit(v, `is not an integer (${name})`);
    }
    if (n < min || n > max) return outOfRange(v, name);
    return n;
  };
}

function outOfRange(v: unknown, name: string): never {
  throw new Misfit(v, `is out of range for ${name}`);
}

function decodeFloat(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v === 'NaN') return Number.NaN;
  if (v === 'Infinity') return Number.POSITIVE_INFINITY;
  if (v === '-Infinity') return Number.NEGATIVE_INFINITY;
  throw new Misfit(v, 'is not a floating-point number');
}

function decimalDecoder(precision: number, scale: number): ValueDecoder {
  return (v) => {
    if (v == null) return null;
    if (typeof v === 'string') return normalizeDecimal(v, precision, scale);
    if (typeof v === 'bigint' || (typeof v === 'number' && Number.isFinite(v))) {
      return normalizeDecimal(String(v), precision, scale);
    }
    throw new Misfit(v, `is not a decimal(${precision}, ${scale})`);
  };
}

function decodeString(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'string') return v;
  throw new Misfit(v, 'is not a string');
}

function decodeText(v: unknown): unknown {
  if (v == null) return null;
  return typeof v === 'string' ? v : stringifyLossless(v);
}

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

function decodeVarbinary(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v !== 'string' || !HEX.test(v)) throw new Misfit(v, 'is not 0x-prefixed hex (varbinary)');
  const bytes = Buffer.from(v.slice(2), 'hex');
  // A plain Uint8Array, not a Buffer view into Node's shared pool.
  return new Uint8Array(bytes);
}

function decodeDateAsString(v: unknown): unknown {
  if (v == null) return null;
  const days = typeof v === 'string' ? parseDateDays(v) : Number.NaN;
  if (Number.isNaN(days)) throw new Misfit(v, 'is not a valid date (YYYY-MM-DD)');
  // Years 0000-9999 arrive in the canonical form; others (`0044-03-15 (BC)`, 7-digit years) are rewritten to it.
  return (v as string).length === 10 ? v : dateText(days);
}

function decodeDateAsDate(v: unknown): unknown {
  if (v == null) return null;
  const days = typeof v === 'string' ? parseDateDays(v) : Number.NaN;
  if (Number.isNaN(days)) throw new Misfit(v, 'is not a valid date (YYYY-MM-DD)');
  if (!(Math.abs(days * MS_PER_DAY) <= 8.64e15)) throw new Misfit(v, 'is outside the range of a JS Date (years -271821 to 275760; read dates as strings)');
  return new Date(days * MS_PER_DAY);
}

function decodeTime(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'string' && isTimeText(v)) return v;
  throw new Misfit(v, 'is not a valid time (HH:MM:SS[.fraction])');
}

/** Whether a timestamp column's JS value is a Date (else its text or an epoch count); see the type table. */
function timestampAsDate(precision: number, withTimeZone: boolean, mode: TimestampMode): boolean {
  return mode === 'auto' && (withTimeZone || precision <= 3);
}

/**
 * The Date of a timestamp in the service's own text at `s[at, end)`, read at fixed positions with
 * no string made; undefined for any other text (or a Date out of range), which the decoder's
 * general path then reads or rejects.
 */
function canonicalTimestampDate(s: string, at: number, end: number, precision: number, withTimeZone: boolean, canonical: CanonicalTimestamp): Date | undefined {
  if (!scanFittingTimestamp(s, canonical, precision, withTimeZone, at, end)) return undefined;
  const ms = canonical.seconds * 1000 + canonicalFracUnits(s, canonical, 3);
  return Math.abs(ms) <= 8.64e15 ? new Date(ms) : undefined;
}

/**
 * For rows read from a page's text: a reader that takes a column's value straight from the text
 * (`s`, start, end: the string without its quotes) into `out.value` and returns true, or returns
 * false to leave it to the column's decoder as a string. Offered where that saves work: timestamps
 * decoded as Date, whose text need not become a string first (some 10% of reading rows from text).
 * What it takes is exactly what the decoder makes of the same text.
 */
export function textValueReader(type: SqlType, options: DecodeOptions, out: { value: unknown }): ((s: string, at: number, end: number) => boolean) | undefined {
  if (type.kind !== 'timestamp' || !timestampAsDate(type.precision, type.withTimeZone, options.timestamps ?? 'auto')) return undefined;
  const { precision, withTimeZone } = type;
  const canonical: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
  return (s, at, end) => {
    const date = canonicalTimestampDate(s, at, end, precision, withTimeZone, canonical);
    if (date === undefined) return false;
    out.value = date;
    return true;
  };
}

function timestampDecoder(precision: number, withTimeZone: boolean, mode: TimestampMode): ValueDecoder {
  if (mode === 'micros' || mode === 'nanos') return epochTimestampDecoder(precision, withTimeZone, mode === 'micros' ? 6 : 9);
  const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
  const asDate = timestampAsDate(precision, withTimeZone, mode);
  const expected = withTimeZone ? 'YYYY-MM-DD HH:MM:SS[.fraction] UTC' : 'YYYY-MM-DD HH:MM:SS[.fraction]';
  const canonical: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
  return (v) => {
    if (v == null) return null;
    // The service's own text: read at fixed positions, no strings made; anything else below.
    if (typeof v === 'string') {
      if (asDate) {
        const date = canonicalTimestampDate(v, 0, v.length, precision, withTimeZone, canonical);
        if (date !== undefined) return date;
      } else if (scanFittingTimestamp(v, canonical, precision, withTimeZone)) {
        return v;
      }
    }
    if (typeof v !== 'string' || !parseTimestamp(v, parts)) {
      throw new Misfit(v, `is not a valid timestamp (${expected})`);
    }
    if (parts.zoned !== withTimeZone) {
      throw new Misfit(v, withTimeZone ? 'has no time zone (UTC or ±HH:MM expected)' : 'has a time zone in a timestamp without time zone');
    }
    if (parts.frac.length > precision && /[1-9]/.test(parts.frac.slice(precision))) {
      throw new Misfit(v, `has more fractional digits than timestamp(${precision})`);
    }
    // Years 0000-9999 arrive canonical; others (`-43-03-15 ...`, `0044-03-15 (BC) ...`) are rewritten.
    if (!asDate) return v.charCodeAt(4) === 45 && v.charCodeAt(0) !== 45 && v.charCodeAt(11) !== 40 ? v : timestampText(parts);
    const ms = timestampMillis(parts);
    if (!(Math.abs(ms) <= 8.64e15)) throw new Misfit(v, 'is outside the range of a JS Date');
    return new Date(ms);
  };
}

/**
 * A timestamp as a bigint count of 10^-`digits` seconds since the epoch: exact, with no digit beyond
 * the unit dropped (such a value is a Misfit naming the mode that holds it).
 */
function epochTimestampDecoder(precision: number, withTimeZone: boolean, digits: 6 | 9): ValueDecoder {
  const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
  const canonical: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
  const unit = 10n ** BigInt(digits);
  const general = timestampDecoder(precision, withTimeZone, 'string');
  return (v) => {
    if (v == null) return null;
    if (typeof v === 'string' && scanFittingTimestamp(v, canonical, precision, withTimeZone) && canonical.fracLength <= digits) {
      return BigInt(canonical.seconds) * unit + BigInt(canonicalFracUnits(v, canonical, digits));
    }
    // Checked (and its errors raised) as the text mode checks it, then counted from its parts.
    general(v);
    parseTimestamp(v as string, parts);
    const { units, exact } = fracToUnits(parts.frac, digits);
    if (!exact) throw new Misfit(v, `has digits beyond ${digits === 6 ? 'microseconds (timestamps: nanos or string keeps them)' : 'nanoseconds (timestamps: string keeps them)'}`);
    return BigInt(parts.seconds) * unit + BigInt(units);
  };
}

/** `YYYY-MM-DD HH:MM:SS[.f][ UTC]` of parsed parts, the date part as `dateText` writes it. */
function timestampText(parts: TimestampParts): string {
  const days = Math.floor(parts.seconds / 86_400);
  const s = parts.seconds - days * 86_400;
  const two = (n: number) => String(n).padStart(2, '0');
  const clock = `${two(Math.floor(s / 3600))}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
  return `${dateText(days)} ${clock}${parts.frac === '' ? '' : `.${parts.frac}`}${parts.zoned ? ' UTC' : ''}`;
}

function decodeIntervalDayToSecond(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string') {
    const ms = parseIntervalDayToSecondMs(v);
    if (!Number.isNaN(ms)) return ms;
  }
  if (typeof v === 'string' && /^-?\d+ months /.test(v)) {
    throw new Misfit(v, 'is an interval with a month part, which has no fixed length in milliseconds (cast it to interval year to month, or to days, in the SQL)');
  }
  if (typeof v === 'string' && /^-?(\d+ )?\d{2}:\d{2}:\d{2}\.\d*[1-9]\d{0,2}$/.test(v) && /\.\d{4,}/.test(v)) {
    throw new Misfit(v, 'has microseconds, which milliseconds cannot hold (round it to milliseconds in the SQL)');
  }
  throw new Misfit(v, 'is not an interval day to second (milliseconds, or [-]D HH:MM:SS[.ffffff])');
}

function decodeIntervalYearToMonth(v: unknown): unknown {
  if (v == null) return null;
  if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2_147_483_647) return v;
  if (typeof v === 'string') {
    const months = parseIntervalYearToMonth(v);
    if (!Number.isNaN(months)) return months;
  }
  throw new Misfit(v, 'is not an interval year to month (months, or [-]Y-M)');
}

function arrayDecoder(element: ValueDecoder): ValueDecoder {
  return (v) => {
    if (v == null) return null;
    if (!Array.isArray(v)) throw new Misfit(v, 'is not an array');
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      try {
        out[i] = element(v[i]);
      } catch (error) {
        throw atPath(error, `[${i}]`);
      }
    }
    return out;
  };
}

function mapDecoder(type: Extract<SqlType, { kind: 'map' }>, options: DecodeOptions): ValueDecoder {
  const keyOf = mapKeyDecoder(type.key, options);
  const valueOf = compileDecoder(type.value, options);
  const entry = (out: Map<unknown, unknown>, k: unknown, val: unknown): void => {
    let key: unknown;
    try {
      key = keyOf(k);
    } catch (error) {
      throw atPath(error, `{${String(k)}}`);
    }
    if (key === null) throw new Misfit(k, 'is a null map key');
    try {
      out.set(key, valueOf(val));
    } catch (error) {
      throw atPath(error, `[${JSON.stringify(String(k))}]`);
    }
  };
  return (v) => {
    if (v == null) return null;
    if (typeof v !== 'object') throw new Misfit(v, `is not a map (${formatType(type)})`);
    const out = new Map<unknown, unknown>();
    if (Array.isArray(v)) {
      for (const pair of v) {
        if (!Array.isArray(pair) || pair.length !== 2) throw new Misfit(pair, 'is not a [key, value] map entry');
        entry(out, pair[0], pair[1]);
      }
      return out;
    }
    for (const k of Object.keys(v)) entry(out, k, (v as Record<string, unknown>)[k]);
    return out;
  };
}

/**
 * JSON object keys are always strings; a map(bigint, ...) key arrives as `"42"`. Turn the key
 * text into the wire value its type expects, then decode it like any value.
 */
function mapKeyDecoder(type: SqlType, options: DecodeOptions): ValueDecoder {
  const decode = compileDecoder(type, options);
  switch (type.kind) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
      return (k) => decode(typeof k === 'string' && INTEGER_TEXT.test(k) && k.length < TOO_LONG ? wireInteger(k) : k);
    case 'real':
    case 'double':
      return (k) => decode(typeof k === 'string' && k.trim() !== '' && !Number.isNaN(Number(k)) ? Number(k) : k);
    case 'boolean':
      return (k) => decode(k === 'true' ? true : k === 'false' ? false : k);
    default:
      return decode;
  }
}

function wireInteger(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

function rowDecoder(type: Extract<SqlType, { kind: 'row' }>, options: DecodeOptions): ValueDecoder {
  const names = type.fields.map((f) => f.name);
  const decoders = type.fields.map((f) => compileDecoder(f.type, options));
  const assign = makeAssigner(names);
  const n = names.length;
  return (v) => {
    if (v == null) return null;
    if (typeof v !== 'object') throw new Misfit(v, `is not a row object (${formatType(type)})`);
    const out: Row = {};
    const positional = Array.isArray(v);
    if (positional && v.length !== n) throw new Misfit(v, `has ${v.length} values for a row of ${n} fields`);
    for (let i = 0; i < n; i++) {
      const name = names[i]!;
      const value = positional ? v[i] : (v as Record<string, unknown>)[name];
      try {
        assign(out, name, decoders[i]!(value));
      } catch (error) {
        throw atPath(error, `.${name}`);
      }
    }
    return out;
  };
}
