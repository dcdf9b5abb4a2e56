// Judges each statement of user SQL before DuckDB binds it (binding already reads files:
// read_csv sniffs while binding). Queries are judged on DuckDB's own parse tree
// (json_serialize_sql), so the check sees what DuckDB will run. json_serialize_sql knows
// only queries; other statements are allowed in a few shapes read from their tokens:
//   CREATE [OR REPLACE] [TEMP] TABLE|VIEW name [(columns)] [AS query]   (temp or own schema)
//   INSERT [OR REPLACE|IGNORE] INTO name [(columns)] [BY NAME] query     (temp or own schema)
//   DROP TABLE|VIEW [IF EXISTS] name                                      (temp or own schema)
//   EXPLAIN [ANALYZE] statement, PRAGMA table_info|show('table')
// The column lists hold no expression (columnDefinitions.ts: no DEFAULT, CHECK, generated
// column or foreign key), and every table a statement reads or inserts into is judged by the
// expressions DuckDB stores with it (storedExpressions.ts), as a SELECT's would be.
// A view a query reads is judged when it is read, by what its own query reads and calls, with
// the reader's rights (views over views too): a view made when another team's table was
// shared stops answering once that table is private, and a view made under older rules is
// held to today's lists.
// Everything else is denied: SET, RESET, PRAGMA, ATTACH, DETACH, USE, COPY, EXPORT, IMPORT,
// INSTALL, LOAD, CALL, CREATE MACRO/SCHEMA/SECRET/..., ALTER, UPDATE, DELETE, transactions.
// The engine-wide lockdown (lockdown.ts) stays underneath as a second wall.
import type { DuckDBConnection } from '@duckdb/node-api';
import { selectDenial, tableReadDenial, tableWriteDenial, type AccessContext, type Denial } from './accessPolicy.ts';
import { columnDefinitions, explainOptions, nameList } from './columnDefinitions.ts';
import { readName, splitNameText, tokenize, type SqlToken } from './sqlTokens.ts';
import { candidates, viewDenial, type ViewCatalog } from './viewExpansion.ts';
import { readExpressionCatalog, storedExpressionDenial, type ExpressionCatalog } from './storedExpressions.ts';
import { utf16IndexOf } from './sqlPosition.ts';
import { sqlString } from '../../sql.ts';

/** A denial located in the checked text (UTF-16 offset). */
export interface StatementDenial {
  message: string;
  offset: number;
}

export type Parsed = { kind: 'query'; statements: unknown[] } | { kind: 'other' } | { kind: 'parse_error' };

async function parse(conn: DuckDBConnection, text: string): Promise<Parsed> {
  const reader = await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [text]);
  const out: unknown = JSON.parse(String(reader.getRowsJson()[0]?.[0]));
  const rec = out !== null && typeof out === 'object' ? (out as Record<string, unknown>) : {};
  if (rec['error'] !== true) return { kind: 'query', statements: Array.isArray(rec['statements']) ? rec['statements'] : [] };
  return rec['error_type'] === 'parser' ? { kind: 'parse_error' } : { kind: 'other' };
}

const SETTINGS = new Set(['set', 'reset', 'pragma']);
const FILES = new Set(['copy', 'export', 'import']);
const DATABASES = new Set(['attach', 'detach', 'use']);
const EXTENSIONS = new Set(['install', 'load', 'force', 'update']);
/** Statements allowed in the shapes this file reads from their tokens. */
const SHAPED = new Set(['create', 'insert', 'drop', 'explain', 'pragma']);
const QUERY_WORDS = new Set(['select', 'with', 'from', 'values', 'table', '(', 'pivot', 'unpivot', 'describe', 'show', 'summarize']);

function kindDenial(word: string): string {
  const up = word.toUpperCase();
  if (SETTINGS.has(word)) return `Not allowed: ${up}: engine settings cannot be changed`;
  if (FILES.has(word)) return `access to files is not allowed: ${up}`;
  if (DATABASES.has(word)) return `Not allowed: ${up}: the databases of the service cannot be attached, detached or switched`;
  if (EXTENSIONS.has(word)) return `Not allowed: ${up}: extensions cannot be installed or loaded`;
  return `Not allowed: ${up} statements (allowed: queries, CREATE TEMP TABLE/VIEW, INSERT INTO and DROP of temporary tables or of your team's schema, EXPLAIN, DESCRIBE, PRAGMA table_info)`;
}

export class Sandbox {
  readonly #conn: DuckDBConnection;
  readonly #ctx: AccessContext;
  /** The views of every catalog the connection sees, read once per sandbox when a query names a table. */
  #views: Promise<ViewCatalog> | undefined;
  /** The expressions DuckDB stores with each table, read once per sandbox when a statement names a table. */
  #expressions: Promise<ExpressionCatalog> | undefined;
  #writesTeamSchema = false;
  #changesTeamTables = false;
  #statementWrites = false;

  constructor(conn: DuckDBConnection, ctx: AccessContext) {
    this.#conn = conn;
    this.#ctx = ctx;
  }

  /** True once a checked statement creates a table in, or inserts into, the team's schema (storage it must pay for). */
  get writesTeamSchema(): boolean {
    return this.#writesTeamSchema;
  }

  /** True once a checked statement creates, fills or drops a table or view of the team's schema (its size may change). */
  get changesTeamTables(): boolean {
    return this.#changesTeamTables;
  }

  #noteWrite(parts: string[]): void {
    if (parts.length === 3 && parts[0]!.toLowerCase() === 'service') this.#writesTeamSchema = true;
    this.#noteChange(parts);
  }

  #noteChange(parts: string[]): void {
    if (parts.length === 3 && parts[0]!.toLowerCase() === 'service') this.#changesTeamTables = true;
  }

  /**
   * True when the statement last checked, or one inside it (EXPLAIN's, CREATE ... AS's), creates,
   * fills or drops a table or view, temporary ones included: what a read-only caller refuses.
   */
  get statementWrites(): boolean {
    return this.#statementWrites;
  }

  /** The first reason `text` (one statement) must not run, or undefined when it may. */
  async check(text: string): Promise<StatementDenial | undefined> {
    this.#statementWrites = false;
    return this.#check(text, 0, 0);
  }

  async #check(text: string, base: number, depth: number): Promise<StatementDenial | undefined> {
    const at = (offset: number, message: string): StatementDenial => ({ message, offset: base + offset });
    if (depth > 4) return at(0, 'Not allowed: statement nested too deeply');
    const parsed = await parse(this.#conn, text);
    // DuckDB rejects it with its own, located, syntax error before anything runs. A part of
    // a statement that parsed as a whole is another matter: the cut was wrong, deny.
    if (parsed.kind === 'parse_error') return depth === 0 ? undefined : at(0, 'Not allowed: this form of statement cannot be checked');
    if (parsed.kind === 'query') {
      if (parsed.statements.length !== 1) return at(0, 'Not allowed: one statement expected here');
      const d =
        selectDenial(parsed.statements[0], this.#ctx) ??
        (await viewDenial(parsed.statements[0], this.#ctx, () => this.#viewCatalog(), (sql) => parse(this.#conn, sql), (key) => this.#storedDenial(key)));
      return d ? this.#located(text, base, d) : undefined;
    }
    return this.#checkShaped(text, base, depth, tokenize(text));
  }

  /** A statement json_serialize_sql does not take: judged by its shape (CREATE, INSERT, DROP, EXPLAIN, PRAGMA). */
  async #checkShaped(text: string, base: number, depth: number, tokens: SqlToken[]): Promise<StatementDenial | undefined> {
    const at = (offset: number, message: string): StatementDenial => ({ message, offset: base + offset });
    const first = tokens[0];
    if (!first) return undefined;
    const word = first.kind === 'word' ? first.value : '';
    if (!SHAPED.has(word)) return this.#unshaped(text, at, first, word);
    // Token shapes are judged on one statement only: a second one could hide anything.
    if ((await this.#statementCount(text)) !== 1) return at(0, 'Not allowed: one statement expected here');
    const body = (i: number): Promise<StatementDenial | undefined> => {
      const t = tokens[i];
      if (!t) return Promise.resolve(undefined);
      return this.#check(text.slice(t.start), base + t.start, depth + 1);
    };
    const bodyQuery = async (i: number, what: string): Promise<StatementDenial | undefined> => {
      const t = tokens[i];
      if (!t) return at(text.length, `Not allowed: ${what} must be followed by a query`);
      const parsedBody = await parse(this.#conn, text.slice(t.start));
      if (parsedBody.kind !== 'query') return at(t.start, `Not allowed: this form of ${what}; write ${what} followed by a plain query`);
      return body(i);
    };
    if (word === 'create' || word === 'insert' || word === 'drop') this.#statementWrites = true;
    switch (word) {
      case 'create':
        return this.#create(tokens, at, bodyQuery);
      case 'insert':
        return this.#insert(tokens, at, bodyQuery);
      case 'drop':
        return this.#drop(tokens, at);
      case 'explain': {
        if (valueAt(tokens, 1) !== '(') return body(valueAt(tokens, 1) === 'analyze' ? 2 : 1);
        // Options are words (FORMAT JSON), never an expression (columnDefinitions.ts).
        const after = explainOptions(tokens, 1);
        return typeof after === 'number' ? body(after) : at(startAt(tokens, after.at), after.message);
      }
      case 'pragma':
        return this.#pragma(tokens, at);
      default:
        return at(first.start, kindDenial(word || first.value));
    }
  }

  /** A statement of no shape the sandbox judges: denied, with the reason a user can act on. */
  async #unshaped(text: string, at: (offset: number, message: string) => StatementDenial, first: SqlToken, word: string): Promise<StatementDenial> {
    if (!QUERY_WORDS.has(word || first.value)) return at(first.start, kindDenial(word || first.value));
    // A query json_serialize_sql refused: the splitter missed a ';' (the rest could be
    // anything), or a form DuckDB cannot serialize (PIVOT in 1.5.6).
    const pivot = word === 'pivot' || word === 'unpivot';
    if (!pivot && (await this.#statementCount(text)) !== 1) return at(0, 'Not allowed: one statement expected here');
    return at(first.start, `Not allowed: this form of query cannot be checked (${pivot ? 'PIVOT, UNPIVOT' : 'a WITH before INSERT, UPDATE or DELETE, say'}); write it with plain SELECT`);
  }

  /** Walled: the engine's views over other teams' public objects are not the team's SQL (accessPolicy.ts `walled`). */
  #sharedViewsOut(): string {
    const { walled, team } = this.#ctx;
    if (walled !== true || team === undefined) return '';
    return ` AND NOT (database_name = 'service' AND lower(schema_name) <> ${sqlString(team.toLowerCase())})`;
  }

  #viewCatalog(): Promise<ViewCatalog> {
    this.#views ??= this.#conn
      .runAndReadAll(`SELECT lower(database_name), lower(schema_name), lower(view_name), sql FROM duckdb_views() WHERE NOT internal${this.#sharedViewsOut()}`)
      .then((r) => new Map(r.getRowsJson().map(([db, schema, view, sql]) => [`${String(db)}.${String(schema)}.${String(view)}`, String(sql)])));
    return this.#views;
  }

  /** What an insert evaluates for its target (defaults, checks), judged by what DuckDB holds for every table the name may bind to. */
  async #targetDenial(parts: string[]): Promise<string | undefined> {
    for (const key of candidates(parts, this.#ctx.mainCatalog, undefined)) {
      const held = await this.#storedDenial(key);
      if (held !== undefined) return held;
    }
    return undefined;
  }

  async #storedDenial(key: string): Promise<string | undefined> {
    this.#expressions ??= readExpressionCatalog(this.#conn);
    return storedExpressionDenial(key, await this.#expressions, this.#ctx, (sql) => parse(this.#conn, sql));
  }

  async #statementCount(text: string): Promise<number> {
    try {
      return (await this.#conn.extractStatements(text)).count;
    } catch {
      return 0;
    }
  }

  #located(text: string, base: number, d: Denial): StatementDenial {
    return { message: d.message, offset: base + (d.location === undefined ? 0 : utf16IndexOf(text, d.location, 'byte')) };
  }

  async #create(
    tokens: SqlToken[],
    at: (offset: number, message: string) => StatementDenial,
    bodyQuery: (i: number, what: string) => Promise<StatementDenial | undefined>,
  ): Promise<StatementDenial | undefined> {
    let i = 1;
    if (valueAt(tokens, i) === 'or' && valueAt(tokens, i + 1) === 'replace') i += 2;
    const temp = valueAt(tokens, i) === 'temp' || valueAt(tokens, i) === 'temporary';
    if (temp) i += 1;
    const object = tokens[i];
    if (object?.kind !== 'word' || (object.value !== 'table' && object.value !== 'view')) {
      const what = object ? object.value.toUpperCase() : '';
      return at(startAt(tokens, i), `Not allowed: CREATE ${temp ? 'TEMP ' : ''}${what} (allowed: CREATE [TEMP] TABLE or VIEW)`);
    }
    i += 1;
    if (valueAt(tokens, i) === 'if' && valueAt(tokens, i + 1) === 'not' && valueAt(tokens, i + 2) === 'exists') i += 3;
    const name = readName(tokens, i);
    if (!name) return at(startAt(tokens, i), 'Not allowed: CREATE needs a table name');
    const why = tableWriteDenial(name.parts, !temp, this.#ctx);
    if (why) return at(startAt(tokens, i), why);
    if (!temp && object.value === 'table') this.#noteWrite(name.parts);
    i = name.next;
    if (valueAt(tokens, i) === '(') {
      // Column definitions hold no expression the engine would evaluate (columnDefinitions.ts).
      const after = object.value === 'table' ? columnDefinitions(tokens, i) : nameList(tokens, i);
      if (typeof after !== 'number') return at(startAt(tokens, after.at), after.message);
      i = after;
    }
    if (i >= tokens.length) return undefined;
    const what = `CREATE ${object.value.toUpperCase()}`;
    if (valueAt(tokens, i) === 'as') return bodyQuery(i + 1, `${what} ... AS`);
    return at(startAt(tokens, i), `Not allowed: this form of ${what}`);
  }

  async #insert(
    tokens: SqlToken[],
    at: (offset: number, message: string) => StatementDenial,
    bodyQuery: (i: number, what: string) => Promise<StatementDenial | undefined>,
  ): Promise<StatementDenial | undefined> {
    let i = 1;
    if (valueAt(tokens, i) === 'or' && (valueAt(tokens, i + 1) === 'replace' || valueAt(tokens, i + 1) === 'ignore')) i += 2;
    if (valueAt(tokens, i) !== 'into') return at(startAt(tokens, i), 'Not allowed: this form of INSERT; write INSERT INTO <table> <query>');
    i += 1;
    const name = readName(tokens, i);
    if (!name) return at(startAt(tokens, i), 'Not allowed: INSERT INTO needs a table name');
    const why = tableWriteDenial(name.parts, false, this.#ctx);
    if (why) return at(startAt(tokens, i), why);
    const held = await this.#targetDenial(name.parts);
    if (held !== undefined) return at(startAt(tokens, i), held);
    this.#noteWrite(name.parts);
    i = name.next;
    if (valueAt(tokens, i) === '(') {
      const after = nameList(tokens, i);
      if (typeof after !== 'number') return at(startAt(tokens, after.at), after.message);
      i = after;
    }
    if (valueAt(tokens, i) === 'by' && (valueAt(tokens, i + 1) === 'name' || valueAt(tokens, i + 1) === 'position')) i += 2;
    if (valueAt(tokens, i) === 'default' && valueAt(tokens, i + 1) === 'values' && i + 2 === tokens.length) return undefined;
    return bodyQuery(i, 'INSERT INTO <table>');
  }

  #drop(tokens: SqlToken[], at: (offset: number, message: string) => StatementDenial): StatementDenial | undefined {
    let i = 1;
    const object = tokens[i];
    if (object?.value !== 'table' && object?.value !== 'view') {
      return at(object?.start ?? 0, `Not allowed: DROP ${object ? object.value.toUpperCase() : ''} (allowed: DROP TABLE or VIEW)`);
    }
    i += 1;
    if (tokens[i]?.value === 'if' && tokens[i + 1]?.value === 'exists') i += 2;
    const name = readName(tokens, i);
    if (!name) return at(tokens[i]?.start ?? 0, 'Not allowed: DROP needs a table name');
    const why = tableWriteDenial(name.parts, false, this.#ctx);
    if (why) return at(tokens[i]!.start, why);
    if (name.next !== tokens.length) return at(tokens[name.next]!.start, 'Not allowed: this form of DROP; write DROP TABLE|VIEW [IF EXISTS] <name>');
    this.#noteChange(name.parts);
    return undefined;
  }

  #pragma(tokens: SqlToken[], at: (offset: number, message: string) => StatementDenial): StatementDenial | undefined {
    const name = tokens[1];
    const arg = tokens[3];
    const shaped =
      (name?.value === 'table_info' || name?.value === 'show') &&
      tokens[2]?.value === '(' &&
      (arg?.kind === 'string' || arg?.kind === 'quoted' || arg?.kind === 'word') &&
      tokens[4]?.value === ')' &&
      tokens.length === 5;
    if (!shaped) {
      if (name?.value === 'table_info' || name?.value === 'show') return at(name.start, "Not allowed: this form of PRAGMA; write PRAGMA table_info('<table>')");
      return at(tokens[0]!.start, kindDenial('pragma'));
    }
    // DuckDB splits the argument on its dots whether it is written as a string or as a quoted
    // identifier: PRAGMA table_info("service.other.t") names service.other.t.
    const why = tableReadDenial(splitNameText(arg.value), this.#ctx);
    return why ? at(arg.start, why) : undefined;
  }
}

/** The token's text at `i` (undefined past the end). */
function valueAt(tokens: SqlToken[], i: number): string | undefined {
  return tokens[i]?.value;
}

/** Where the token at `i` starts (0 past the end: the statement's start). */
function startAt(tokens: SqlToken[], i: number): number {
  return tokens[i]?.start ?? 0;
}
