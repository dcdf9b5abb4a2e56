// DuneSQL (Trino's dialect with Dune's literals, types and functions) -> DuckDB SQL, by
// rewriting tokens in place. Only the tokens that differ are replaced; everything else is
// copied byte for byte, so the translation keeps the user's layout and every offset of the
// translation maps back to the user's text (`sourceOffset`): DuckDB's error positions and the
// sandbox's denials point at what the user wrote. Semantics that depend on types, not on
// tokens, are left to DuckDB functions, macros and native functions of the same contract
// (functions.ts, nativeFunctions.ts); the integer division of Trino is a connection setting.
//
// Chosen against @polyglot-sql/sdk's Trino -> DuckDB transpiler by measurement (src/service/
// README.md, "The SQL dialect"): it parses no `0x` literal, passes most of Dune's and many of
// Trino's functions through by name, reprints the whole statement (no offset survives), and its
// WebAssembly module is far larger and slower to load and to run.
import { tokenize, type SqlToken } from '../sandbox/sqlTokens.ts';
import { FUNCTION_NAMES, FUNCTION_TEMPLATES, MACRO_NAMES } from './functions.ts';
import { translateFormat } from './formats.ts';
import { translateType } from './types.ts';
import { lambdaBody } from './lambdas.ts';

export interface Translation {
  /** The DuckDB SQL to run. */
  sql: string;
  /** Offset in the user's statement of an offset in `sql` (both UTF-16). */
  sourceOffset(at: number): number;
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

const HEX_LITERAL = /^0x[0-9a-f]*$/;
const ZONED = /(\s|\d)(utc|z|gmt|[+-]\d{1,2}(:?\d{2})?|[a-z_]+\/[a-z_/+-]+)\s*$/i;
/** Words that end a VALUES list written without parentheses. */
const AFTER_VALUES = new Set(['order', 'limit', 'offset', 'union', 'except', 'intersect', 'fetch', 'as', 'where', 'group', 'on']);

export function translateDuneSql(text: string): Translation {
  const tokens = tokenize(text);
  const edits: Edit[] = [];
  const taken = new Set<number>();
  for (let i = 0; i < tokens.length; i += 1) {
    if (taken.has(i)) continue;
    const t = tokens[i]!;
    if (t.kind !== 'word') continue;
    const next = tokens[i + 1];
    const prev = tokens[i - 1];
    if (literal(t, next, i, edits, taken)) {
      continue;
    } else if (t.value === 'values' && next && !isPunct(next, '(')) {
      valuesRows(tokens, i + 1, edits);
    } else if ((t.value === 'cast' || t.value === 'try_cast') && next && isPunct(next, '(') && !isPunct(prev, '.')) {
      castType(tokens, i, edits, taken);
    } else if (next && isPunct(next, '(') && !isPunct(prev, '.') && !isPunct(prev, ')')) {
      // After ')' a word before '(' is a clause (count(*) FILTER (WHERE ...)), not a call.
      functionCall(text, tokens, i, edits, taken);
    }
  }
  return apply(text, edits);
}

/** A literal written the DuneSQL way (0x..., X'...', TIMESTAMP '... zone'): its edit, and true. */
function literal(t: SqlToken, next: SqlToken | undefined, i: number, edits: Edit[], taken: Set<number>): boolean {
  if (HEX_LITERAL.test(t.value)) {
    edits.push({ start: t.start, end: t.end, text: hexBlob(t.value.slice(2)) });
  } else if (t.value === 'x' && next?.kind === 'string' && next.start === t.end && /^[0-9a-f]*$/i.test(next.value)) {
    edits.push({ start: t.start, end: next.end, text: hexBlob(next.value) });
    taken.add(i + 1);
  } else if (t.value === 'timestamp' && next?.kind === 'string' && ZONED.test(next.value)) {
    edits.push({ start: t.start, end: t.end, text: 'TIMESTAMPTZ' });
  } else {
    return false;
  }
  return true;
}

function isPunct(t: SqlToken | undefined, value: string): boolean {
  return t !== undefined && t.kind === 'punct' && t.value === value;
}

function hexBlob(hex: string): string {
  const even = (hex.length % 2 === 1 ? `0${hex}` : hex).toLowerCase();
  return `from_hex('${even}')`;
}

/** Index of the ')' closing the '(' at `open`, or -1. */
function closeOf(tokens: SqlToken[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (t.value === '(' || t.value === '[') depth += 1;
    else if (t.value === ')' || t.value === ']') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** Top-level argument ranges [first, last] (token indexes) between '(' at `open` and its ')'. */
function argumentsOf(tokens: SqlToken[], open: number, close: number): [number, number][] {
  const out: [number, number][] = [];
  let depth = 0;
  let from = open + 1;
  for (let i = open + 1; i < close; i += 1) {
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (t.value === '(' || t.value === '[') depth += 1;
    else if (t.value === ')' || t.value === ']') depth -= 1;
    else if (t.value === ',' && depth === 0) {
      out.push([from, i - 1]);
      from = i + 1;
    }
  }
  if (from < close) out.push([from, close - 1]);
  return out;
}

/** `VALUES 1, 2` is one column of two rows in Trino; DuckDB wants each row in parentheses. */
function valuesRows(tokens: SqlToken[], from: number, edits: Edit[]): void {
  let depth = 0;
  let rowStart = from;
  const close = (end: number): void => {
    if (end < rowStart) return;
    edits.push({ start: tokens[rowStart]!.start, end: tokens[rowStart]!.start, text: '(' });
    edits.push({ start: tokens[end]!.end, end: tokens[end]!.end, text: ')' });
  };
  for (let i = from; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && (t.value === '(' || t.value === '[')) depth += 1;
    else if (t.kind === 'punct' && (t.value === ')' || t.value === ']')) {
      if (depth === 0) return close(i - 1);
      depth -= 1;
    } else if (depth === 0 && t.kind === 'punct' && (t.value === ',' || t.value === ';')) {
      close(i - 1);
      if (t.value === ';') return;
      rowStart = i + 1;
    } else if (depth === 0 && t.kind === 'word' && AFTER_VALUES.has(t.value)) {
      return close(i - 1);
    }
  }
  close(tokens.length - 1);
}

/** CAST(e AS type): Trino's type names become DuckDB's; a cast to uint256/int256 checks the range. */
function castType(tokens: SqlToken[], at: number, edits: Edit[], taken: Set<number>): void {
  const open = at + 1;
  const close = closeOf(tokens, open);
  if (close < 0) return;
  let depth = 0;
  let as = -1;
  for (let i = open + 1; i < close; i += 1) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && (t.value === '(' || t.value === '[')) depth += 1;
    else if (t.kind === 'punct' && (t.value === ')' || t.value === ']')) depth -= 1;
    else if (depth === 0 && t.kind === 'word' && t.value === 'as') as = i;
  }
  if (as < 0 || as + 1 >= close) return;
  for (let i = as + 1; i < close; i += 1) taken.add(i);
  const typeStart = tokens[as + 1]!.start;
  const typeEnd = tokens[close - 1]!.end;
  const typeTokens = tokens.slice(as + 1, close);
  const big = typeTokens.length === 1 && (typeTokens[0]!.value === 'uint256' || typeTokens[0]!.value === 'int256');
  if (big) {
    // The constructor macros check the range: 2^256 is an error, as in the real service.
    const fn = tokens[at]!.value === 'try_cast' ? `try_${typeTokens[0]!.value}` : typeTokens[0]!.value;
    edits.push({ start: tokens[at]!.start, end: tokens[at]!.end, text: fn });
    edits.push({ start: tokens[as - 1]!.end, end: typeEnd, text: '' });
    return;
  }
  const duck = translateType(typeTokens);
  if (duck !== undefined) edits.push({ start: typeStart, end: typeEnd, text: duck });
}

/** A call of a Trino or Dune function: renamed to the DuckDB function or macro of its contract. */
function functionCall(text: string, tokens: SqlToken[], at: number, edits: Edit[], taken: Set<number>): void {
  const t = tokens[at]!;
  const template = FUNCTION_TEMPLATES.get(t.value);
  if (template !== undefined && applyTemplate(text, tokens, at, template, edits, taken)) return;
  const name = FUNCTION_NAMES.get(t.value);
  // A macro cannot be a window function nor take FILTER, DISTINCT or ORDER BY: an aggregate
  // used so keeps DuckDB's own.
  if (name !== undefined && !(MACRO_NAME_SET.has(name) && aggregateClauses(tokens, at))) {
    edits.push({ start: t.start, end: t.end, text: name });
  }
  // Format patterns (MySQL's for date_format / date_parse, Joda's for format_datetime /
  // parse_datetime) become strftime patterns when written as literals, as they nearly always are.
  const kind = formatKind(t.value);
  if (kind === undefined) return;
  const close = closeOf(tokens, at + 1);
  if (close < 0) return;
  const args = argumentsOf(tokens, at + 1, close);
  const pattern = args[1];
  if (pattern === undefined || pattern[0] !== pattern[1]) return;
  const lit = tokens[pattern[0]]!;
  if (lit.kind !== 'string') return;
  taken.add(pattern[0]);
  edits.push({ start: lit.start, end: lit.end, text: `'${translateFormat(lit.value, kind).replaceAll("'", "''")}'` });
}

/**
 * A call whose arguments DuckDB wants in another order or inside other calls (a lambda cannot
 * be a macro's argument): the call is rewritten whole from its translated arguments. Offsets
 * inside it map to the call's name.
 */
function applyTemplate(
  text: string,
  tokens: SqlToken[],
  at: number,
  template: { arity: number; sql: string },
  edits: Edit[],
  taken: Set<number>,
): boolean {
  const close = closeOf(tokens, at + 1);
  if (close < 0) return false;
  const args = argumentsOf(tokens, at + 1, close);
  if (args.length !== template.arity) return false;
  const sqlOf = args.map(([a, b]) => translateDuneSql(text.slice(tokens[a]!.start, tokens[b]!.end)).sql);
  // {n}: the n-th argument; {n@x,y}: the body of the n-th argument, a lambda, its parameters replaced by x and y.
  let ok = true;
  const sql = template.sql.replace(/\{(\d)(?:@([^}]*))?\}/g, (_, n: string, params: string | undefined) => {
    if (params === undefined) return sqlOf[Number(n)]!;
    const body = lambdaBody(sqlOf[Number(n)]!, params.split(','));
    if (body === undefined) ok = false;
    return body ?? '';
  });
  if (!ok) return false;
  edits.push({ start: tokens[at]!.start, end: tokens[close]!.end, text: sql });
  for (let i = at + 1; i <= close; i += 1) taken.add(i);
  return true;
}

const MACRO_NAME_SET: ReadonlySet<string> = new Set(MACRO_NAMES);

/** True when the call at `at` takes DISTINCT or ORDER BY, or is followed by OVER or FILTER. */
function aggregateClauses(tokens: SqlToken[], at: number): boolean {
  const close = closeOf(tokens, at + 1);
  if (close < 0) return false;
  const first = tokens[at + 2];
  if (first?.kind === 'word' && (first.value === 'distinct' || first.value === 'all')) return true;
  const args = argumentsOf(tokens, at + 1, close);
  const last = args.at(-1);
  for (let i = last?.[0] ?? close; last !== undefined && i <= last[1]; i += 1) {
    if (tokens[i]!.kind === 'word' && tokens[i]!.value === 'order' && tokens[i + 1]?.value === 'by') return true;
  }
  const after = tokens[close + 1];
  return after?.kind === 'word' && (after.value === 'over' || after.value === 'filter');
}

function formatKind(name: string): 'mysql' | 'joda' | undefined {
  if (name === 'date_format' || name === 'date_parse') return 'mysql';
  if (name === 'format_datetime' || name === 'parse_datetime') return 'joda';
  return undefined;
}

function apply(text: string, edits: Edit[]): Translation {
  edits.sort((a, b) => a.start - b.start || a.end - b.end);
  const parts: string[] = [];
  /** [start in sql, start in text, length in sql, replaced] of each piece, in order. */
  const pieces: [number, number, number, boolean][] = [];
  let from = 0;
  let out = 0;
  const push = (s: string, src: number, replaced: boolean): void => {
    if (s.length === 0) return;
    parts.push(s);
    pieces.push([out, src, s.length, replaced]);
    out += s.length;
  };
  for (const e of edits) {
    if (e.start < from) continue; // overlapping edits never happen; keep the first one
    push(text.slice(from, e.start), from, false);
    push(e.text, e.start, true);
    from = e.end;
  }
  push(text.slice(from), from, false);
  const sql = parts.join('');
  return {
    sql,
    sourceOffset(at: number): number {
      let lo = 0;
      let hi = pieces.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (pieces[mid]![0] <= at) lo = mid;
        else hi = mid - 1;
      }
      const piece = pieces[lo];
      if (piece === undefined) return Math.min(at, text.length);
      const [outStart, srcStart, , replaced] = piece;
      return replaced ? srcStart : Math.min(srcStart + (at - outStart), text.length);
    },
  };
}
