/**
 * A contract's SQL-like predicate (`amount >= 0 and status in ('paid', 'open')`): a small subset of
 * SQL expressions, parsed once and checked against the result's column types before any page is
 * fetched, then evaluated on every row. The subset: comparisons (= <> != < <= > >=), and / or / not,
 * is [not] null, [not] in (...), [not] between ... and ..., + - * / % on numbers, parentheses,
 * columns (bare or "quoted") and literals (numbers, 'text', true, false, null).
 *
 * Written here rather than taken from npm: the expression libraries evaluate with JavaScript's
 * semantics (no NULL, `'1' == 1`), and the SQL parsers parse whole statements and evaluate nothing;
 * a contract needs SQL's three-valued logic and the engine's order for dates and timestamps, which
 * the incremental cursor already has. Nothing in a predicate runs code: it is a tree of the
 * operators above over the row's values. Parsed here, at load; evaluated by the job runner
 * (src/jobs/contracts/contractPredicate.ts), which knows the columns' types.
 */

/** A predicate that does not parse or does not fit the columns: `at` is the 1-based character in the predicate. */
export class PredicateError extends Error {
  readonly at: number;
  constructor(text: string, at: number, problem: string) {
    super(`character ${at} of "${text}": ${problem}`);
    this.at = at;
  }
}

type Token = { kind: 'num' | 'str' | 'id' | 'op' | 'end'; text: string; value: string; at: number };

export type Node =
  | { t: 'lit'; value: number | string | boolean | null; at: number }
  | { t: 'col'; name: string; at: number }
  | { t: 'not' | 'neg'; arg: Node; at: number }
  | { t: 'bin'; op: string; left: Node; right: Node; at: number }
  | { t: 'isnull'; arg: Node; negated: boolean; at: number }
  | { t: 'in'; arg: Node; list: Node[]; negated: boolean; at: number }
  | { t: 'between'; arg: Node; low: Node; high: Node; negated: boolean; at: number };

/** A parsed predicate: its tree, and the columns it reads. */
export interface ParsedPredicate {
  readonly text: string;
  readonly tree: Node;
  readonly columns: readonly string[];
}

const KEYWORDS = new Set(['and', 'or', 'not', 'is', 'null', 'in', 'between', 'true', 'false']);

export function parsePredicate(text: string): ParsedPredicate {
  const tokens = tokenize(text);
  let i = 0;
  const peek = (): Token => tokens[i]!;
  const fail = (token: Token, problem: string): never => {
    throw new PredicateError(text, token.at, `${problem}, got ${token.kind === 'end' ? 'the end of the predicate' : `"${token.text}"`}`);
  };
  const isWord = (word: string, token = peek()): boolean => token.kind === 'id' && token.value === word && token.text.toLowerCase() === word;
  const take = (word: string): boolean => (isWord(word) || (peek().kind === 'op' && peek().value === word) ? (i++, true) : false);
  const expect = (word: string, what: string): void => {
    if (!take(word)) fail(peek(), `expected ${what}`);
  };

  const or = (): Node => {
    let left = and();
    for (let at = peek().at; take('or'); at = peek().at) left = { t: 'bin', op: 'or', left, right: and(), at };
    return left;
  };
  const and = (): Node => {
    let left = not();
    for (let at = peek().at; take('and'); at = peek().at) left = { t: 'bin', op: 'and', left, right: not(), at };
    return left;
  };
  const not = (): Node => {
    const at = peek().at;
    return take('not') ? { t: 'not', arg: not(), at } : comparison();
  };
  const comparison = (): Node => {
    const left = sum();
    const token = peek();
    if (token.kind === 'op' && ['=', '<>', '!=', '<', '<=', '>', '>='].includes(token.value)) {
      i++;
      return { t: 'bin', op: token.value === '!=' ? '<>' : token.value, left, right: sum(), at: token.at };
    }
    if (take('is')) {
      const negated = take('not');
      expect('null', 'null after "is"');
      return { t: 'isnull', arg: left, negated, at: token.at };
    }
    const negated = take('not');
    if (take('in')) {
      expect('(', '"(" after "in"');
      const list = [sum()];
      while (take(',')) list.push(sum());
      expect(')', '"," or ")" in the list of "in"');
      return { t: 'in', arg: left, list, negated, at: token.at };
    }
    if (take('between')) {
      const low = sum();
      expect('and', '"and" in "between ... and ..."');
      return { t: 'between', arg: left, low, high: sum(), negated, at: token.at };
    }
    if (negated) fail(peek(), 'expected "in" or "between" after "not"');
    return left;
  };
  const sum = (): Node => {
    let left = product();
    for (let token = peek(); token.kind === 'op' && (token.value === '+' || token.value === '-'); token = peek()) {
      i++;
      left = { t: 'bin', op: token.value, left, right: product(), at: token.at };
    }
    return left;
  };
  const product = (): Node => {
    let left = unary();
    for (let token = peek(); token.kind === 'op' && ['*', '/', '%'].includes(token.value); token = peek()) {
      i++;
      left = { t: 'bin', op: token.value, left, right: unary(), at: token.at };
    }
    return left;
  };
  const unary = (): Node => {
    const at = peek().at;
    return take('-') ? { t: 'neg', arg: unary(), at } : primary();
  };
  const primary = (): Node => {
    const token = peek();
    i++;
    if (token.kind === 'num') return { t: 'lit', value: Number(token.value), at: token.at };
    if (token.kind === 'str') return { t: 'lit', value: token.value, at: token.at };
    if (token.kind === 'op' && token.value === '(') {
      const inner = or();
      expect(')', '")"');
      return inner;
    }
    if (token.kind === 'id') {
      const word = token.text.toLowerCase();
      if (token.value === word && (word === 'true' || word === 'false')) return { t: 'lit', value: word === 'true', at: token.at };
      if (token.value === word && word === 'null') return { t: 'lit', value: null, at: token.at };
      if (!(token.value === word && KEYWORDS.has(word))) return { t: 'col', name: token.value, at: token.at };
    }
    i--;
    return fail(token, 'expected a column, a number, a \'text\', true, false, null or "("');
  };

  const tree = or();
  if (peek().kind !== 'end') fail(peek(), 'expected "and", "or", an operator or the end of the predicate');
  const columns = [...new Set(columnsIn(tree))];
  return { text, tree, columns };
}

/** The problem with a predicate as written (undefined: it parses), for the job file's checks. */
export function predicateProblem(text: string): string | undefined {
  try {
    parsePredicate(text);
    return undefined;
  } catch (error) {
    if (error instanceof PredicateError) return error.message;
    throw error;
  }
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s+|(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|('(?:[^']|'')*')|("(?:[^"]|"")*")|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|<>|!=|[=<>+\-*/%(),])/y;
  let at = 0;
  while (at < text.length) {
    pattern.lastIndex = at;
    const m = pattern.exec(text);
    if (m === null) {
      const c = text[at]!;
      const problem = c === "'" || c === '"' ? `the ${c === "'" ? "'text'" : '"column"'} is not closed (double a ${c} inside it)` : `unexpected "${c}"`;
      throw new PredicateError(text, at + 1, problem);
    }
    const [all, num, str, quoted, id, op] = m;
    const start = at + 1;
    at += all.length;
    if (num !== undefined) tokens.push({ kind: 'num', text: num, value: num, at: start });
    else if (str !== undefined) tokens.push({ kind: 'str', text: str, value: str.slice(1, -1).replaceAll("''", "'"), at: start });
    else if (quoted !== undefined) tokens.push({ kind: 'id', text: quoted, value: quoted.slice(1, -1).replaceAll('""', '"'), at: start });
    else if (id !== undefined) tokens.push({ kind: 'id', text: id, value: KEYWORDS.has(id.toLowerCase()) ? id.toLowerCase() : id, at: start });
    else if (op !== undefined) tokens.push({ kind: 'op', text: op, value: op, at: start });
  }
  tokens.push({ kind: 'end', text: '', value: '', at: text.length + 1 });
  return tokens;
}

function columnsIn(node: Node): string[] {
  switch (node.t) {
    case 'lit':
      return [];
    case 'col':
      return [node.name];
    case 'not':
    case 'neg':
    case 'isnull':
      return columnsIn(node.arg);
    case 'bin':
      return [...columnsIn(node.left), ...columnsIn(node.right)];
    case 'in':
      return [node.arg, ...node.list].flatMap(columnsIn);
    case 'between':
      return [node.arg, node.low, node.high].flatMap(columnsIn);
  }
}

