/**
 * Lossless JSON for result pages.
 *
 * `JSON.parse` rounds integers beyond 2^53, and a reviver on every value (the textbook fix,
 * with `context.source`) made it several times slower (`npm run bench -- types` prints both). So:
 * 1. a page is scanned for integer tokens of 16+ digits beyond 2^53 (every integer of 15
 *    digits or fewer is safe), reading about one char in 16; none: plain `JSON.parse`;
 * 2. otherwise each such token is rewritten as a marker string (`"\u0000<digits>"`), the
 *    text parsed with plain `JSON.parse`, and the marker strings turned into bigints by one
 *    walk over the parsed value: a fraction of the reviver's cost;
 * 3. the reviver remains the fallback when the marker could be ambiguous (the page holds a
 *    `\u0000` escape) or the scan mistook text inside a string for a number (the rewrite
 *    then always yields a SyntaxError, since it puts a backslash outside any string).
 */

/** Below 2^53 in magnitude a double holds every integer exactly. */
const SAFE_LIMIT = 2 ** 53;
/** The largest safe integer as text: a 16-digit run at most this is safe. */
const MAX_SAFE_TEXT = String(Number.MAX_SAFE_INTEGER);
const INTEGER_SOURCE = /^-?\d+$/;

/** True for an ASCII digit char code. */
const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * Start/end pairs of the integer tokens in `s` that are beyond 2^53 (sign included).
 *
 * Such a token has 16+ digits, so it covers one of every 16 positions: only every 16th char
 * is read, plus the few around each digit found. Outside strings a digit run follows `:`,
 * `,`, `[` (then optional whitespace and `-`), or is a fraction or exponent; any other run
 * is inside a string (uint256 and decimal text, hex, dates), and the scan jumps to the
 * string's end. Text like `"a:12345678901234567"` inside a string passes for a token; the
 * rewrite then fails to parse and the reviver takes over. Assumes valid JSON.
 */
function findUnsafeIntegers(s: string, firstOnly: boolean): number[] {
  const found: number[] = [];
  const n = s.length;
  for (let i = Math.min(15, n - 1); i < n; i += 16) {
    if (!isDigit(s.charCodeAt(i))) continue;
    // A run of 16+ digits through i reaches i - 8 or i + 8: without a digit at either, this
    // digit belongs to a shorter run (a date, a small number) and is passed like any other char.
    if (!isDigit(s.charCodeAt(i - 8)) && !isDigit(s.charCodeAt(i + 8))) continue;
    const a = runBefore(s, i);
    const place = runPlace(s, a);
    if (place === IN_STRING) {
      const close = closingQuote(s, i);
      if (close < 0) return found;
      i = close;
      continue;
    }
    let b = runAfter(s, i);
    const next = s.charCodeAt(b);
    if (place === VALUE && next !== 46 /* . */ && next !== 101 /* e */ && next !== 69 /* E */ && isUnsafeRun(s, a + 1, b)) {
      found.push(s.charCodeAt(a) === 45 /* - */ ? a : a + 1, b);
      if (firstOnly) return found;
    }
    // Step over a fraction in the same pass, so its digits are not sampled again.
    if (next === 46) b = runAfter(s, b);
    if (b - 16 > i) i = b - 16;
  }
  return found;
}

/** Index of the char before the digit run through `i` (-1 at the start of the text). */
function runBefore(s: string, i: number): number {
  let a = i - 1;
  while (a >= 0 && isDigit(s.charCodeAt(a))) a--;
  return a;
}

/** Index of the first char after the digit run through `i` (or after `i` when it is not a digit). */
function runAfter(s: string, i: number): number {
  const n = s.length;
  let b = i + 1;
  while (b < n && isDigit(s.charCodeAt(b))) b++;
  return b;
}

/** Where a digit run sits, by {@link runPlace}. */
const IN_STRING = 0;
const VALUE = 1;
const NUMBER_PART = 2;

/**
 * Where the digit run after index `a` sits: a JSON value of its own (after `:`, `,` or `[`,
 * then optional whitespace and `-`), the fraction or exponent of a number, or text inside a string.
 */
function runPlace(s: string, a: number): number {
  const before = s.charCodeAt(a); // NaN before the text's start
  let p = before === 45 /* - */ ? a - 1 : a;
  let c = 0;
  while (p >= 0 && ((c = s.charCodeAt(p)) === 32 || c === 10 || c === 13 || c === 9)) p--;
  if (p < 0 || (c = s.charCodeAt(p)) === 58 /* : */ || c === 44 /* , */ || c === 91 /* [ */) return VALUE;
  const numberPart =
    before === 46 /* . */ || before === 43 /* + */ || before === 101 /* e */ || before === 69 /* E */ ||
    (before === 45 && (c === 101 || c === 69));
  return numberPart ? NUMBER_PART : IN_STRING;
}

/** True when the digits in [start, end) are an integer beyond 2^53. */
function isUnsafeRun(s: string, start: number, end: number): boolean {
  const digits = end - start;
  return digits > 16 || (digits === 16 && s.slice(start, end) > MAX_SAFE_TEXT);
}

/** Index of the first unescaped `"` at or after `from`, or -1. */
function closingQuote(s: string, from: number): number {
  let q = s.indexOf('"', from);
  while (q > 0) {
    let slashes = 0;
    while (s.charCodeAt(q - 1 - slashes) === 92 /* backslash */) slashes++;
    if (slashes % 2 === 0) return q;
    q = s.indexOf('"', q + 1);
  }
  return q;
}

interface ReviverContext {
  source?: string;
}

function exactReviver(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== 'number' || (value < SAFE_LIMIT && value > -SAFE_LIMIT)) return value;
  const source = context?.source;
  return source !== undefined && INTEGER_SOURCE.test(source) ? BigInt(source) : value;
}

/** Replace marker strings by bigints, in place. */
function reviveMarkers(value: unknown): unknown {
  if (typeof value === 'string') return value.charCodeAt(0) === 0 ? BigInt(value.slice(1)) : value;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'object' ? v !== null : typeof v === 'string' && v.charCodeAt(0) === 0) value[i] = reviveMarkers(v);
    }
    return value;
  }
  const o = value as Record<string, unknown>;
  for (const k in o) {
    const v = o[k];
    if (typeof v === 'object' ? v !== null : typeof v === 'string' && v.charCodeAt(0) === 0) o[k] = reviveMarkers(v);
  }
  return o;
}

/**
 * True when `text` has an integer that `JSON.parse` would round, so
 * {@link parseJsonLossless} takes its exact (slower) path.
 */
export function needsExactParse(text: string): boolean {
  return findUnsafeIntegers(text, true).length > 0;
}

/**
 * Parse JSON keeping every integer exact: integers of magnitude >= 2^53 become `bigint`,
 * everything else is what `JSON.parse` gives (safe integers and all non-integers stay
 * `number`; digits inside strings are untouched). Throws `SyntaxError` on invalid JSON.
 *
 * A page without such integers costs a sparse scan over `JSON.parse`; see the module note.
 */
export function parseJsonLossless(text: string): unknown {
  const found = findUnsafeIntegers(text, false);
  if (found.length === 0) return JSON.parse(text);
  if (text.includes('\\u0000')) return JSON.parse(text, exactReviver);
  const parts: string[] = [];
  let last = 0;
  for (let k = 0; k < found.length; k += 2) {
    parts.push(text.slice(last, found[k]), '"\\u0000', text.slice(found[k], found[k + 1]), '"');
    last = found[k + 1]!;
  }
  parts.push(text.slice(last));
  let parsed: unknown;
  try {
    parsed = JSON.parse(parts.join(''));
  } catch {
    return JSON.parse(text, exactReviver);
  }
  return reviveMarkers(parsed);
}

/** The reviver path alone (the fallback), for benchmarks and tests. */
export function parseJsonWithReviver(text: string): unknown {
  return JSON.parse(text, exactReviver);
}


interface JsonWithRaw {
  rawJSON(text: string): unknown;
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? (JSON as unknown as JsonWithRaw).rawJSON(value.toString()) : value;
}

/**
 * `JSON.stringify` that writes bigints as exact JSON numbers (Node's `JSON.rawJSON`), for
 * JSON text built from losslessly parsed values.
 */
export function stringifyLossless(value: unknown): string {
  return JSON.stringify(value, bigintReplacer) ?? String(value);
}

/** A short, unambiguous rendering of a value for error messages. */
export function previewValue(value: unknown): string {
  let text: string;
  if (value === undefined) text = 'undefined';
  else if (typeof value === 'bigint') text = `${value}`;
  else if (value instanceof Uint8Array) text = `<${value.length} bytes>`;
  else if (value instanceof Date) text = `Date(${Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString()})`;
  else if (value instanceof Map) text = `Map(${value.size})`;
  else {
    try {
      text = stringifyLossless(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 120 ? `${text.slice(0, 100)}...(${text.length} chars)` : text;
}
