import { compileDecoder, keepsText, textValueReader, type ColumnSpec, type DecodeOptions, type Row, type ValueDecoder } from './decode.ts';
import { generated } from './generated.ts';
import { parseType } from './parse.ts';
import type { SqlType } from './sqlType.ts';

/**
 * Rows of a JSON result page read straight from its text, without `JSON.parse` building a row
 * object of wire values first: one generated scanner per column list reads each row's values in
 * column order and hands them to the decoders (typed rows) or the column builders (Arrow).
 *
 * It reads only the shape the service writes: `"rows":[{"a":1,"b":"x"},...]` with the keys in
 * `column_names` order, scalar values, no escapes in the page, optional whitespace. Anything else (a key
 * out of order or missing, an object or array value, a backslash anywhere in the page, a number
 * JSON would not take) makes it give up on the page, and the caller parses the page the general
 * way, which also raises the errors. So whatever it returns is exactly what `parseJsonLossless`
 * and the decoders give for the same text: numbers as `Number(token)` (integers beyond 2^53 as
 * bigint), strings as their text (a raw control character, which JSON forbids, gives up).
 *
 * Both typed rows and Arrow batches read this way take less time than `JSON.parse` plus the
 * decoders (`npm run bench -- types` times both paths); what reading JSON pages costs against a
 * bare `JSON.parse`: docs/performance.md.
 */

/** Where the rows of a page were, what they made, and how many the page holds. */
export interface TextRead<T> {
  readonly value: T;
  /**
   * Rows in the page's `rows` array (all of them, not only the ones read); undefined when they are
   * read later, a few at a time as they are used (`compileTextRowReader`), which checks the count then.
   */
  readonly count: number | undefined;
  /** Index of the array's `[` and one past its `]`. */
  readonly start: number;
  readonly end: number;
}

/**
 * Reads rows `from` (inclusive) to `to` (exclusive) of a page's text; undefined when the page is
 * not of the shape it reads, or a value did not decode (the general path then says why).
 */
export type TextReader<T> = (text: string, from: number, to: number) => TextRead<T> | undefined;

/** What the generated scanner closes over besides the emit's own names. */
export interface ScanState {
  /** The last number read by `readNumber`. */
  v: unknown;
  /** Rows in the array just scanned. */
  count: number;
}

/** A generated scanner and the state it writes (`count` after a scan). */
export interface Scanner {
  readonly scan: (s: string, p: number, from: number, to: number, out: unknown) => number;
  readonly state: ScanState;
}

/** Column types whose values are scalars on the wire; a nested one makes the scanner not apply. */
function scalar(type: SqlType): boolean {
  return type.kind !== 'array' && type.kind !== 'map' && type.kind !== 'row';
}

/** Types whose values are usually numbers: the number branch is tried first. */
function numeric(type: SqlType): boolean {
  switch (type.kind) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'bigint':
    case 'real':
    case 'double':
      return true;
    default:
      return false;
  }
}

/** Integer types: their values are JSON integers. */
function integral(type: SqlType): boolean {
  return type.kind === 'tinyint' || type.kind === 'smallint' || type.kind === 'integer' || type.kind === 'bigint';
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * Reads the JSON number at `p` into `o.v` as `parseJsonLossless` would (a double; an integer
 * beyond 2^53 as bigint) and returns the index after it, or -1 when the text there is not a JSON
 * number. Up to 15 significant digits and 22 fraction digits the value is the digits over a power
 * of ten: both exact doubles, so the one rounding of the division is the correct one.
 */
export function readNumber(s: string, p: number, o: ScanState): number {
  const start = p;
  let c = s.charCodeAt(p);
  const negative = c === 45;
  if (negative) c = s.charCodeAt(++p);
  if (c < 48 || c > 57) return -1;
  let m = 0;
  let digits = 0;
  if (c === 48) {
    c = s.charCodeAt(++p);
  } else {
    do {
      m = m * 10 + (c - 48);
      digits++;
      c = s.charCodeAt(++p);
    } while (c >= 48 && c <= 57);
  }
  let fraction = 0;
  if (c === 46) {
    c = s.charCodeAt(++p);
    if (c < 48 || c > 57) return -1;
    do {
      m = m * 10 + (c - 48);
      digits++;
      fraction++;
      c = s.charCodeAt(++p);
    } while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69) {
    p = exponentEnd(s, p);
    if (p < 0) return -1;
    o.v = Number(s.slice(start, p));
    return p;
  }
  if (digits > 15 || fraction > 22) {
    o.v = longNumber(s.slice(start, p), fraction === 0);
    return p;
  }
  const v = fraction === 0 ? m : m / POW10[fraction]!;
  o.v = negative ? -v : v;
  return p;
}

/** Index after the exponent (`e`, optional sign, digits) whose `e` or `E` is at `p`, or -1 without digits. */
function exponentEnd(s: string, p: number): number {
  let c = s.charCodeAt(++p);
  if (c === 43 || c === 45) c = s.charCodeAt(++p);
  if (c < 48 || c > 57) return -1;
  do c = s.charCodeAt(++p);
  while (c >= 48 && c <= 57);
  return p;
}

/** A number of more digits than a double holds exactly: as `JSON.parse` reads it, an integer beyond 2^53 as bigint. */
function longNumber(token: string, integer: boolean): number | bigint {
  const v = Number(token);
  return integer && !Number.isSafeInteger(v) ? BigInt(token) : v;
}

/** Index of the first non-whitespace character at or after `p`. */
export function skipSpace(s: string, p: number): number {
  let c = s.charCodeAt(p);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++p);
  return p;
}

/** Strings of at least this length are slices sharing the page's text; see `copyLong`. */
const SLICED_FROM = 13;

/**
 * Source of the code reading column `i`'s value into `v{i}` with `c` holding its first char; gives up
 * (`return -1`) on an object, an array or anything that is not JSON.
 */
function valueSource(i: number, type: SqlType, copyLong: boolean, direct: boolean): string {
  const v = `v${i}`;
  // JSON forbids raw control characters in strings: the general path refuses such a page. Text a
  // decoder keeps as it is (or that is not decoded: rows outside the range) is looked at here; the
  // other decoders take only text of a fixed grammar, which a control character never fits.
  const loop = `for (let k = p + 1; k < q; k++) if (s.charCodeAt(k) < 32) return -1;`;
  const controlCheck = keepsText(type) ? `${loop}\n` : `if (i < from || i >= to) ${loop}\n`;
  // A slice of 13 chars or more shares the page's text: a row kept by the caller would keep the whole page.
  const take = copyLong ? `${v} = q - p - 1 < ${SLICED_FROM} ? s.slice(p + 1, q) : JSON.parse(s.slice(p, q + 1));` : `${v} = s.slice(p + 1, q);`;
  // Taken straight from the text by the column's own reader (no string made), else as a string.
  const value = direct ? `if (i >= from && i < to && t${i}(s, p + 1, q)) ${v} = TAKEN;\nelse ${take}` : take;
  const str = `if (c === 34) {\nq = s.indexOf('"', p + 1);\nif (q < 0) return -1;\n${controlCheck}${value}\np = q + 1;\n}`;
  const read = `p = readNumber(s, p, o);\nif (p < 0) return -1;\n${v} = o.v;`;
  // An integer column's usual value, a positive integer of up to 15 digits (exact as the digits'
  // double, as readNumber reads it), is read here without the call; anything else by readNumber.
  const integer = `if (c >= 49 && c <= 57) {
let m = c - 48, e = p + 1, d = s.charCodeAt(e);
while (d >= 48 && d <= 57) { m = m * 10 + (d - 48); d = s.charCodeAt(++e); }
if (e - p <= 15 && d !== 46 && d !== 101 && d !== 69) { ${v} = m; p = e; }
else { ${read} }
} else if (c === 45 || c === 48) {\n${read}\n}`;
  const num = integral(type) ? integer : `if (c === 45 || (c >= 48 && c <= 57)) {\n${read}\n}`;
  const rest = [
    `if (c === 110 && s.startsWith('null', p)) {\n${v} = null;\np += 4;\n}`,
    `if (c === 116 && s.startsWith('true', p)) {\n${v} = true;\np += 4;\n}`,
    `if (c === 102 && s.startsWith('false', p)) {\n${v} = false;\np += 5;\n}`,
  ];
  const branches = numeric(type) ? [num, str, ...rest] : [str, num, ...rest];
  return `${branches.join(' else ')} else return -1;`;
}

/** What a scanner does with the values it reads. */
export interface ScanCode {
  /** Code run for each row read (rows `from` to `to - 1`), over `v0..vN` and `out`. */
  readonly emit: string;
  /** Names the code closes over, with their values. */
  readonly bound: ReadonlyMap<string, unknown>;
  /** Long strings copied (true: rows a caller may keep), or slices sharing the page's text. */
  readonly copyLong: boolean;
  /**
   * Per column, a reader of a string value straight from the page's text (`s`, start, end: without
   * the quotes) that returns true when it took the value, which `v{i}` then holds as `TAKEN`, and
   * false (nothing taken) to have it as a string.
   */
  readonly direct?: readonly (DirectReader | undefined)[];
}

/** Takes a string value from the page's text without making a string of it; false when it does not take it. */
export type DirectReader = (s: string, at: number, end: number) => boolean;

/** What `v{i}` holds when a direct reader took column i's value. */
export const TAKEN: unique symbol = Symbol('taken');

/**
 * The scanner of a column list: `scan(s, p, from, to, out)` reads the array whose `[` is at `p`,
 * runs `emit` (code over `v0..vN` and `out`) for rows `from` to `to - 1`, sets `o.count` and
 * returns the index after the `]`, or -1 when the text is not of the shape it reads. Undefined
 * when a column is nested, two columns share a name (JSON keeps the last of two equal keys, which
 * a read in column order cannot give), or code cannot be generated here.
 */
export function compileScan(columns: readonly ColumnSpec[], types: readonly SqlType[], code: ScanCode): Scanner | undefined {
  const values = rowSource(columns, types, code);
  if (values === undefined) return undefined;
  const locals = columns.map((_, i) => `v${i}`).join(', ');
  const body = `return function scan(s, p, from, to, out) {
let c, q, ${locals};
let i = 0;
p = skipSpace(s, p + 1);
if (s.charCodeAt(p) === 93) { o.count = 0; return p + 1; }
for (;;) {
${values}
if (i >= from && i < to) {
${code.emit}
}
i++;
${rowEnd('i')}
}
};`;
  return scannerOf(body, code);
}

/**
 * The code reading one row's values in column order into `v0..vN`, from its `{` (at `p`) to the
 * char after its `}` (in `c`, `p` past the `}`); undefined when the columns cannot be read so.
 */
export function rowSource(columns: readonly ColumnSpec[], types: readonly SqlType[], code: ScanCode): string | undefined {
  const { copyLong, direct = [] } = code;
  if (columns.length === 0 || !types.every(scalar) || new Set(columns.map((c) => c.name)).size !== columns.length) return undefined;
  const n = columns.length;
  const values = columns.map((c, i) => {
    const key = JSON.stringify(c.name);
    const after = i === n - 1 ? 125 : 44;
    return [
      keyCheck(key),
      `p += ${key.length};`,
      `if (s.charCodeAt(p) !== 58) { p = skipSpace(s, p); if (s.charCodeAt(p) !== 58) return -1; }`,
      `c = s.charCodeAt(++p);`,
      `if (c <= 32) { p = skipSpace(s, p); c = s.charCodeAt(p); }`,
      valueSource(i, types[i]!, copyLong, direct[i] !== undefined),
      `c = s.charCodeAt(p);`,
      `if (c !== ${after}) { p = skipSpace(s, p); c = s.charCodeAt(p); if (c !== ${after}) return -1; }`,
      `c = s.charCodeAt(++p);`,
      i === n - 1 ? '' : `if (c <= 32) { p = skipSpace(s, p); }`,
    ].join('\n');
  });
  return ['if (s.charCodeAt(p) !== 123) return -1;', 'if (s.charCodeAt(++p) <= 32) p = skipSpace(s, p);', ...values].join('\n');
}

/**
 * The code after a row's `}` (in `c`): past the `,` and the whitespace after it to the next row,
 * or past the array's `]`, returning there with `o.count` the rows counted in `count`; -1 on
 * anything else.
 */
export function rowEnd(count: string): string {
  return `if (c <= 32) { p = skipSpace(s, p); c = s.charCodeAt(p); }
p++;
if (c === 93) { o.count = ${count}; return p; }
if (c !== 44) return -1;
if (s.charCodeAt(p) <= 32) p = skipSpace(s, p);`;
}

/** The generated function of `body` bound to what it closes over, with the state it writes. */
export function scannerOf(body: string, code: ScanCode): Scanner | undefined {
  const directReaders = (code.direct ?? []).flatMap((d, i): [string, unknown][] => (d === undefined ? [] : [[`t${i}`, d]]));
  const bound = new Map<string, unknown>([['TAKEN', TAKEN], ...directReaders, ...code.bound]);
  const make = generated(['o', 'readNumber', 'skipSpace', ...bound.keys()], body);
  if (make === undefined) return undefined;
  const state: ScanState = { v: undefined, count: 0 };
  return { scan: make(state, readNumber, skipSpace, ...bound.values()) as Scanner['scan'], state };
}

/**
 * The check that `key` (a JSON string) is at `p`: its chars compared one by one when it is short
 * (measured: a `startsWith` call per key cost about 15% of the scan), else `startsWith`.
 */
function keyCheck(key: string): string {
  if (key.length > 24) return `if (!s.startsWith(${JSON.stringify(key)}, p)) return -1;`;
  const chars = Array.from({ length: key.length }, (_, k) => `s.charCodeAt(p + ${k}) !== ${key.charCodeAt(k)}`);
  return `if (${chars.join(' || ')}) return -1;`;
}

/** Index of the `[` of the page's `result.rows`, or -1 (then the general path reads the page). */
export function rowsArrayStart(text: string): number {
  // A backslash anywhere means escapes: strings would need unescaping, which `JSON.parse` does.
  if (text.indexOf('\\') >= 0) return -1;
  const key = text.indexOf('"rows"');
  if (key < 0) return -1;
  let p = skipSpace(text, key + 6);
  if (text.charCodeAt(p) !== 58) return -1;
  p = skipSpace(text, p + 1);
  return text.charCodeAt(p) === 91 ? p : -1;
}

/** Runs a scanner over a page's rows array: its read, or undefined when it gave up or a value threw. */
export function readRows<T>(scanner: Scanner, text: string, from: number, to: number, out: T): TextRead<T> | undefined {
  const start = rowsArrayStart(text);
  if (start < 0) return undefined;
  let end: number;
  try {
    end = scanner.scan(text, start, from, to, out);
  } catch {
    return undefined;
  }
  if (end < 0) return undefined;
  return { value: out, count: scanner.state.count, start, end };
}

/**
 * The typed rows of a page, read from its text: each row exactly what
 * `compileRowDecoder(columns, options)` makes of the parsed row. Undefined when there is no such
 * reader for these columns (a nested column, a column named `__proto__`, no code generation).
 */
export function compileTextRows(columns: readonly ColumnSpec[], options: DecodeOptions = {}): TextReader<Row[]> | undefined {
  return cachedReader('rows', columns, options, () => textRows(columns, options));
}

function textRows(columns: readonly ColumnSpec[], options: DecodeOptions): TextReader<Row[]> | undefined {
  const rows = typedRowsCode(columns, options);
  const scanner = rows === undefined ? undefined : compileScan(columns, rows.types, rows.code);
  if (scanner === undefined) return undefined;
  return (text, from, to) => readRows(scanner, text, from, to, [] as Row[]);
}

/**
 * The columns' types and the scan code pushing each row as its typed row object onto `out`, for
 * every reader of typed rows from a page's text; undefined for a column named `__proto__` (an
 * object literal would take that key as the prototype).
 */
export function typedRowsCode(columns: readonly ColumnSpec[], options: DecodeOptions): { types: SqlType[]; code: ScanCode } | undefined {
  const names = columns.map((c) => c.name);
  if (names.includes('__proto__')) return undefined;
  const types = columns.map((c) => parseType(c.type));
  const values = typedValues(types, options);
  const literal = names.map((name, i) => `${JSON.stringify(name)}: ${values.of(i)}`).join(',\n');
  return { types, code: { emit: `out.push({\n${literal}\n});`, bound: values.bound, copyLong: true, direct: values.direct } };
}

/**
 * How the generated code makes each column's typed value: `of(i)` is the expression. The column's
 * decoder (bound as `d{i}`) of what was read; or, for a column with a text reader (bound as `t{i}`
 * through `direct`), the value that reader took from the text (in `r{i}.value`) when it took it.
 * `r{i}` is read when the row is emitted, after the other columns' decoders ran: sound because
 * decoders are the library's own and never read a page (a reader is shared by every stream of
 * its column list, as are the scanner's own state and holders).
 */
function typedValues(types: readonly SqlType[], options: DecodeOptions) {
  const bound = new Map<string, unknown>(types.map((t, i): [string, ValueDecoder] => [`d${i}`, compileDecoder(t, options)]));
  const direct = types.map((t, i) => {
    const taken = { value: undefined as unknown };
    const reader = textValueReader(t, options, taken);
    if (reader !== undefined) bound.set(`r${i}`, taken);
    return reader;
  });
  const of = (i: number) => (direct[i] === undefined ? `d${i}(v${i})` : `v${i} === TAKEN ? r${i}.value : d${i}(v${i})`);
  return { bound, direct, of };
}

/**
 * Readers already made, by what they read and the column list: every stream of the same columns
 * uses the same reader, so the scanner's calls to decoders and builders each keep one target, which
 * V8 inlines (measured: six readers of one column list taking turns read 9% slower than one).
 */
const readers = new Map<string, unknown>();
/**
 * Column lists seen by one process are few. A batch reader keeps its builders' buffers, sized for a
 * page (a few MB), between pages: the bound keeps a long-lived process (the scheduler) of many
 * queries from holding many of them.
 */
const READERS_LIMIT = 16;

export function cachedReader<T>(kind: string, columns: readonly ColumnSpec[], options: unknown, make: () => T): T {
  const key = JSON.stringify([kind, columns.map((c) => [c.name, c.type]), options]);
  if (readers.has(key)) return readers.get(key) as T;
  const made = make();
  if (readers.size >= READERS_LIMIT) readers.delete(readers.keys().next().value!);
  readers.set(key, made);
  return made;
}
