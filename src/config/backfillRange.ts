/**
 * The ranges of a backfill: its bounds and chunk size read once into points on one integer axis
 * (an integer itself, days since the epoch for dates, milliseconds since the epoch for
 * timestamps), cut into chunks `[from, to)` and halved when a chunk's result is too large. Pure:
 * the schema checks a job file with it, the run and the plan cut the same chunks with it.
 */

export type RangeKind = 'integer' | 'date' | 'timestamp';

/** A bound as the job file gives it. */
export type Bound = string | number;

/** One chunk: rows with `from <= value < to`, as points of its kind. */
export interface Span {
  readonly from: bigint;
  readonly to: bigint;
}

export interface RangeAxis {
  readonly kind: RangeKind;
  readonly from: bigint;
  readonly to: bigint;
  /** Points per chunk. */
  readonly chunk: bigint;
  /** The smallest chunk a split may make, in points. */
  readonly floor: bigint;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|\s?UTC|[+-]00(?::?00)?)?$/i;
const DURATION = /^(\d+)\s*(s|m|h|d|w)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const;
const DAY_MS = 86_400_000;

/** How many halvings the default floor allows below the chunk size. */
const DEFAULT_HALVINGS = 64n;

/** The kind of a bound, or what is wrong with it. */
export function boundKind(value: Bound): RangeKind | { problem: string } {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'integer' : { problem: `${value} is not a whole number: numeric bounds are integers` };
  const text = value.trim();
  if (/^-?\d+$/.test(text)) return 'integer';
  if (DATE.test(text)) return validAt(text) ? 'date' : { problem: `"${value}" is not a date of the calendar` };
  if (TIMESTAMP.test(text)) return validAt(text.slice(0, 10)) ? 'timestamp' : { problem: `"${value}" is not a date of the calendar` };
  return { problem: `"${value}" is neither an integer, a date (2024-01-31) nor a UTC timestamp (2024-01-31 12:00:00)` };
}

function validAt(date: string): boolean {
  const t = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === date;
}

/** The range's kind: a date with a timestamp reads both as timestamps. */
export function rangeKind(from: RangeKind, to: RangeKind): RangeKind | undefined {
  if (from === to) return from;
  if (from !== 'integer' && to !== 'integer') return 'timestamp';
  return undefined;
}

/** A bound as a point of `kind`. */
export function toPoint(kind: RangeKind, value: Bound): bigint {
  const text = String(value).trim();
  if (kind === 'integer') return BigInt(text);
  const m = TIMESTAMP.exec(text);
  const ms = m === null ? Date.parse(`${text}T00:00:00Z`) : Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +(m[6] ?? 0), Math.round(Number(m[7] ?? 0) * 1000));
  return kind === 'date' ? BigInt(Math.floor(ms / DAY_MS)) : BigInt(ms);
}

/** A point as the query receives it: the integer, `YYYY-MM-DD`, or `YYYY-MM-DD HH:MM:SS[.mmm]` (UTC). */
export function pointText(kind: RangeKind, point: bigint): string {
  if (kind === 'integer') return point.toString();
  const iso = new Date(Number(kind === 'date' ? point * BigInt(DAY_MS) : point)).toISOString();
  if (kind === 'date') return iso.slice(0, 10);
  const ms = iso.slice(19, 23);
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${ms === '.000' ? '' : ms}`;
}

/** A chunk size in points of `kind`, or what is wrong with it. */
export function chunkPoints(kind: RangeKind, chunk: Bound, field: string): bigint | { problem: string } {
  if (kind === 'integer') {
    return typeof chunk === 'number' && Number.isSafeInteger(chunk) && chunk > 0 ? BigInt(chunk) : { problem: `an integer range moves by a positive whole number of values (e.g. 1000000), got ${JSON.stringify(chunk)}` };
  }
  const m = typeof chunk === 'string' ? DURATION.exec(chunk.trim()) : null;
  if (m === null || Number(m[1]) === 0) return { problem: `a ${kind} range moves by a duration such as "7d", "12h", "30m" or "1w", got ${JSON.stringify(chunk)}` };
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (kind === 'timestamp') return BigInt(ms);
  if (ms % DAY_MS !== 0) return { problem: `a date range moves by whole days ("1d", "7d", "2w"), got ${JSON.stringify(chunk)}; give timestamps as ${field} bounds to cut finer` };
  return BigInt(ms / DAY_MS);
}

/** The default floor of a split: the chunk size halved six times, at least one point (one value, one day, one second). */
export function defaultFloor(kind: RangeKind, chunk: bigint): bigint {
  const least = kind === 'timestamp' ? 1000n : 1n;
  const floor = chunk / DEFAULT_HALVINGS;
  return floor > least ? floor : least;
}

/** The chunks of the whole range, in order; the last one ends at `to`. */
export function chunksOf(axis: RangeAxis): Span[] {
  const spans: Span[] = [];
  for (let from = axis.from; from < axis.to; from += axis.chunk) spans.push({ from, to: from + axis.chunk < axis.to ? from + axis.chunk : axis.to });
  return spans;
}

/** The two halves of a chunk, or undefined when a half would be smaller than the floor. */
export function halves(span: Span, floor: bigint): [Span, Span] | undefined {
  const width = span.to - span.from;
  if (width < 2n * floor || width < 2n) return undefined;
  const mid = span.from + width / 2n;
  return [
    { from: span.from, to: mid },
    { from: mid, to: span.to },
  ];
}

/** `[from, to)` as the job's values, for messages and the plan. */
export function spanText(kind: RangeKind, span: Span): string {
  return `[${pointText(kind, span.from)}, ${pointText(kind, span.to)})`;
}
