// The `filters` and `sort_by` result parameters (protocol.md section 4): a tokenizer and a
// recursive-descent parser build an AST, which renders as SQL over validated column references
// and literal values only, so no input can inject SQL. Anything outside the grammar is a
// bad_request naming what was unexpected and where (0-based offset in the parameter text).
import { sqlString } from '../../sql.ts';
import { EngineError } from '../types.ts';

type Token =
  | { kind: 'ident'; text: string; pos: number; quoted: boolean }
  | { kind: 'string'; text: string; pos: number }
  | { kind: 'number'; text: string; pos: number }
  | { kind: 'op'; text: string; pos: number }
  | { kind: 'punct'; text: '(' | ')' | ','; pos: number }
  | { kind: 'end'; pos: number };

export type FilterValue = { kind: 'string'; text: string } | { kind: 'number'; text: string };

export type FilterNode =
  | { kind: 'and' | 'or'; left: FilterNode; right: FilterNode }
  | { kind: 'compare'; column: string; op: '=' | '!=' | '<' | '<=' | '>' | '>='; value: FilterValue }
  | { kind: 'in'; column: string; values: FilterValue[] }
  | { kind: 'like'; column: string; pattern: string }
  | { kind: 'null'; column: string; negated: boolean };

export interface SortKey {
  column: string;
  descending: boolean;
}

const NUMBER = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;
const OPS = ['<=', '>=', '<>', '!=', '=', '<', '>'];

function fail(param: string, message: string, pos: number): never {
  throw new EngineError('bad_request', `${param}: ${message} at ${pos}`, { position: pos });
}

function describe(token: Token, input: string): string {
  if (token.kind === 'end') return 'end of input';
  return `"${input.slice(token.pos, token.pos + Math.max(1, token.kind === 'ident' || token.kind === 'op' ? token.text.length : 1))}"`;
}

export function tokenize(input: string, param: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (/\s/.test(ch)) {
      i += 1;
      continue;
    }
    const rest = input.slice(i);
    if (ch === "'" || ch === '"') {
      let j = i + 1;
      let text = '';
      for (;;) {
        if (j >= input.length) fail(param, `unterminated ${ch === "'" ? 'string' : 'quoted name'} starting`, i);
        const c = input[j]!;
        if (c === ch) {
          if (input[j + 1] === ch) {
            text += ch;
            j += 2;
            continue;
          }
          break;
        }
        text += c;
        j += 1;
      }
      if (ch === '"' && text.length === 0) fail(param, 'empty quoted name', i);
      tokens.push(ch === "'" ? { kind: 'string', text, pos: i } : { kind: 'ident', text, pos: i, quoted: true });
      i = j + 1;
      continue;
    }
    const num = NUMBER.exec(rest);
    if (num && (ch !== '-' || /[\d.]/.test(input[i + 1] ?? ''))) {
      if (IDENT.test(input.slice(i + num[0].length))) fail(param, `unexpected "${input[i + num[0].length]}"`, i + num[0].length);
      tokens.push({ kind: 'number', text: num[0], pos: i });
      i += num[0].length;
      continue;
    }
    const ident = IDENT.exec(rest);
    if (ident) {
      tokens.push({ kind: 'ident', text: ident[0], pos: i, quoted: false });
      i += ident[0].length;
      continue;
    }
    const op = OPS.find((o) => rest.startsWith(o));
    if (op) {
      tokens.push({ kind: 'op', text: op, pos: i });
      i += op.length;
      continue;
    }
    if (ch === '(' || ch === ')' || ch === ',') {
      tokens.push({ kind: 'punct', text: ch, pos: i });
      i += 1;
      continue;
    }
    fail(param, `unexpected "${String.fromCodePoint(input.codePointAt(i) ?? 0)}"`, i);
  }
  tokens.push({ kind: 'end', pos: input.length });
  return tokens;
}

/**
 * Parentheses deeper than this are refused: each level is a few stack frames of the parser and
 * an expression level in DuckDB (which stops at 1000), and no real filter needs more.
 */
export const MAX_FILTER_DEPTH = 100;

class Parser {
  private i = 0;
  private depth = 0;
  private readonly tokens: Token[];
  private readonly input: string;
  private readonly param: string;

  constructor(input: string, param: string) {
    this.input = input;
    this.param = param;
    this.tokens = tokenize(input, param);
  }

  peek(): Token {
    return this.tokens[this.i]!;
  }

  next(): Token {
    const t = this.tokens[this.i]!;
    if (t.kind !== 'end') this.i += 1;
    return t;
  }

  isKeyword(word: string): boolean {
    const t = this.peek();
    return t.kind === 'ident' && !t.quoted && t.text.toUpperCase() === word;
  }

  unexpected(token: Token, wanted: string): never {
    return fail(this.param, `unexpected ${describe(token, this.input)}, expected ${wanted},`, token.pos);
  }

  expectEnd(): void {
    const t = this.peek();
    if (t.kind !== 'end') this.unexpected(t, 'end of input');
  }

  column(): string {
    const t = this.next();
    if (t.kind !== 'ident') this.unexpected(t, 'a column name');
    if (!t.quoted && ['AND', 'OR', 'NOT', 'IN', 'LIKE', 'IS', 'NULL', 'ASC', 'DESC'].includes(t.text.toUpperCase())) {
      this.unexpected(t, 'a column name (quote it with "" if it is one)');
    }
    return t.text;
  }

  orExpr(): FilterNode {
    let left = this.andExpr();
    while (this.isKeyword('OR')) {
      this.next();
      left = { kind: 'or', left, right: this.andExpr() };
    }
    return left;
  }

  andExpr(): FilterNode {
    let left = this.primary();
    while (this.isKeyword('AND')) {
      this.next();
      left = { kind: 'and', left, right: this.primary() };
    }
    return left;
  }

  primary(): FilterNode {
    const t = this.peek();
    if (t.kind === 'punct' && t.text === '(') {
      if (++this.depth > MAX_FILTER_DEPTH) fail(this.param, `parentheses nested more than ${MAX_FILTER_DEPTH} deep`, t.pos);
      this.next();
      const inner = this.orExpr();
      this.depth--;
      const close = this.next();
      if (close.kind !== 'punct' || close.text !== ')') this.unexpected(close, '")"');
      return inner;
    }
    return this.condition();
  }

  value(): FilterValue {
    const t = this.next();
    if (t.kind === 'string') return { kind: 'string', text: t.text };
    if (t.kind === 'number') return { kind: 'number', text: t.text };
    return this.unexpected(t, 'a quoted string or a number');
  }

  condition(): FilterNode {
    const column = this.column();
    const t = this.next();
    if (t.kind === 'op') {
      const op = t.text === '<>' ? '!=' : t.text;
      if (op !== '=' && op !== '!=' && op !== '<' && op !== '<=' && op !== '>' && op !== '>=') this.unexpected(t, 'an operator');
      return { kind: 'compare', column, op, value: this.value() };
    }
    if (t.kind === 'ident' && !t.quoted) {
      const word = t.text.toUpperCase();
      if (word === 'IN') return { kind: 'in', column, values: this.inValues() };
      if (word === 'LIKE') {
        const pattern = this.next();
        if (pattern.kind !== 'string') this.unexpected(pattern, 'a quoted pattern');
        return { kind: 'like', column, pattern: pattern.text };
      }
      if (word === 'IS') return { kind: 'null', column, negated: this.isNull() };
    }
    return this.unexpected(t, 'an operator (= != <> < <= > >= IN LIKE IS)');
  }

  /** `(v, ...)` after IN. */
  inValues(): FilterValue[] {
    const open = this.next();
    if (open.kind !== 'punct' || open.text !== '(') this.unexpected(open, '"("');
    const values = [this.value()];
    for (;;) {
      const sep = this.next();
      if (sep.kind === 'punct' && sep.text === ')') return values;
      if (sep.kind !== 'punct' || sep.text !== ',') this.unexpected(sep, '"," or ")"');
      values.push(this.value());
    }
  }

  /** `[NOT] NULL` after IS: whether it is negated. */
  isNull(): boolean {
    let negated = false;
    if (this.isKeyword('NOT')) {
      this.next();
      negated = true;
    }
    const n = this.next();
    if (n.kind !== 'ident' || n.quoted || n.text.toUpperCase() !== 'NULL') this.unexpected(n, 'NULL');
    return negated;
  }

  sortKeys(): SortKey[] {
    const keys: SortKey[] = [];
    for (;;) {
      const column = this.column();
      let descending = false;
      if (this.isKeyword('ASC')) this.next();
      else if (this.isKeyword('DESC')) {
        this.next();
        descending = true;
      }
      keys.push({ column, descending });
      const t = this.next();
      if (t.kind === 'end') return keys;
      if (t.kind !== 'punct' || t.text !== ',') this.unexpected(t, '",", ASC, DESC or end of input');
    }
  }
}

export function parseFilters(input: string): FilterNode {
  const parser = new Parser(input, 'filters');
  if (parser.peek().kind === 'end') fail('filters', 'empty filter', 0);
  const node = parser.orExpr();
  parser.expectEnd();
  return node;
}

export function parseSortBy(input: string): SortKey[] {
  const parser = new Parser(input, 'sort_by');
  if (parser.peek().kind === 'end') fail('sort_by', 'empty sort', 0);
  return parser.sortKeys();
}

/** How the renderer reaches a column: SQL for comparisons and for LIKE, or undefined if unknown. */
export interface ColumnRefs {
  compare(column: string): { sql: string; textual: boolean } | undefined;
  likeText(column: string): string | undefined;
}

function literal(value: FilterValue, textual: boolean): string {
  if (value.kind === 'number' && !textual) return value.text; // matched NUMBER: digits only
  return sqlString(value.text);
}

export function renderFilter(node: FilterNode, refs: ColumnRefs): string {
  const col = (name: string): { sql: string; textual: boolean } => {
    const ref = refs.compare(name);
    if (!ref) throw new EngineError('bad_request', `filters: unknown column "${name}"`);
    return ref;
  };
  switch (node.kind) {
    case 'and':
    case 'or': {
      // A chain of one operator renders flat, `(a AND b AND c)`: nested pairs would be one
      // expression level per condition, and DuckDB refuses more than 1000 levels.
      const operands: FilterNode[] = [];
      const todo: FilterNode[] = [node];
      while (todo.length > 0) {
        const n = todo.pop()!;
        if (n.kind === node.kind) todo.push(n.right, n.left);
        else operands.push(n);
      }
      return `(${operands.map((n) => renderFilter(n, refs)).join(` ${node.kind.toUpperCase()} `)})`;
    }
    case 'compare': {
      const ref = col(node.column);
      return `(${ref.sql} ${node.op} ${literal(node.value, ref.textual)})`;
    }
    case 'in': {
      const ref = col(node.column);
      return `(${ref.sql} IN (${node.values.map((v) => literal(v, ref.textual)).join(', ')}))`;
    }
    case 'like': {
      col(node.column);
      return `(${refs.likeText(node.column)} LIKE ${sqlString(node.pattern)})`;
    }
    case 'null':
      return `(${col(node.column).sql} IS ${node.negated ? 'NOT ' : ''}NULL)`;
  }
}
