// Views judged when they are read: every table a query names that is a view is replaced, for the
// check, by the view's own query, which must pass the same rules (functionAllowlist.ts,
// accessPolicy.ts) with the reader's rights; views over views likewise. DuckDB stores a view as
// its CREATE VIEW text (duckdb_views().sql) and binds that query whenever the view is read, so
// what the view reads today (another team's table made private since, a function refused
// since) is what this checks, not what was allowed when the view was made.
import { asRecord, selectDenial, type AccessContext, type Denial } from './accessPolicy.ts';
import type { Parsed } from './sandbox.ts';
import { readName, skipParens, tokenize } from './sqlTokens.ts';

/** `catalog.schema.view` (lowercase) -> the view's CREATE VIEW text. */
export type ViewCatalog = ReadonlyMap<string, string>;

/** Views inside views deeper than this are refused rather than followed. */
const MAX_VIEW_DEPTH = 16;

interface TableRef {
  parts: string[];
  location?: number;
}

/** Every table reference of a json_serialize_sql tree, with its location when DuckDB gave one. */
function tableRefs(tree: unknown, out: TableRef[] = []): TableRef[] {
  if (Array.isArray(tree)) {
    for (const item of tree) tableRefs(item, out);
    return out;
  }
  const rec = asRecord(tree);
  if (rec === undefined) return out;
  if (rec['type'] === 'BASE_TABLE') {
    const parts = [rec['catalog_name'], rec['schema_name'], rec['table_name']].filter((p): p is string => typeof p === 'string' && p !== '');
    const loc = rec['query_location'];
    out.push(typeof loc === 'number' && Number.isSafeInteger(loc) ? { parts, location: loc } : { parts });
  }
  for (const value of Object.values(rec)) if (value !== null && typeof value === 'object') tableRefs(value, out);
  return out;
}

/**
 * The views a reference may bind to. Unqualified: a temporary view, one of the schema the
 * referring view lives in, or one of the main database's main schema; `x.t`: schema x of the
 * main database or catalog x's main schema. Every candidate is checked, so the check holds
 * whichever of them DuckDB binds.
 */
export function candidates(parts: string[], mainCatalog: string, home: string | undefined): string[] {
  const p = parts.map((x) => x.toLowerCase());
  if (p.length >= 3) return [p.slice(-3).join('.')];
  if (p.length === 2) return [`${mainCatalog}.${p[0]}.${p[1]}`, `${p[0]}.main.${p[1]}`];
  const out = [`temp.main.${p[0]}`, `${mainCatalog}.main.${p[0]}`];
  if (home !== undefined) out.push(`${home}.${p[0]}`);
  return out;
}

/** The query of a `CREATE [OR REPLACE] [TEMP] VIEW [IF NOT EXISTS] name [(columns)] AS query` text. */
export function viewQuery(sql: string): string | undefined {
  const tokens = tokenize(sql);
  let i = tokens.findIndex((t) => t.kind === 'word' && t.value === 'view');
  if (i < 0) return undefined;
  i += 1;
  if (tokens[i]?.value === 'if' && tokens[i + 1]?.value === 'not' && tokens[i + 2]?.value === 'exists') i += 3;
  const name = readName(tokens, i);
  if (name === undefined) return undefined;
  i = name.next;
  if (tokens[i]?.value === '(') i = skipParens(tokens, i);
  const as = tokens[i];
  const body = tokens[i + 1];
  if (as?.value !== 'as' || body === undefined) return undefined;
  return sql.slice(body.start).replace(/[\s;]+$/, '');
}

/**
 * The first reason a view read by `tree` (directly or through other views) may not be read by
 * this caller, located at the reference in `tree`; undefined when every view passes. `table`, when
 * given, judges every table or view a reference may bind to, at any depth (storedExpressions.ts).
 */
export async function viewDenial(
  tree: unknown,
  ctx: AccessContext,
  views: () => Promise<ViewCatalog>,
  parse: (sql: string) => Promise<Parsed>,
  table?: (key: string) => Promise<string | undefined>,
): Promise<Denial | undefined> {
  const refs = tableRefs(tree);
  if (refs.length === 0) return undefined;
  const catalog = await views();
  if (catalog.size === 0 && table === undefined) return undefined;
  const walk = async (tree: unknown, home: string | undefined, path: string[]): Promise<string | undefined> => {
    for (const ref of tableRefs(tree)) {
      for (const key of candidates(ref.parts, ctx.mainCatalog, home)) {
        const held = await table?.(key);
        if (held !== undefined) return held;
        const sql = catalog.get(key);
        if (sql === undefined) continue;
        const why = await viewBodyDenial(key, sql, path);
        if (why !== undefined) return why;
      }
    }
    return undefined;
  };
  const viewBodyDenial = async (key: string, sql: string, path: string[]): Promise<string | undefined> => {
    const name = key.startsWith('temp.main.') ? key.slice('temp.main.'.length) : key;
    if (path.includes(key)) return undefined;
    if (path.length >= MAX_VIEW_DEPTH) return `Not allowed: view ${name} reads views nested more than ${MAX_VIEW_DEPTH} deep`;
    const query = viewQuery(sql);
    const parsed = query === undefined ? undefined : await parse(query);
    if (parsed?.kind !== 'query' || parsed.statements.length !== 1) return `Not allowed: view ${name} cannot be checked; drop it and create it again`;
    const d = selectDenial(parsed.statements[0], ctx);
    if (d !== undefined) return `${d.message} (read through view ${name})`;
    return walk(parsed.statements[0], key.split('.').slice(0, 2).join('.'), [...path, key]);
  };
  for (const ref of refs) {
    for (const key of candidates(ref.parts, ctx.mainCatalog, undefined)) {
      const sql = catalog.get(key);
      const why = (await table?.(key)) ?? (sql === undefined ? undefined : await viewBodyDenial(key, sql, []));
      if (why !== undefined) return ref.location === undefined ? { message: why } : { message: why, location: ref.location };
    }
  }
  return undefined;
}
