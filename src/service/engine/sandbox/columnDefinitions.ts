// The parenthesized lists the sandbox lets through on its token path (CREATE TABLE's column
// definitions, CREATE VIEW's and INSERT's column names, EXPLAIN's options) are read against a
// grammar that has no place for an expression: the engine would evaluate one there (a column's
// DEFAULT on insert, a generated column on every read, a CHECK on every write) where no
// SELECT-side check ever looks. Deny by default: what is not a name, a type or one of the few
// constraints below is refused, located at the token.
//   column list := '(' item (',' item)* ')'
//   item        := name [type] {NOT NULL | NULL | PRIMARY KEY | UNIQUE}
//                | [CONSTRAINT name] (PRIMARY KEY | UNIQUE) '(' name {',' name} ')'
//   type        := word {word} ['(' type arguments ')'] {'[' [number] ']'}
//   type args   := names, numbers, strings, nested types, ',' (constants only)
import type { SqlToken } from './sqlTokens.ts';

export interface ListDenial {
  message: string;
  /** Token index of the offending token. */
  at: number;
}

/** Words that end a column's type: constraints and the expression-bearing clauses refused below. */
const STOP = new Set(['not', 'null', 'primary', 'unique', 'key', 'default', 'check', 'as', 'generated', 'always', 'references', 'foreign', 'collate', 'constraint', 'using', 'virtual', 'stored', 'on']);
/** Types that take arguments in parentheses (nested types included); any other `word (` is refused. */
const PARAMETRIC = new Set([
  'decimal', 'numeric', 'dec', 'varchar', 'char', 'character', 'nvarchar', 'bpchar', 'string', 'text', 'struct', 'row', 'map', 'union', 'enum', 'list', 'bit',
  'timestamp', 'time', 'float', 'varbinary', 'blob', 'bytea', 'interval',
]);

const EXPRESSION_CLAUSES: Record<string, string> = {
  default: 'DEFAULT in a column definition (a default is an expression the engine evaluates on insert); create the table without it and give the value in the INSERT',
  check: 'CHECK constraints (an expression the engine evaluates on every write); check the values in the query that inserts them',
  as: 'generated columns (an expression the engine evaluates on every read); compute the value in the query that reads or inserts it',
  generated: 'generated columns (an expression the engine evaluates on every read); compute the value in the query that reads or inserts it',
  references: 'foreign keys (REFERENCES reads another table on every write)',
  foreign: 'foreign keys (REFERENCES reads another table on every write)',
};

const isName = (t: SqlToken | undefined): boolean => t !== undefined && (t.kind === 'word' || t.kind === 'quoted');
const punct = (t: SqlToken | undefined, value: string): boolean => t?.kind === 'punct' && t.value === value;

function refused(tokens: SqlToken[], at: number): ListDenial {
  const t = tokens[at];
  if (t === undefined) return { message: 'Not allowed: this column list ends early', at: tokens.length - 1 };
  const clause = t.kind === 'word' ? EXPRESSION_CLAUSES[t.value] : undefined;
  if (clause !== undefined) return { message: `Not allowed: ${clause}`, at };
  const shown = t.kind === 'string' ? `'${t.value}'` : t.kind === 'quoted' ? `"${t.value}"` : t.value;
  return { message: `Not allowed: ${JSON.stringify(shown).slice(1, -1)} in a column definition (allowed: name type [NOT NULL | NULL | PRIMARY KEY | UNIQUE], PRIMARY KEY (names), UNIQUE (names))`, at };
}

/** Column definitions of CREATE TABLE from the '(' at `open`: the index after the ')' or a denial. */
export function columnDefinitions(tokens: SqlToken[], open: number): number | ListDenial {
  let i = open + 1;
  for (;;) {
    const item = columnItem(tokens, i);
    if (typeof item !== 'number') return item;
    i = item;
    if (punct(tokens[i], ',')) i += 1;
    else if (punct(tokens[i], ')')) return i + 1;
    else return refused(tokens, i);
  }
}

const TABLE_CONSTRAINT_WORDS = new Set(['constraint', 'primary', 'unique', 'check', 'foreign']);

function columnItem(tokens: SqlToken[], at: number): number | ListDenial {
  const first = tokens[at];
  if (first?.kind === 'word' && TABLE_CONSTRAINT_WORDS.has(first.value)) return tableConstraint(tokens, at);
  if (!isName(first)) return refused(tokens, at);
  const type = columnType(tokens, at + 1);
  return typeof type === 'number' ? columnConstraints(tokens, type) : type;
}

/** [CONSTRAINT name] (PRIMARY KEY | UNIQUE) (names): anything else (CHECK, FOREIGN KEY) is refused. */
function tableConstraint(tokens: SqlToken[], at: number): number | ListDenial {
  let i = at;
  if (tokens[i]?.value === 'constraint') {
    if (!isName(tokens[i + 1])) return refused(tokens, i + 1);
    i += 2;
  }
  if (tokens[i]?.value === 'primary' && tokens[i + 1]?.value === 'key') i += 2;
  else if (tokens[i]?.value === 'unique') i += 1;
  else return refused(tokens, i);
  return nameList(tokens, i);
}

/** {NOT NULL | NULL | PRIMARY KEY | UNIQUE} after a column's type. */
function columnConstraints(tokens: SqlToken[], at: number): number | ListDenial {
  let i = at;
  for (;;) {
    const t = tokens[i];
    if (t?.kind !== 'word') return i;
    if (t.value === 'not' && tokens[i + 1]?.value === 'null') i += 2;
    else if (t.value === 'null' || t.value === 'unique') i += 1;
    else if (t.value === 'primary' && tokens[i + 1]?.value === 'key') i += 2;
    else return refused(tokens, i);
  }
}

function columnType(tokens: SqlToken[], at: number): number | ListDenial {
  let i = at;
  while (isName(tokens[i]) && !(tokens[i]!.kind === 'word' && STOP.has(tokens[i]!.value))) i += 1;
  if (punct(tokens[i], '(')) {
    const word = tokens[i - 1];
    if (i === at || word?.kind !== 'word' || !PARAMETRIC.has(word.value)) return refused(tokens, i);
    const args = typeArguments(tokens, i);
    if (typeof args !== 'number') return args;
    i = args;
  }
  while (punct(tokens[i], '[')) {
    if (tokens[i + 1]?.kind === 'word' && /^\d+$/.test(tokens[i + 1]!.value)) i += 1;
    if (!punct(tokens[i + 1], ']')) return refused(tokens, i + 1);
    i += 2;
  }
  return i;
}

/** A type's arguments from the '(' at `open`: constants, names and nested types only. */
function typeArguments(tokens: SqlToken[], open: number): number | ListDenial {
  let depth = 0;
  for (let i = open; i < tokens.length; i += 1) {
    const t = tokens[i]!;
    if (t.kind === 'punct') {
      if (t.value === '(') {
        const word = tokens[i - 1];
        if (i !== open && (word?.kind !== 'word' || !PARAMETRIC.has(word.value))) return refused(tokens, i);
        depth += 1;
      } else if (t.value === ')') {
        depth -= 1;
        if (depth === 0) return i + 1;
      } else if (t.value !== ',' && t.value !== '[' && t.value !== ']') return refused(tokens, i);
    } else if (t.kind === 'word' && EXPRESSION_CLAUSES[t.value] !== undefined) {
      return refused(tokens, i);
    }
  }
  return refused(tokens, tokens.length);
}

/** A '(' name {',' name} ')' list from `open` (INSERT's and CREATE VIEW's columns, a key's names). */
export function nameList(tokens: SqlToken[], open: number): number | ListDenial {
  if (!punct(tokens[open], '(')) return refused(tokens, open);
  let i = open + 1;
  for (;;) {
    if (!isName(tokens[i])) return refused(tokens, i);
    i += 1;
    if (punct(tokens[i], ',')) i += 1;
    else if (punct(tokens[i], ')')) return i + 1;
    else return refused(tokens, i);
  }
}

/** EXPLAIN's options from the '(' at `open`: words and strings (FORMAT JSON), never an expression. */
export function explainOptions(tokens: SqlToken[], open: number): number | ListDenial {
  let i = open + 1;
  for (;;) {
    if (tokens[i]?.kind !== 'word') return refused(tokens, i);
    i += 1;
    if (tokens[i]?.kind === 'word' || tokens[i]?.kind === 'string') i += 1;
    if (punct(tokens[i], ',')) i += 1;
    else if (punct(tokens[i], ')')) return i + 1;
    else return refused(tokens, i);
  }
}
