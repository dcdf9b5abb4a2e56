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
  const tree = new PredicateParser(text).parse();
  const columns = [...new Set(columnsIn(tree))];
  return { text, tree, columns };
}

/**
 * Recursive descent over the tokens, one method per precedence level, loosest first:
 * or, and, not, comparison (and is null, in, between), sum, product, unary minus, primary.
 */
class PredicateParser {
  readonly #text: string;
  readonly #tokens: Token[];
  #i = 0;

  constructor(text: string) {
    this.#text = text;
    this.#tokens = tokenize(text);
  }

  parse(): Node {
    const tree = this.#or();
    if (this.#peek().kind !== 'end') this.#fail(this.#peek(), 'expected "and", "or", an operator or the end of the predicate');
    return tree;
  }

  #peek(): Token {
    return this.#tokens[this.#i]!;
  }

  #fail(token: Token, problem: string): never {
    throw new PredicateError(this.#text, token.at, `${problem}, got ${token.kind === 'end' ? 'the end of the predicate' : `"${token.text}"`}`);
  }

  #isWord(word: string, token = this.#peek()): boolean {
    return token.kind === 'id' && token.value === word && token.text.toLowerCase() === word;
  }

  /** Consumes `word` (a keyword or an operator) when it is next. */
  #take(word: string): boolean {
    const next = this.#peek();
    if (!this.#isWord(word, next) && !(next.kind === 'op' && next.value === word)) return false;
    this.#i++;
    return true;
  }

  #expect(word: string, what: string): void {
    if (!this.#take(word)) this.#fail(this.#peek(), `expected ${what}`);
  }

  #or(): Node {
    let left = this.#and();
    for (let at = this.#peek().at; this.#take('or'); at = this.#peek().at) left = { t: 'bin', op: 'or', left, right: this.#and(), at };
    return left;
  }

  #and(): Node {
    let left = this.#not();
    for (let at = this.#peek().at; this.#take('and'); at = this.#peek().at) left = { t: 'bin', op: 'and', left, right: this.#not(), at };
    return left;
  }

  #not(): Node {
    const at = this.#peek().at;
    return this.#take('not') ? { t: 'not', arg: this.#not(), at } : this.#comparison();
  }

  #comparison(): Node {
    const left = this.#sum();
    const token = this.#peek();
    if (token.kind === 'op' && ['=', '<>', '!=', '<', '<=', '>', '>='].includes(token.value)) {
      this.#i++;
      return { t: 'bin', op: token.value === '!=' ? '<>' : token.value, left, right: this.#sum(), at: token.at };
    }
    if (this.#take('is')) {
      const negated = this.#take('not');
      this.#expect('null', 'null after "is"');
      return { t: 'isnull', arg: left, negated, at: token.at };
    }
    return this.#membership(left, token);
  }

  /** `[not] in (...)` and `[not] between ... and ...` after `left`; `left` itself when neither follows. */
  #membership(left: Node, token: Token): Node {
    const negated = this.#take('not');
    if (this.#take('in')) {
      this.#expect('(', '"(" after "in"');
      const list = [this.#sum()];
      while (this.#take(',')) list.push(this.#sum());
      this.#expect(')', '"," or ")" in the list of "in"');
      return { t: 'in', arg: left, list, negated, at: token.at };
    }
    if (this.#take('between')) {
      const low = this.#sum();
      this.#expect('and', '"and" in "between ... and ..."');
      return { t: 'between', arg: left, low, high: this.#sum(), negated, at: token.at };
    }
    if (negated) this.#fail(this.#peek(), 'expected "in" or "between" after "not"');
    return left;
  }

  #sum(): Node {
    let left = this.#product();
    for (let token = this.#peek(); token.kind === 'op' && (token.value === '+' || token.value === '-'); token = this.#peek()) {
      this.#i++;
      left = { t: 'bin', op: token.value, left, right: this.#product(), at: token.at };
    }
    return left;
  }

  #product(): Node {
    let left = this.#unary();
    for (let token = this.#peek(); token.kind === 'op' && ['*', '/', '%'].includes(token.value); token = this.#peek()) {
      this.#i++;
      left = { t: 'bin', op: token.value, left, right: this.#unary(), at: token.at };
    }
    return left;
  }

  #unary(): Node {
    const at = this.#peek().at;
    return this.#take('-') ? { t: 'neg', arg: this.#unary(), at } : this.#primary();
  }

  #primary(): Node {
    const token = this.#peek();
    if (token.kind === 'num') return this.#advance({ t: 'lit', value: Number(token.value), at: token.at });
    if (token.kind === 'str') return this.#advance({ t: 'lit', value: token.value, at: token.at });
    if (token.kind === 'op' && token.value === '(') {
      this.#i++;
      const inner = this.#or();
      this.#expect(')', '")"');
      return inner;
    }
    if (token.kind === 'id') {
      const word = token.text.toLowerCase();
      const keyword = token.value === word;
      if (keyword && (word === 'true' || word === 'false')) return this.#advance({ t: 'lit', value: word === 'true', at: token.at });
      if (keyword && word === 'null') return this.#advance({ t: 'lit', value: null, at: token.at });
      if (!(keyword && KEYWORDS.has(word))) return this.#advance({ t: 'col', name: token.value, at: token.at });
    }
    return this.#fail(token, 'expected a column, a number, a \'text\', true, false, null or "("');
  }

  /** Consumes the token `node` was made of. */
  #advance(node: Node): Node {
    this.#i++;
    return node;
  }
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

