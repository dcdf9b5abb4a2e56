import { canonicalUnscaled, INT256_SAFE_DIGITS, isCanonicalInteger, UINT256_SAFE_DIGITS } from './decimal.ts';
import { keepsText } from './decode.ts';
import type { SqlKind, SqlOf, SqlType } from './sqlType.ts';
import { canonicalDateDays, canonicalFracUnits, parseDateDays, scanFittingTimestamp, type CanonicalTimestamp } from './temporal.ts';
import {
  BinaryColumn,
  BoolColumn,
  DateDayColumn,
  DecimalColumn,
  INT32_RANGE,
  INT64_MAX,
  INT64_MIN,
  Int64Column,
  NumberColumn,
  SAFE,
  Utf8Column,
  type ColumnBuilder,
} from './columns.ts';

/**
 * The fused paths of wire values into column builders: a value in the form the service sends goes
 * straight into its column (from a parsed page, or read where it sits in the page's text), with no
 * decoded value made in between; anything else takes the decoder and the builder's append.
 */

/** varbinary's wire text, as the decoder checks it. */
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** See {@link wireAppender}. */
export type WireAppender = (value: unknown) => boolean;

/**
 * The fused path of a JSON page into Arrow: a non-null wire value in the form the service sends for
 * the column's type goes straight into `builder` (true); any other value is left alone (false), to
 * be decoded and appended in two steps. When it returns true the column holds exactly what
 * `builder.append(decode(value))` would have put there, `decode` being the column's decoder as
 * `compileRowDecoder(columns, { timestamps: 'string' })` compiles it; it throws only what that
 * append would throw. Undefined for types without such a path.
 */
export function wireAppender(sql: SqlType, builder: ColumnBuilder): WireAppender | undefined {
  if (keepsText(sql)) return builder instanceof Utf8Column ? (v) => typeof v === 'string' && builder.appendText(v) : undefined;
  const fused = WIRE_APPENDERS[sql.kind] as WireAppenderOf<SqlKind> | undefined;
  return fused?.(sql, builder);
}

type WireAppenderOf<K extends SqlKind> = (sql: SqlOf<K>, builder: ColumnBuilder) => WireAppender | undefined;

/** The fused path of each type that has one, given the column's builder (undefined when the builder is not the one it expects). */
const WIRE_APPENDERS: { [K in SqlKind]?: WireAppenderOf<K> } = {
  boolean: (_sql, builder) => (builder instanceof BoolColumn ? (v) => typeof v === 'boolean' && (builder.append(v), true) : undefined),
  tinyint: (_sql, builder) => smallIntegerAppender(builder, -128, 127),
  smallint: (_sql, builder) => smallIntegerAppender(builder, -32_768, 32_767),
  integer: (_sql, builder) => smallIntegerAppender(builder, ...INT32_RANGE),
  real: (_sql, builder) => floatAppender(builder),
  double: (_sql, builder) => floatAppender(builder),
  bigint: bigintAppender,
  // The canonical text only, read where it sits: the same reader as for a page's text.
  decimal: canonicalTextAppender,
  timestamp: canonicalTextAppender,
  uint256: (_sql, builder) => wideIntegerTextAppender(builder, false),
  int256: (_sql, builder) => wideIntegerTextAppender(builder, true),
  varbinary: hexAppender,
  date: dateAppender,
};

function smallIntegerAppender(builder: ColumnBuilder, min: number, max: number): WireAppender | undefined {
  if (!(builder instanceof NumberColumn)) return undefined;
  return (v) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max && (builder.appendNumber(v), true);
}

function floatAppender(builder: ColumnBuilder): WireAppender | undefined {
  if (!(builder instanceof NumberColumn)) return undefined;
  return (v) => typeof v === 'number' && (builder.appendNumber(v), true);
}

function bigintAppender(_sql: SqlType, builder: ColumnBuilder): WireAppender | undefined {
  if (!(builder instanceof Int64Column)) return undefined;
  return (v) => {
    if (typeof v === 'number') return Number.isSafeInteger(v) && (builder.appendSafe(v), true);
    return typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX && (builder.append(v), true);
  };
}

/** A decimal or timestamp string through {@link textAppender}, which reads the canonical text only. */
function canonicalTextAppender(sql: SqlType, builder: ColumnBuilder): WireAppender | undefined {
  const inText = textAppender(sql, builder);
  if (inText === undefined) return undefined;
  return (v) => typeof v === 'string' && inText(v, 0, v.length);
}

/**
 * uint256/int256 as Utf8 text: a canonical integer text short enough to be in range is its own
 * text, with no bigint made and printed back (2^256 has 78 digits, 2^255 has 77).
 */
function wideIntegerTextAppender(builder: ColumnBuilder, signed: boolean): WireAppender | undefined {
  if (!(builder instanceof Utf8Column)) return undefined;
  const maxDigits = signed ? INT256_SAFE_DIGITS : UINT256_SAFE_DIGITS;
  return (v) => {
    if (typeof v === 'number') return Number.isSafeInteger(v) && (signed || v >= 0) && builder.appendText(String(v));
    return typeof v === 'string' && isCanonicalInteger(v, signed, maxDigits) && builder.appendText(v);
  };
}

function hexAppender(_sql: SqlType, builder: ColumnBuilder): WireAppender | undefined {
  if (!(builder instanceof BinaryColumn)) return undefined;
  return (v) => {
    if (typeof v !== 'string') return false;
    return HEX.test(v) && builder.appendHex(v, (v.length - 2) >> 1);
  };
}

function dateAppender(_sql: SqlType, builder: ColumnBuilder): WireAppender | undefined {
  if (!(builder instanceof DateDayColumn)) return undefined;
  return (v) => {
    if (typeof v !== 'string' || v.length !== 10) return false;
    const days = parseDateDays(v);
    return days === days && (builder.appendNumber(days), true);
  };
}

/**
 * Appends a text, date, timestamp or decimal value read straight from a page's text (`s` from `at`
 * to `end`, without the quotes), with no string made, when it is plain ASCII text (text types) or in
 * the service's canonical form (the others): what the column's {@link wireAppender} appends for that
 * text as a string (for timestamps and decimals it is this reader; for dates it also reads
 * non-canonical text). False, with nothing appended, for any other text (the caller then makes the
 * string and takes the general way). Undefined for other types.
 */
export function textAppender(sql: SqlType, builder: ColumnBuilder): ((s: string, at: number, end: number) => boolean) | undefined {
  if (keepsText(sql)) return builder instanceof Utf8Column ? (s, at, end) => builder.appendChars(s, at, end) : undefined;
  switch (sql.kind) {
    case 'date': {
      if (!(builder instanceof DateDayColumn)) return undefined;
      return (s, at, end) => {
        if (end - at !== 10) return false;
        const days = canonicalDateDays(s, at);
        return days === days && (builder.appendNumber(days), true);
      };
    }
    case 'decimal': {
      if (!(builder instanceof DecimalColumn)) return undefined;
      const { precision, scale } = sql;
      return (s, at, end) => {
        const unscaled = canonicalUnscaled(s, precision, scale, at, end);
        return unscaled === unscaled && (builder.appendUnscaled(unscaled), true);
      };
    }
    case 'timestamp': {
      if (!(builder instanceof Int64Column) || sql.precision > 6) return undefined;
      const { precision, withTimeZone } = sql;
      const digits = precision <= 3 ? 3 : 6;
      const perSecond = digits === 3 ? 1000 : 1_000_000;
      const t: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
      return (s, at, end) => {
        if (!scanFittingTimestamp(s, t, precision, withTimeZone, at, end)) return false;
        const n = t.seconds * perSecond + canonicalFracUnits(s, t, digits);
        return n < SAFE && n > -SAFE && (builder.appendSafe(n), true);
      };
    }
    default:
      return undefined;
  }
}
