import { type Node, type ParsedPredicate, PredicateError } from '../../config/predicate.ts';
import { parseType } from '../../types/parse.ts';
import { canonicalCursor, compareCursor, cursorKind, cursorValueProblem } from '../incremental/cursor.ts';

/**
 * A contract's predicate (parsed at load, src/config/predicate.ts) bound to the result's column
 * types, checked before any page is fetched: the row test, false when a row breaks it; true or null
 * (unknown, a NULL met) when it holds, as a SQL CHECK constraint holds on NULL. Numbers are compared
 * and computed as 64-bit floats (bounds that need exact decimals: min and max); dates and timestamps
 * in the engine's order, as the incremental cursor compares them.
 */
export function bindPredicate(predicate: ParsedPredicate, types: ReadonlyMap<string, string>): (value: (column: string) => string | null) => boolean | null {
  return compile(predicate.text, predicate.tree, types);
}

/** What a node yields: a number, text, a boolean, a date or timestamp (kept as exact text), or only NULL. */
type Kind = 'number' | 'text' | 'boolean' | 'date' | 'timestamp' | 'null';
type Value = number | string | boolean | null;
type Row = (column: string) => string | null;
type Compiled = { kind: Kind; eval: (row: Row) => Value };

function kindOfType(type: string): Kind | undefined {
  let parsed;
  try {
    parsed = parseType(type);
  } catch {
    return undefined;
  }
  if (parsed.kind === 'boolean') return 'boolean';
  const kind = cursorKind(type);
  if (kind === 'integer' || kind === 'decimal' || kind === 'float') return 'number';
  return kind;
}

function compile(text: string, tree: Node, types: ReadonlyMap<string, string>): (row: Row) => boolean | null {
  const fail = (node: Node, problem: string): never => {
    throw new PredicateError(text, node.at, problem);
  };
  const compileNode = (node: Node): Compiled => {
    switch (node.t) {
      case 'lit': {
        const { value } = node;
        const kind: Kind = value === null ? 'null' : typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'text';
        return { kind, eval: () => value };
      }
      case 'col':
        return column(node);
      case 'not': {
        const arg = logical(node.arg, 'not');
        return { kind: 'boolean', eval: (row) => nullOr(arg.eval(row), (v) => !v) };
      }
      case 'neg': {
        const arg = numeric(node.arg, '-');
        return { kind: 'number', eval: (row) => nullOr(arg.eval(row), (v) => -(v as number)) };
      }
      case 'isnull': {
        const arg = compileNode(node.arg);
        return { kind: 'boolean', eval: (row) => (arg.eval(row) === null) !== node.negated };
      }
      case 'bin':
        return binary(node);
      case 'in': {
        const tests = node.list.map((item) => comparison(node, '=', node.arg, item));
        return {
          kind: 'boolean',
          eval: (row) => {
            // SQL: true if any item equals; else NULL if any comparison met a NULL; else false.
            let unknown = false;
            for (const test of tests) {
              const v = test(row);
              if (v === true) return !node.negated;
              if (v === null) unknown = true;
            }
            return unknown ? null : node.negated;
          },
        };
      }
      case 'between': {
        const low = comparison(node, '>=', node.arg, node.low);
        const high = comparison(node, '<=', node.arg, node.high);
        return { kind: 'boolean', eval: (row) => nullOr(and3(low(row), high(row)), (v) => v !== node.negated) };
      }
    }
  };
  const column = (node: Extract<Node, { t: 'col' }>): Compiled => {
    const type = types.get(node.name);
    if (type === undefined) return fail(node, `no column ${node.name} in the result (columns: ${[...types.keys()].join(', ')})`);
    const kind = kindOfType(type);
    if (kind === undefined) return fail(node, `column ${node.name} is ${type}: a predicate reads numbers, text, booleans, dates and timestamps`);
    const name = node.name;
    if (kind === 'number') return { kind, eval: (row) => nullOr(row(name), Number) };
    if (kind === 'boolean') return { kind, eval: (row) => nullOr(row(name), (v) => v === 'true') };
    return { kind, eval: (row) => row(name) };
  };
  const logical = (node: Node, op: string): Compiled => {
    const c = compileNode(node);
    if (c.kind !== 'boolean' && c.kind !== 'null') fail(node, `"${op}" needs a true/false operand, not ${c.kind === 'text' ? 'text' : `a ${c.kind}`} (compare it: = <> < > ...)`);
    return c;
  };
  const numeric = (node: Node, op: string): Compiled => {
    const c = compileNode(node);
    if (c.kind !== 'number' && c.kind !== 'null') fail(node, `"${op}" does arithmetic on numbers, not ${c.kind === 'text' ? 'text' : `a ${c.kind}`}`);
    return c;
  };
  const binary = (node: Extract<Node, { t: 'bin' }>): Compiled => {
    const { op } = node;
    if (op === 'and' || op === 'or') {
      const left = logical(node.left, op);
      const right = logical(node.right, op);
      const combine = op === 'and' ? and3 : or3;
      return { kind: 'boolean', eval: (row) => combine(left.eval(row) as boolean | null, right.eval(row) as boolean | null) };
    }
    if (['+', '-', '*', '/', '%'].includes(op)) {
      const left = numeric(node.left, op);
      const right = numeric(node.right, op);
      const apply = ARITHMETIC[op]!;
      return {
        kind: 'number',
        eval: (row) => {
          const a = left.eval(row);
          const b = right.eval(row);
          return a === null || b === null ? null : apply(a as number, b as number);
        },
      };
    }
    const test = comparison(node, op, node.left, node.right);
    return { kind: 'boolean', eval: test };
  };
  /** `a op b` for two nodes whose kinds must compare: numbers with numbers, text with text, a date or timestamp with its kind or a 'text' literal of it. */
  const comparison = (node: Node, op: string, leftNode: Node, rightNode: Node): ((row: Row) => boolean | null) => {
    const left = compileNode(leftNode);
    const right = compileNode(rightNode);
    if (left.kind === 'null' || right.kind === 'null') return fail(node, `a comparison with null is never true: write "is null" or "is not null"`);
    const order = orderFor(left, right, leftNode, rightNode);
    const holds = COMPARISONS[op]!;
    return (row) => {
      const a = left.eval(row);
      const b = right.eval(row);
      return a === null || b === null ? null : holds(order(a, b));
    };
  };
  const orderFor = (left: Compiled, right: Compiled, leftNode: Node, rightNode: Node): ((a: Value, b: Value) => number) => {
    const temporal = [left, right].find((c) => c.kind === 'date' || c.kind === 'timestamp');
    if (temporal !== undefined) {
      const kind = temporal.kind as 'date' | 'timestamp';
      const other = temporal === left ? right : left;
      const otherNode = temporal === left ? rightNode : leftNode;
      if (other.kind === kind) return (a, b) => compareCursor(kind, a as string, b as string);
      if (other.kind !== 'text' || otherNode.t !== 'lit') return fail(otherNode, `a ${kind} compares with a ${kind} column or a '${kind === 'date' ? '2024-01-31' : '2024-01-31 12:00:00'}' literal, not ${describeKind(other.kind)}`);
      const literal = otherNode.value as string;
      const problem = cursorValueProblem(kind, literal);
      if (problem !== undefined) return fail(otherNode, problem);
      const canonical = canonicalCursor(kind, literal);
      return temporal === left ? (a) => compareCursor(kind, a as string, canonical) : (_a, b) => compareCursor(kind, canonical, b as string);
    }
    if (left.kind !== right.kind) return fail(rightNode, `${describeKind(left.kind)} does not compare with ${describeKind(right.kind)}${left.kind === 'number' && right.kind === 'text' ? " (a number is written without quotes)" : ''}`);
    if (left.kind === 'number') return (a, b) => (a as number) - (b as number);
    if (left.kind === 'boolean') return (a, b) => Number(a) - Number(b);
    return (a, b) => compareCursor('text', a as string, b as string);
  };

  const root = compileNode(tree);
  if (root.kind !== 'boolean') fail(tree, `a predicate is true or false for a row; this is ${describeKind(root.kind)} (compare it: = <> < > ...)`);
  return (row) => root.eval(row) as boolean | null;
}

function describeKind(kind: Kind): string {
  return kind === 'text' ? 'text' : kind === 'null' ? 'null' : `a ${kind}`;
}

const ARITHMETIC: Record<string, (a: number, b: number) => number | null> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  // As the engine does: a division by zero is NULL, not an error or Infinity.
  '/': (a, b) => (b === 0 ? null : a / b),
  '%': (a, b) => (b === 0 ? null : a % b),
};

const COMPARISONS: Record<string, (order: number) => boolean> = {
  '=': (o) => o === 0,
  '<>': (o) => o !== 0,
  '<': (o) => o < 0,
  '<=': (o) => o <= 0,
  '>': (o) => o > 0,
  '>=': (o) => o >= 0,
};

function nullOr<T, R>(value: T | null, f: (v: T) => R): R | null {
  return value === null ? null : f(value);
}

function and3(a: boolean | null, b: boolean | null): boolean | null {
  if (a === false || b === false) return false;
  return a === null || b === null ? null : true;
}

function or3(a: boolean | null, b: boolean | null): boolean | null {
  if (a === true || b === true) return true;
  return a === null || b === null ? null : false;
}
