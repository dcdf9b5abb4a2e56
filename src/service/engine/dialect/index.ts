// The SQL dialect of submitted statements: DuneSQL (the real service's, the default) is
// translated to DuckDB SQL statement by statement (translate.ts) before the sandbox judges it,
// so the sandbox's lists and the wall apply to what actually runs; DuckDB SQL runs as written.
import type { DuckDBConnection } from '@duckdb/node-api';
import type { SqlStatement } from '../sandbox/splitStatements.ts';
import { dialectMacroStatements, MACRO_NAMES } from './functions.ts';
import { NATIVE_FUNCTION_NAMES, registerNativeFunctions } from './nativeFunctions.ts';
import { translateDuneSql } from './translate.ts';

import type { SqlDialect } from './dialects.ts';

export { SQL_DIALECTS, type SqlDialect } from './dialects.ts';

/** Every function the dialect adds to the engine, by name (for the sandbox's list). */
export const DIALECT_FUNCTION_NAMES: readonly string[] = [...MACRO_NAMES, ...NATIVE_FUNCTION_NAMES];

/** The statements as DuckDB runs them. */
export function inDuckDbSql(statements: SqlStatement[], dialect: SqlDialect): SqlStatement[] {
  if (dialect === 'duckdb') return statements;
  return statements.map((st) => {
    const t = translateDuneSql(st.text);
    return { text: t.sql, start: st.start, sourceOffset: (at) => t.sourceOffset(at) };
  });
}

/**
 * Session settings of the dialect, run on the connection before the statements: Trino divides
 * integers as integers (5 / 2 = 2), DuckDB as decimals unless integer_division is on. Set both
 * ways, since connections are reused.
 */
export function dialectSessionSql(dialect: SqlDialect): string {
  return `SET SESSION integer_division = ${dialect === 'dunesql'}`;
}

/** Creates the macros (in the main database) and registers the native functions of the instance. */
export async function installDialect(conn: DuckDBConnection): Promise<void> {
  for (const stmt of dialectMacroStatements()) await conn.run(stmt);
  registerNativeFunctions(conn);
}
