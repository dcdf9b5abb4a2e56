// What user SQL may name: the rules of the sandbox, as pure functions over names and over the
// syntax tree DuckDB's own parser gives for a query (json_serialize_sql), so that they judge
// exactly what DuckDB will bind. A rule returns the reason of a denial, or undefined.
//
// Deny by default: every function, aggregate, window function, macro and table function the
// tree names must be on the service's lists (functionAllowlist.ts), and every table it names
// must be one the caller may read. Views are judged by what they read when they are read
// (sandbox.ts expands them), not when they were made.
//
// Reads: unqualified names (temporary tables, CTEs), the readable schemas of the engine's main
// database (sample, main), the caller's own schema service.<team>, and another team's object
// only when ExecuteOptions.canRead allows it. Every other catalog is invisible: `system`
// (its views list every team's objects), the per-result databases the engine attaches
// (r_<id>, w_<id>), and anything a later ATTACH could add.
// Writes: temporary objects and the caller's own schema only.
import { splitNameText } from './sqlTokens.ts';
import {
  AGGREGATE_BY_NAME,
  ALLOWED_FUNCTIONS,
  ALLOWED_SETTINGS,
  ALLOWED_TABLE_FUNCTIONS,
  TABLE_NAME_FUNCTIONS,
} from './functionAllowlist.ts';

export interface AccessContext {
  /** The caller's team: its schema service.<team> is readable and writable. */
  team?: string;
  /** Lets the caller read `service.<owner>.<name>` of another team (names lowercased). */
  canRead?: (owner: string, name: string) => boolean;
  /**
   * The SQL runs on the team's own instance (teams/teamInstances.ts): views in other teams'
   * schemas of `service` there are the engine's own, over snapshots of public objects
   * (teams/sharedObjects.ts), read as the tables they copy.
   */
  walled?: boolean;
  /** Name of the engine's main database (catalog), e.g. 'engine'. */
  mainCatalog: string;
  /** Schemas of the main database user SQL may read, lowercased (e.g. main, sample). */
  readableSchemas: ReadonlySet<string>;
  /** DuckDB's built-in catalog views (duckdb_tables, pg_class, tables, ...), lowercased. */
  systemViews: ReadonlySet<string>;
}

export interface Denial {
  message: string;
  /** Byte offset of the offending node in the text that was serialized, when DuckDB gave one. */
  location?: number;
}

const FILE_FUNCTION = /^(read_|parquet_|sniff_csv$|glob$|.*_scan$|iceberg|delta_|copy_)/;

function display(parts: string[]): string {
  return parts.join('.');
}

/** `FROM '/etc/passwd'` and `FROM "data.csv"` are DuckDB replacement scans: files. */
function looksLikeFile(name: string): boolean {
  return /[/\\:]/.test(name) || /\.[A-Za-z0-9]{1,10}$/.test(name) || name.startsWith('~');
}

function otherTeamDenial(schema: string): string {
  return `Not allowed: schema service.${schema} belongs to another team`;
}

export function tableReadDenial(written: string[], ctx: AccessContext): string | undefined {
  const parts = written.map((p) => p.toLowerCase());
  const table = parts.at(-1) ?? '';
  if (parts.length === 1) {
    if (looksLikeFile(written[0]!)) return `access to files is not allowed: '${written[0]}'`;
    if (ctx.systemViews.has(table)) return `Not allowed: ${table} lists the objects of every team`;
    return undefined;
  }
  const [first, second] = parts;
  if (first === 'service') {
    if (parts.length !== 3) return `Not allowed: ${display(written)}: team tables are named service.<team>.<table>`;
    if (ctx.team !== undefined && second === ctx.team.toLowerCase()) return undefined;
    if (ctx.canRead?.(second!, table) === true) return undefined;
    return otherTeamDenial(parts[1]!);
  }
  if (ctx.systemViews.has(table)) return `Not allowed: ${display(written)} lists the objects of every team`;
  if (parts.length === 2) {
    if (first === 'temp' || first === ctx.mainCatalog || ctx.readableSchemas.has(first!)) return undefined;
  } else if (parts.length === 3) {
    if (first === 'temp' && second === 'main') return undefined;
    if (first === ctx.mainCatalog && ctx.readableSchemas.has(second!)) return undefined;
  }
  return `Not allowed: ${display(written)}: only sample.*, temporary tables and your team's schema service.<team>.* can be read`;
}

/**
 * Tables of the team's schema that the service itself maintains: user SQL reads them, only the
 * service writes them (a view's table is replaced by its refresh, a dataset's by its upload).
 */
const RESERVED_PREFIXES = [
  { prefix: 'result_', what: 'materialized views, written by their refreshes (POST /v1/materialized-views)' },
  { prefix: 'dataset_', what: 'uploaded datasets, written by uploads (POST /v1/uploads/csv)' },
  // The service's work tables (serviceTables.ts STAGING_PREFIXES): dropped at start as crash leftovers.
  { prefix: '__staging_', what: 'the service\'s staging tables of view refreshes' },
  { prefix: '__upload_', what: 'the service\'s staging tables of uploads' },
];

/** Targets of CREATE, INSERT and DROP. `creating` is a non-temporary CREATE. */
export function tableWriteDenial(written: string[], creating: boolean, ctx: AccessContext): string | undefined {
  const parts = written.map((p) => p.toLowerCase());
  const own = ctx.team === undefined ? 'service.<team>' : `service.${ctx.team}`;
  if (parts.length === 1) {
    if (!creating) return undefined;
    return `Not allowed: CREATE ${written[0]} would write to the shared database; create TEMP ${written[0]} or ${own}.${written[0]}`;
  }
  if (parts[0] === 'temp' && (parts.length === 2 || parts[1] === 'main')) return undefined;
  if (parts.length === 3 && parts[0] === 'service' && ctx.team !== undefined && parts[1] === ctx.team.toLowerCase()) {
    const reserved = RESERVED_PREFIXES.find((p) => parts[2]!.startsWith(p.prefix));
    if (reserved === undefined) return undefined;
    return `Not allowed: ${display(written)}: tables named ${reserved.prefix}* in your team's schema are ${reserved.what}; pick a name that does not start with ${reserved.prefix}`;
  }
  if (parts.length === 3 && parts[0] === 'service') return otherTeamDenial(parts[1]!);
  return `Not allowed: writing ${display(written)}: only temporary tables and your team's schema ${own} can be written`;
}

function constantText(node: unknown): string | undefined {
  const rec = asRecord(node);
  const value = asRecord(rec?.['value']);
  if (rec?.['class'] !== 'CONSTANT' || value === undefined || value['is_null'] === true) return undefined;
  const v = value['value'];
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
}

export function tableFunctionDenial(name: string, args: unknown[], ctx: AccessContext): string | undefined {
  const fn = name.toLowerCase();
  if (ALLOWED_TABLE_FUNCTIONS.has(fn)) return undefined;
  if (TABLE_NAME_FUNCTIONS.has(fn)) {
    const arg = constantText(args[0]);
    if (arg === undefined) return `Not allowed: ${fn} needs the table name as a string literal`;
    return tableReadDenial(splitNameText(arg), ctx);
  }
  const first = constantText(args[0]);
  const call = `${fn}(${first === undefined ? (args.length > 0 ? '...' : '') : `'${first.replaceAll("'", "''")}'`})`;
  if (FILE_FUNCTION.test(fn)) return `access to files is not allowed: ${call}`;
  return `Not allowed: table function ${fn} (not on the service's list of table functions)`;
}

/** Where a function may be looked up: DuckDB's own (system.main, pg_catalog) and the main database's macros. */
function functionSchemaDenial(rec: Record<string, unknown>, fn: string, ctx: AccessContext): string | undefined {
  const catalog = typeof rec['catalog'] === 'string' ? rec['catalog'].toLowerCase() : '';
  const schema = typeof rec['schema'] === 'string' ? rec['schema'].toLowerCase() : '';
  const catalogOk = catalog === '' || catalog === 'system' || catalog === ctx.mainCatalog;
  const schemaOk = schema === '' || schema === 'main' || schema === 'pg_catalog';
  if (catalogOk && schemaOk) return undefined;
  return `Not allowed: function ${[catalog, schema, fn].filter((p) => p !== '').join('.')}: only DuckDB's own functions and the service's macros can be called`;
}

/**
 * A call of a scalar function, aggregate, window function or macro (a FUNCTION or WINDOW node):
 * its name must be on the allowed list; current_setting only with a literal allowed name; a
 * function taking an aggregate's name only with a literal allowed name.
 */
export function functionDenial(rec: Record<string, unknown>, ctx: AccessContext): string | undefined {
  const fn = String(rec['function_name']).toLowerCase();
  const where = functionSchemaDenial(rec, fn, ctx);
  if (where !== undefined) return where;
  const args = Array.isArray(rec['children']) ? rec['children'] : [];
  if (fn === 'current_setting') {
    const name = constantText(args[0]);
    if (name === undefined) return 'Not allowed: current_setting needs the setting\'s name as a string literal';
    if (ALLOWED_SETTINGS.has(name.toLowerCase())) return undefined;
    return `Not allowed: current_setting('${name.replaceAll("'", "''")}'): settings that name files, directories or secrets cannot be read`;
  }
  if (!ALLOWED_FUNCTIONS.has(fn)) return `Not allowed: function ${fn} (not on the service's list of functions: those that take SQL text, a setting, a catalog object's name or a path are refused)`;
  const byName = AGGREGATE_BY_NAME.get(fn);
  if (byName !== undefined) {
    const agg = constantText(args[byName]);
    if (agg === undefined) return `Not allowed: ${fn} needs the aggregate's name as a string literal`;
    if (!ALLOWED_FUNCTIONS.has(agg.toLowerCase())) return `Not allowed: ${fn}(..., '${agg.replaceAll("'", "''")}'): not on the service's list of functions`;
  }
  return undefined;
}

export function asRecord(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function locationOf(rec: Record<string, unknown>): number | undefined {
  const loc = rec['query_location'];
  // DuckDB writes an unknown location as 2^64-1.
  return typeof loc === 'number' && Number.isSafeInteger(loc) && loc >= 0 ? loc : undefined;
}

/**
 * Walks a json_serialize_sql tree: every table reference, table function and SHOW in it,
 * subqueries, CTEs and function arguments included. Returns the first denial.
 */
export function selectDenial(tree: unknown, ctx: AccessContext, near?: number): Denial | undefined {
  if (Array.isArray(tree)) {
    for (const item of tree) {
      const d = selectDenial(item, ctx, near);
      if (d) return d;
    }
    return undefined;
  }
  const rec = asRecord(tree);
  if (rec === undefined) return undefined;
  const location = locationOf(rec) ?? near;
  const deny = (message: string): Denial => (location === undefined ? { message } : { message, location });
  if (rec['type'] === 'TABLE_FUNCTION') return tableFunctionCallDenial(rec, ctx, location, deny);
  const why = nodeDenial(rec, ctx);
  if (why) return deny(why);
  return childrenDenial(Object.values(rec), ctx, location);
}

function childrenDenial(values: unknown[], ctx: AccessContext, location: number | undefined): Denial | undefined {
  for (const value of values) {
    if (value !== null && typeof value === 'object') {
      const d = selectDenial(value, ctx, location);
      if (d) return d;
    }
  }
  return undefined;
}

/** Why a node of the tree other than a table function call may not be read (a table, a function, SHOW). */
function nodeDenial(rec: Record<string, unknown>, ctx: AccessContext): string | undefined {
  if (rec['type'] === 'BASE_TABLE') {
    const parts = [rec['catalog_name'], rec['schema_name'], rec['table_name']].filter((p): p is string => typeof p === 'string' && p !== '');
    return tableReadDenial(parts, ctx);
  }
  if ((rec['class'] === 'FUNCTION' || rec['class'] === 'WINDOW') && typeof rec['function_name'] === 'string') return functionDenial(rec, ctx);
  if (rec['type'] === 'SHOW_REF' && typeof rec['table_name'] === 'string' && rec['table_name'] !== '') {
    return `Not allowed: SHOW ${rec['table_name'].replaceAll('"', '')} lists the objects of every team; DESCRIBE a table instead`;
  }
  return undefined;
}

/** A table function call: judged as a table function; its arguments and the rest as usual. */
function tableFunctionCallDenial(rec: Record<string, unknown>, ctx: AccessContext, location: number | undefined, deny: (message: string) => Denial): Denial | undefined {
  const fn = asRecord(rec['function']);
  const name = typeof fn?.['function_name'] === 'string' ? fn['function_name'] : '';
  const args = Array.isArray(fn?.['children']) ? fn['children'] : [];
  const why = tableFunctionDenial(name, args, ctx) ?? (fn === undefined ? undefined : functionSchemaDenial(fn, name.toLowerCase(), ctx));
  if (why) return deny(why);
  for (const [key, value] of Object.entries(rec)) {
    const d = key === 'function' ? selectDenial(args, ctx, location) : value !== null && typeof value === 'object' ? selectDenial(value, ctx, location) : undefined;
    if (d) return d;
  }
  return undefined;
}

/**
 * Removes DuckDB's `Did you mean "service.other.t"?` hints that name a table the caller may
 * not read: DuckDB looks for near names in every attached catalog.
 */
export function hideUnreadableHints(message: string, ctx: AccessContext): string {
  return message.replace(/\n?Did you mean "([^"]*)"\?/g, (hint: string, name: string) =>
    tableReadDenial(name.split('.'), ctx) === undefined ? hint : '',
  );
}
