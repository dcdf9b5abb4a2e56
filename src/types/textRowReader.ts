import type { ColumnSpec, DecodeOptions } from './decode.ts';
import type { SqlType } from './sqlType.ts';
import { cachedReader, rowEnd, rowsArrayStart, rowSource, scannerOf, skipSpace, typedRowsCode, type ScanCode, type ScanState } from './textRows.ts';

/**
 * Typed rows of a JSON result page read from its text a few at a time, as they are used: the
 * page's rows array is located when the page arrives, and its rows are read (their values decoded,
 * their objects made) only when the reader gets near them. Rows built a page at a time, ahead of
 * the consumer, all outlive a young-generation collection and are copied out of it; rows made when
 * they are used die young. Each row is exactly what `compileTextRows` makes of it (the same
 * generated value code).
 */
export interface TextRowReader {
  /**
   * Reads up to `n` rows from the one whose `{` is at `p`, pushing them onto `out`, with
   * `state.count` the rows read; returns the index where the next row starts, or one past the
   * array's `]` after its last row (the char before it is then the `]`); -1, or a throw from a
   * decoder, when a row is not one read here (then the page is parsed and its rows decoded the
   * general way, which raises the error, if any).
   */
  readonly rows: RowsScan;
  /** `count`: the rows the last call of `rows` read. */
  readonly state: ScanState;
}

/**
 * The row reader of a column list (see {@link TextRowReader}); undefined where `compileTextRows`
 * is (a nested column, a column named `__proto__`, no code generation).
 */
export function compileTextRowReader(columns: readonly ColumnSpec[], options: DecodeOptions = {}): TextRowReader | undefined {
  return cachedReader('row', columns, options, () => rowReader(columns, options));
}

function rowReader(columns: readonly ColumnSpec[], options: DecodeOptions): TextRowReader | undefined {
  const rows = typedRowsCode(columns, options);
  const scanner = rows === undefined ? undefined : compileRowsScan(columns, rows.types, rows.code);
  return scanner === undefined ? undefined : { rows: scanner.scan, state: scanner.state };
}

/**
 * Reads up to `n` rows from the one whose `{` is at `p`, runs the emit over each, sets `o.count` to
 * the rows read, and returns where the next row starts (see {@link compileRowsScan}).
 */
export type RowsScan = (s: string, p: number, n: number, out: unknown) => number;

/**
 * The reader of the next `n` rows of an array: `rows(s, p, n, out)` reads rows from the one whose
 * `{` is at `p` (the shape `compileScan` reads, each value as it reads it), runs `emit` for each,
 * and stops after the n-th or at the array's `]`, with `o.count` the rows read; it returns the
 * index after the `,` and whitespace following the last row read (the next row's `{`), or after
 * the `]` (then the char before that index is the `]`); -1 when the text there is not such a row.
 * Undefined where `compileScan` is.
 */
function compileRowsScan(columns: readonly ColumnSpec[], types: readonly SqlType[], code: ScanCode): { scan: RowsScan; state: ScanState } | undefined {
  const values = rowSource(columns, types, code);
  if (values === undefined) return undefined;
  const locals = columns.map((_, i) => `v${i}`).join(', ');
  // The value code reads `i`, `from` and `to` (rows outside the range are only checked): every row here is in range.
  const body = `return function rows(s, p, n, out) {
let c, q, ${locals};
const i = 0, from = 0, to = 1;
let k = 0;
for (;;) {
${values}
${code.emit}
k++;
${rowEnd('k')}
if (k === n) { o.count = k; return p; }
}
};`;
  const scanner = scannerOf(body, code);
  return scanner === undefined ? undefined : { scan: scanner.scan as unknown as RowsScan, state: scanner.state };
}

/** Tries of `"metadata"` found back from the page's end that are not the envelope's key (a column of that name). */
const METADATA_TRIES = 4;

/**
 * Where a page's `result.rows` array is: `start` the index of its `[`, `end` one past its `]`,
 * `first` where its first row starts. Its envelope must have the `"metadata"` key right after it,
 * as the service writes `{"rows":[...],"metadata":{...}}`: the end is found from the key, back over
 * `,` and `]`, without reading the rows (a `"metadata"` key inside them is a column of that name,
 * before the envelope's). Rows are read only as they are used, the last one checked to end
 * exactly there. Undefined when the page is not of that shape: it is then parsed.
 */
export function locateRows(text: string): { start: number; end: number; first: number } | undefined {
  const start = rowsArrayStart(text);
  if (start < 0) return undefined;
  let key = text.length;
  for (let k = 0; k < METADATA_TRIES; k++) {
    key = text.lastIndexOf('"metadata"', key - 1);
    if (key <= start) return undefined;
    if (text.charCodeAt(skipSpace(text, key + 10)) !== 58) continue;
    let p = skipSpaceBack(text, key - 1);
    if (text.charCodeAt(p) !== 44) return undefined;
    p = skipSpaceBack(text, p - 1);
    if (text.charCodeAt(p) !== 93 || p <= start || !onlyArray(text, start, p)) return undefined;
    return { start, end: p + 1, first: skipSpace(text, start + 1) };
  }
  return undefined;
}

/**
 * Whether no array closes between `start` and the `]` at `close` but at `close`: no `]` there is
 * followed by `,`, `}` or `]` (a string may hold any other `]`, which cannot end it). Else the
 * text there could be an array followed by more of the envelope, such as a second `"rows"` key,
 * whose array JSON keeps instead of the first: rows read from the first must never be handed out.
 * A `]` is rare in rows of scalars, so the search runs at the speed of a byte search.
 */
function onlyArray(text: string, start: number, close: number): boolean {
  for (let q = text.indexOf(']', start + 1); q < close; q = text.indexOf(']', q + 1)) {
    const c = text.charCodeAt(skipSpace(text, q + 1));
    if (c === 44 || c === 125 || c === 93) return false;
  }
  return true;
}

/** Index of the last non-whitespace character at or before `p`. */
function skipSpaceBack(s: string, p: number): number {
  let c = s.charCodeAt(p);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(--p);
  return p;
}
