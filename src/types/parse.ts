import type { RowField, SqlType } from './sqlType.ts';

/** Deeper than this is not a real column type; treat it as unknown rather than recurse. */
const MAX_DEPTH = 64;

/**
 * Parse a `column_types` entry (protocol.md section 5) into a {@link SqlType}.
 *
 * Whitespace- and case-tolerant, nests to any sensible depth. Never throws: anything it does
 * not recognise, or cannot parse, is `{ kind: 'unknown', text }` with the trimmed original
 * text, so its values travel as strings. Inside a nested type only the unrecognised part is
 * unknown (`array(geometry)` is an array of unknown).
 */
export function parseType(text: string): SqlType {
  const trimmed = typeof text === 'string' ? text.trim() : String(text);
  try {
    return parseAt(trimmed, 0);
  } catch {
    return { kind: 'unknown', text: trimmed };
  }
}

/** Thrown inside the parser on malformed text; never escapes `parseType`. */
class Malformed extends Error {}

const WORD = /^[a-z_][a-z0-9_]*/i;
const INTEGER = /^\d{1,3}$/;

/** A type's head split into its parts: `timestamp(6) with time zone` is `timestamp`, `['6']`, `with time zone`. */
interface TypeCall {
  /** The leading word, lowercased. */
  name: string;
  /** The parenthesised parameters, each trimmed; undefined without parentheses. */
  args: string[] | undefined;
  /** What follows, lowercased, single-spaced; '' when nothing does. */
  suffix: string;
  /** How deeply the type is nested; its parameters are parsed one deeper. */
  depth: number;
}

/** Parses one construct from its parts, or undefined when they do not make that construct. */
type ConstructParser = (call: TypeCall) => SqlType | undefined;

function parseAt(s: string, depth: number): SqlType {
  if (depth > MAX_DEPTH) throw new Malformed('too deep');
  const call = splitCall(s, depth);
  const parsed = call === undefined ? undefined : (CONSTRUCTS.get(call.name) ?? parseSimple)(call);
  return parsed ?? { kind: 'unknown', text: s };
}

/** The parts of `s`, or undefined when it does not start with a word; throws Malformed on unbalanced parentheses. */
function splitCall(s: string, depth: number): TypeCall | undefined {
  const word = WORD.exec(s)?.[0];
  if (word === undefined) return undefined;
  let rest = s.slice(word.length).trimStart();
  let args: string[] | undefined;
  if (rest.startsWith('(')) {
    const close = matchingParen(rest);
    args = splitTopLevel(rest.slice(1, close));
    rest = rest.slice(close + 1).trim();
  }
  return { name: word.toLowerCase(), args, suffix: rest.toLowerCase().split(/\s+/).join(' '), depth };
}

function parseArray({ args, suffix, depth }: TypeCall): SqlType | undefined {
  if (args?.length !== 1 || suffix !== '') return undefined;
  return { kind: 'array', element: parseAt(args[0]!, depth + 1) };
}

function parseMap({ args, suffix, depth }: TypeCall): SqlType | undefined {
  if (args?.length !== 2 || suffix !== '') return undefined;
  return { kind: 'map', key: parseAt(args[0]!, depth + 1), value: parseAt(args[1]!, depth + 1) };
}

function parseRow({ args, suffix, depth }: TypeCall): SqlType | undefined {
  if (args === undefined || suffix !== '') return undefined;
  return { kind: 'row', fields: args.map((arg, i) => parseField(arg, i, depth + 1)) };
}

function parseDecimal({ args, suffix }: TypeCall): SqlType | undefined {
  if (suffix !== '') return undefined;
  const [p = '38', sc = '0', ...extra] = args ?? [];
  if (extra.length > 0 || !INTEGER.test(p) || !INTEGER.test(sc)) return undefined;
  const precision = Number(p);
  const scale = Number(sc);
  if (precision < 1 || precision > 76 || scale > precision) return undefined;
  return { kind: 'decimal', precision, scale };
}

/** `varchar` and `char`, with an optional length (`char` alone is `char(1)`). */
function parseCharacter({ name, args, suffix }: TypeCall): SqlType | undefined {
  if (suffix !== '') return undefined;
  if (args === undefined) return name === 'varchar' ? { kind: 'varchar' } : { kind: 'char', length: 1 };
  const n = args.length === 1 ? args[0]! : '';
  if (!/^\d{1,10}$/.test(n)) return undefined;
  return { kind: name as 'varchar' | 'char', length: Number(n) };
}

/** `time` and `timestamp`, with an optional precision; only a timestamp takes `with time zone`. */
function parseTemporal({ name, args, suffix }: TypeCall): SqlType | undefined {
  const precision = precisionOf(args);
  if (precision === undefined) return undefined;
  if (suffix === '' || suffix === 'without time zone') {
    return name === 'time' ? { kind: 'time', precision } : { kind: 'timestamp', precision, withTimeZone: false };
  }
  if (suffix === 'with time zone' && name === 'timestamp') return { kind: 'timestamp', precision, withTimeZone: true };
  return undefined;
}

function parseInterval({ args, suffix }: TypeCall): SqlType | undefined {
  if (args !== undefined) return undefined;
  if (suffix === 'day to second') return { kind: 'interval_day_to_second' };
  if (suffix === 'year to month') return { kind: 'interval_year_to_month' };
  return undefined;
}

function parseDouble({ args, suffix }: TypeCall): SqlType | undefined {
  return args === undefined && (suffix === '' || suffix === 'precision') ? { kind: 'double' } : undefined;
}

function parseIntAlias({ args, suffix }: TypeCall): SqlType | undefined {
  return args === undefined && suffix === '' ? { kind: 'integer' } : undefined;
}

/** A type that is one bare word: `bigint`, `uuid`, ... */
function parseSimple({ name, args, suffix }: TypeCall): SqlType | undefined {
  return args === undefined && suffix === '' && SIMPLE.has(name) ? ({ kind: name } as SqlType) : undefined;
}

const SIMPLE: ReadonlySet<string> = new Set([
  'boolean',
  'tinyint',
  'smallint',
  'integer',
  'bigint',
  'uint256',
  'int256',
  'real',
  'varbinary',
  'json',
  'date',
  'uuid',
  'ipaddress',
]);

/** The constructs with parameters or words after them, by their leading word; every other word is tried as a simple type. */
const CONSTRUCTS: ReadonlyMap<string, ConstructParser> = new Map([
  ['array', parseArray],
  ['map', parseMap],
  ['row', parseRow],
  ['decimal', parseDecimal],
  ['varchar', parseCharacter],
  ['char', parseCharacter],
  ['time', parseTemporal],
  ['timestamp', parseTemporal],
  ['interval', parseInterval],
  ['double', parseDouble],
  ['int', parseIntAlias],
]);

function precisionOf(args: string[] | undefined): number | undefined {
  if (args === undefined) return 3;
  if (args.length !== 1 || !INTEGER.test(args[0]!)) return undefined;
  const p = Number(args[0]);
  return p <= 12 ? p : undefined;
}

function parseField(arg: string, index: number, depth: number): RowField {
  if (arg.startsWith('"')) {
    const { name, end } = quotedName(arg);
    return { name, type: parseAt(arg.slice(end).trim(), depth) };
  }
  const word = WORD.exec(arg)?.[0];
  const rest = word === undefined ? '' : arg.slice(word.length);
  if (word !== undefined && /^\s/.test(rest)) {
    const type = parseAt(rest.trim(), depth);
    // `row(interval day to second)` is an anonymous field, not a field named `interval`.
    if (type.kind !== 'unknown') return { name: word, type };
    const whole = parseAt(arg, depth);
    if (whole.kind !== 'unknown') return { name: `_col${index}`, type: whole };
    return { name: word, type };
  }
  return { name: `_col${index}`, type: parseAt(arg, depth) };
}

function quotedName(s: string): { name: string; end: number } {
  let name = '';
  for (let i = 1; i < s.length; i++) {
    if (s[i] === '"') {
      if (s[i + 1] === '"') {
        name += '"';
        i++;
        continue;
      }
      return { name, end: i + 1 };
    }
    name += s[i];
  }
  throw new Malformed('unterminated quoted name');
}

/** Index of the `)` closing the `(` at index 0, skipping quoted names. */
function matchingParen(s: string): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') i = skipQuoted(s, i);
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  throw new Malformed('unbalanced parentheses');
}

/** Split on commas outside parentheses and quotes; each part trimmed, none empty. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"') i = skipQuoted(s, i);
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(s.slice(start).trim());
  if (parts.some((p) => p === '')) throw new Malformed('empty parameter');
  return parts;
}

/** Index of the closing quote of the quoted name opening at `i` (`""` is an escaped quote). */
function skipQuoted(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === '"') {
      if (s[j + 1] === '"') j++;
      else return j;
    }
  }
  throw new Malformed('unterminated quoted name');
}
