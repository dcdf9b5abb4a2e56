import { parseType } from '../../types/parse.ts';

/**
 * How cursor values of a column type are ordered and spelled. A cursor value travels as exact text
 * (the same text CSV and NDJSON carry); comparing two texts of one kind gives the order the query
 * engine gives the values.
 */
export type CursorKind = 'integer' | 'decimal' | 'float' | 'date' | 'timestamp' | 'text';

/** The kind of a `column_types` type, or undefined when its values cannot serve as a cursor. */
export function cursorKind(type: string): CursorKind | undefined {
  let parsed;
  try {
    parsed = parseType(type);
  } catch {
    return undefined;
  }
  switch (parsed.kind) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
    case 'uint256':
    case 'int256':
      return 'integer';
    case 'decimal':
      return 'decimal';
    case 'real':
    case 'double':
      return 'float';
    case 'date':
      return 'date';
    case 'timestamp':
      return 'timestamp';
    case 'varchar':
    case 'char':
      return 'text';
    default:
      return undefined;
  }
}

export const ORDERABLE = 'a number, decimal, date, timestamp or text column';

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,12}))?)?)?(Z| ?UTC|[+-]00(?::?00)?)?$/i;

/** What is wrong with `value` as a cursor value of `kind` (undefined: nothing). */
export function cursorValueProblem(kind: CursorKind, value: string | number): string | undefined {
  const text = String(value).trim();
  switch (kind) {
    case 'integer':
      return INTEGER.test(text) ? undefined : 'expected a whole number';
    case 'decimal':
    case 'float':
      return NUMBER.test(text) && Number.isFinite(Number(text)) ? undefined : 'expected a number';
    case 'date':
      return DATE.test(text) && validDate(text) ? undefined : 'expected a date such as "2026-01-01"';
    case 'timestamp':
      return TIMESTAMP.test(text) && validDate(text.slice(0, 10)) ? undefined : 'expected a timestamp such as "2026-01-01 00:00:00" (in UTC; Z may follow)';
    case 'text':
      return typeof value === 'string' ? undefined : 'expected text (quote it)';
  }
}

function validDate(text: string): boolean {
  const [y, m, d] = text.split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/** The one spelling of a value: what is committed and passed on (`T` between date and time becomes a space, as SQL writes it). */
export function canonicalCursor(kind: CursorKind, value: string | number): string {
  const text = String(value);
  if (kind === 'timestamp') return text.trim().replace(/^(\d{4}-\d{2}-\d{2})T/, '$1 ');
  if (kind === 'integer' || kind === 'decimal' || kind === 'float' || kind === 'date') return text.trim();
  return text;
}

/** Orders two cursor values of one kind: negative when `a` comes first. */
export function compareCursor(kind: CursorKind, a: string, b: string): number {
  switch (kind) {
    case 'integer': {
      const x = BigInt(a.trim());
      const y = BigInt(b.trim());
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'decimal':
      return compareDecimal(a.trim(), b.trim());
    case 'float':
      return Number(a) - Number(b);
    case 'date':
      return a < b ? -1 : a > b ? 1 : 0;
    case 'timestamp': {
      const x = timestampKey(a);
      const y = timestampKey(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'text':
      // Byte order of UTF-8, as the engine compares text (not UTF-16 code units).
      return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  }
}

function compareDecimal(a: string, b: string): number {
  const split = (t: string): [bigint, string] => {
    const negative = t.startsWith('-');
    const [int = '0', frac = ''] = t.replace(/^[+-]/, '').split('.');
    return [negative ? -1n : 1n, `${int}.${frac}`];
  };
  const [sa, ta] = split(a);
  const [sb, tb] = split(b);
  const scale = Math.max(ta.length - ta.indexOf('.') - 1, tb.length - tb.indexOf('.') - 1);
  const scaled = (sign: bigint, t: string) => {
    const [int, frac] = t.split('.') as [string, string];
    return sign * BigInt(`${int}${frac.padEnd(scale, '0')}` || '0');
  };
  const x = scaled(sa, ta);
  const y = scaled(sb, tb);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** `YYYY-MM-DD HH:MM:SS.ffffffffffff`, fixed width, so that text order is time order. */
function timestampKey(text: string): string {
  const m = TIMESTAMP.exec(text.trim());
  if (m === null) return text;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = ''] = m;
  return `${y}-${mo}-${d} ${h}:${mi}:${s}.${frac.padEnd(12, '0')}`;
}

const DURATION = /^(\d+)\s*(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Checks a lookback against the cursor's kind: a duration for dates and timestamps, a number for numbers. */
export function lookbackProblem(kind: CursorKind, lookback: string | number): string | undefined {
  if (kind === 'date' || kind === 'timestamp') {
    return typeof lookback === 'string' && DURATION.test(lookback.trim()) ? undefined : `a ${kind} cursor looks back by a duration such as "30m", "6h" or "2d"`;
  }
  if (kind === 'text') return 'a text cursor cannot look back: there is no distance between two texts';
  return typeof lookback === 'number' && lookback >= 0 ? undefined : `a ${kind} cursor looks back by a number (how far below the committed value to read again)`;
}

/** The lowest cursor value a run reads again: `value` minus the lookback (the value itself without one). */
export function lookbackStart(kind: CursorKind, value: string, lookback: string | number | undefined): string {
  if (lookback === undefined) return value;
  switch (kind) {
    case 'integer':
      return String(BigInt(value.trim()) - BigInt(Math.ceil(Number(lookback))));
    case 'decimal':
    case 'float':
      return String(Number(value) - Number(lookback));
    case 'date':
    case 'timestamp': {
      const [, amount, unit] = DURATION.exec(String(lookback).trim()) as unknown as [string, string, keyof typeof UNIT_MS];
      const ms = Number(amount) * UNIT_MS[unit];
      const key = timestampKey(value);
      const at = Date.parse(`${key.slice(0, 10)}T${key.slice(11, 19)}Z`) - ms;
      const iso = new Date(at).toISOString();
      if (kind === 'date') return iso.slice(0, 10);
      // Whole seconds moved back: the fraction (to the nanosecond) stays as it was.
      const fraction = value.trim().match(/\.(\d+)/)?.[1];
      const zone = /(Z| ?UTC|[+-]00(?::?00)?)$/i.exec(value.trim())?.[0] ?? '';
      return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction === undefined ? '' : `.${fraction}`}${zone}`;
    }
    case 'text':
      return value;
  }
}

/**
 * The value as it replaces `{{parameter}}` in a job's SQL: a number as it is, anything else as a
 * quoted SQL string (the engine casts it to the column's type where it compares; an engine that does
 * not can be told in the SQL: `CAST({{since}} AS TIMESTAMP)`).
 */
export function sqlLiteral(kind: CursorKind | undefined, value: string | number): string {
  const numeric = kind === 'integer' || kind === 'decimal' || kind === 'float' || (kind === undefined && typeof value === 'number');
  const text = String(value);
  if (numeric && NUMBER.test(text.trim())) return text.trim().startsWith('-') ? `(${text.trim()})` : text.trim();
  return `'${text.replace(/'/g, "''")}'`;
}
