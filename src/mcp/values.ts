import type { ColumnSpec } from '../types/decode.ts';

/**
 * A JSON value that says exactly what the typed row held. JSON has no integer beyond 2^53, no
 * NaN or Infinity, no bytes, no timestamp, and an agent reading a number cannot know the column's
 * type; so every value whose JSON number would lose something travels as text, and the columns'
 * service types travel beside the rows (`columns`), so the text is read as what it is:
 * - bigint, uint256, int256: the exact digits as a string (`"9007199254740993"`);
 * - decimal(p, s): the exact decimal text (`"12.50"`), never a double;
 * - real, double: a number; NaN, Infinity, -Infinity as those strings;
 * - timestamp: ISO 8601 (`2026-01-02T03:04:05.678Z` with a time zone, no `Z` without one; the exact
 *   string the decoder kept for precisions beyond milliseconds); date, time: their text;
 * - varbinary: `0x` and lowercase hex; map: an array of `{ key, value }` (keys need not be text);
 * - array and row: JSON arrays and objects, their values rendered by the same rules.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Longer text values (strings, binary as hex) are cut in a preview, which is for looking: an export has them whole. */
export const MAX_TEXT_CHARS = 2_000;

/** Counts the values cut to `MAX_TEXT_CHARS`. */
export interface Clipped {
  count: number;
}

/** One typed row as JSON, keyed by column name in the result's column order. */
export function jsonRow(row: Readonly<Record<string, unknown>>, columns: readonly ColumnSpec[], clipped: Clipped = { count: 0 }): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const column of columns) {
    const value = row[column.name];
    // A timestamp beyond milliseconds comes as the decoder's exact text, `YYYY-MM-DD HH:MM:SS.ffffff`: ISO 8601's `T` as for the others.
    out[column.name] = typeof value === 'string' && TIMESTAMP.test(column.type) ? value.replace(' ', 'T') : jsonValue(value, zoned(column.type), clipped);
  }
  return out;
}

function clip(text: string, clipped: Clipped | undefined): string {
  if (clipped === undefined || text.length <= MAX_TEXT_CHARS) return text;
  clipped.count++;
  return `${text.slice(0, MAX_TEXT_CHARS)}... [clipped: ${text.length - MAX_TEXT_CHARS} more characters]`;
}

const TIMESTAMP = /^\s*timestamp\b/i;

/** Whether a column's timestamps carry a zone (rendered with `Z`) or are wall-clock times (without). */
function zoned(type: string): boolean {
  return !TIMESTAMP.test(type) || /with time zone/i.test(type);
}

export function jsonValue(value: unknown, withZone = true, clipped?: Clipped): JsonValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'bigint':
      return value.toString();
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'string':
      return clip(value, clipped);
    case 'boolean':
      return value;
    default:
      break;
  }
  if (value instanceof Date) {
    const iso = value.toISOString();
    return withZone ? iso : iso.replace(/Z$/, '');
  }
  if (value instanceof Uint8Array) return clip(`0x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`, clipped);
  if (value instanceof Map) return [...value].map(([k, v]) => ({ key: jsonValue(k, true, clipped), value: jsonValue(v, true, clipped) }));
  if (Array.isArray(value)) return value.map((v) => jsonValue(v, true, clipped));
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(value)) out[k] = jsonValue(v, true, clipped);
    return out;
  }
  return String(value);
}
