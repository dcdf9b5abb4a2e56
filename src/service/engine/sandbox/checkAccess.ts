// The sandbox's judgement of one execution's SQL: every statement is checked before any of them
// runs (sandbox.ts, accessPolicy.ts), and DuckDB's own errors are kept from naming what the team
// may not see.
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError, type EngineErrorOptions, type ExecuteOptions, type SqlClassification } from '../types.ts';
import { Sandbox } from './sandbox.ts';
import { hideUnreadableHints, type AccessContext } from './accessPolicy.ts';
import { lineColumnAt } from './sqlPosition.ts';
import { splitStatements, type SqlStatement } from './splitStatements.ts';

export interface CheckedAccess {
  ctx: AccessContext;
  /** The SQL stores rows in the team's schema (run in a quota transaction). */
  writesTeamSchema: boolean;
  /** The SQL may change the team's tables (their sizes are measured again). */
  changesTeamTables: boolean;
}

/** Who runs the SQL; `walled`: on the team's own instance (teams/teamInstances.ts). */
export type AccessOptions = Pick<ExecuteOptions, 'team' | 'canRead'> & { walled?: boolean };

/** Refuses the user's SQL before any of it runs when one statement is not allowed. */
export async function checkAccess(
  conn: DuckDBConnection,
  sql: string,
  statements: SqlStatement[],
  opts: AccessOptions,
  systemViews: ReadonlySet<string>,
): Promise<CheckedAccess> {
  const ctx = await accessContext(conn, opts, systemViews);
  const sandbox = new Sandbox(conn, ctx);
  for (const st of statements) {
    const denial = await sandbox.check(st.text);
    if (denial) {
      const { line, column } = lineColumnAt(sql, st.start + (st.sourceOffset?.(denial.offset) ?? denial.offset));
      throw new EngineError('semantic', `line ${line}:${column}: ${denial.message}`, { line, column });
    }
  }
  return { ctx, writesTeamSchema: sandbox.writesTeamSchema, changesTeamTables: sandbox.changesTeamTables };
}

/**
 * Judges the SQL as checkAccess would, running none of it: per statement (where its text starts),
 * whether it writes, and the first denial an execution would fail with.
 */
export async function classifyAccess(
  conn: DuckDBConnection,
  sql: string,
  opts: AccessOptions,
  systemViews: ReadonlySet<string>,
): Promise<SqlClassification> {
  const sandbox = new Sandbox(conn, await accessContext(conn, opts, systemViews));
  const out: SqlClassification = { statements: [] };
  for (const st of splitStatements(sql)) {
    const denial = await sandbox.check(st.text);
    const lead = st.text.length - st.text.trimStart().length;
    out.statements.push({ ...lineColumnAt(sql, st.start + lead), writes: sandbox.statementWrites });
    if (denial !== undefined && out.denial === undefined) {
      const { line, column } = lineColumnAt(sql, st.start + denial.offset);
      out.denial = { message: `line ${line}:${column}: ${denial.message}`, line, column };
    }
  }
  return out;
}

async function accessContext(conn: DuckDBConnection, opts: AccessOptions, systemViews: ReadonlySet<string>): Promise<AccessContext> {
  const db = await conn.runAndReadAll(
    "SELECT current_database() AS db, list(lower(schema_name)) AS schemas FROM duckdb_schemas() WHERE database_name = current_database() AND schema_name NOT IN ('information_schema', 'pg_catalog')",
  );
  const row = db.getRowsJson()[0] ?? [];
  const schemas = Array.isArray(row[1]) ? row[1].map(String) : [];
  const ctx: AccessContext = { mainCatalog: String(row[0]).toLowerCase(), readableSchemas: new Set(schemas), systemViews };
  if (opts.team !== undefined) ctx.team = opts.team;
  if (opts.canRead !== undefined) ctx.canRead = opts.canRead;
  if (opts.walled === true) ctx.walled = true;
  return ctx;
}

/** DuckDB's "Did you mean" hints search every catalog: they must not name hidden tables. */
export function withoutHiddenHints(err: EngineError, ctx: AccessContext): EngineError {
  const message = hideUnreadableHints(err.message, ctx);
  if (message === err.message) return err;
  const options: EngineErrorOptions = { cause: err.cause };
  if (err.line !== undefined) options.line = err.line;
  if (err.column !== undefined) options.column = err.column;
  if (err.position !== undefined) options.position = err.position;
  return new EngineError(err.kind, message, options);
}
