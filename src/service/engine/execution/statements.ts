// The statements of one execution's SQL on the user's connection: the first ones run in order,
// the last one is prepared and its rows streamed into the result file (or held, when it ran
// inside the quota transaction). Errors name the statement's line and column in the whole SQL.
import type { DuckDBConnection, DuckDBDataChunk, DuckDBPreparedStatement } from '@duckdb/node-api';
import { EngineError } from '../types.ts';
import { toEngineError, type SqlOrigin } from '../duckdbError.ts';
import type { SqlStatement } from '../sandbox/splitStatements.ts';
import { uniqueColumnNames } from '../results/columnNames.ts';
import { copyRows, type ChunkSource } from '../results/copyRows.ts';

function originOf(sql: string, st: SqlStatement): SqlOrigin {
  const origin: SqlOrigin = { sql, statementStart: st.start, ran: st.text, prefixLength: 0, statementLength: st.text.length };
  if (st.sourceOffset) origin.sourceOffset = st.sourceOffset;
  return origin;
}

/** DuckDB's error of a statement of the user's SQL, placed in the whole SQL text. */
export function userError(err: unknown, sql: string, st: SqlStatement): EngineError {
  return toEngineError(err, originOf(sql, st));
}

/** Extra statements are the user's own (e.g. CREATE TABLE then SELECT); run them in order. */
export async function runStatement(conn: DuckDBConnection, sql: string, st: SqlStatement): Promise<void> {
  try {
    await conn.run(st.text);
  } catch (err) {
    throw userError(err, sql, st);
  }
}

export async function prepareStatement(conn: DuckDBConnection, sql: string, st: SqlStatement): Promise<DuckDBPreparedStatement> {
  try {
    return await conn.prepare(st.text);
  } catch (err) {
    throw userError(err, sql, st);
  }
}

/** Runs a statement that is not a query and keeps its rows (a count, a plan: few) in memory. */
export async function runHeld(prepared: DuckDBPreparedStatement, sql: string, st: SqlStatement): Promise<DuckDBDataChunk[]> {
  try {
    const result = await prepared.run();
    const chunks: DuckDBDataChunk[] = [];
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return chunks;
      chunks.push(chunk);
    }
  } catch (err) {
    throw userError(err, sql, st);
  }
}

/**
 * Streams the last statement's rows (or the rows it already returned, `held`) from the user's
 * connection into `result` of the result file attached as `catalog` on `files`; returns the
 * column names.
 */
export async function storeLast(
  files: DuckDBConnection,
  sql: string,
  last: SqlStatement,
  prepared: DuckDBPreparedStatement,
  catalog: string,
  held?: DuckDBDataChunk[],
): Promise<string[]> {
  const names = uniqueColumnNames(Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i)));
  const types = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnType(i));
  const rows = held !== undefined ? heldRows(held) : await streamedRows(prepared, sql, last);
  if (types.length === 0) return [];
  await copyRows(files, { catalog, schema: 'main', table: 'result' }, names.map((_, i) => `c${i}`), types, rows);
  return names;
}

function heldRows(held: DuckDBDataChunk[]): ChunkSource {
  const chunks = held.values();
  return { fetchChunk: async () => chunks.next().value ?? null };
}

/** Errors of the user's query itself (not of writing its rows): a retry with more memory for the writer would not help them. */
const queryErrors = new WeakSet<object>();

export function isQueryError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && queryErrors.has(err);
}

async function streamedRows(prepared: DuckDBPreparedStatement, sql: string, last: SqlStatement): Promise<ChunkSource> {
  let stream: ChunkSource;
  try {
    stream = await prepared.stream();
  } catch (err) {
    throw userError(err, sql, last);
  }
  return {
    fetchChunk: async () => {
      try {
        return await stream.fetchChunk();
      } catch (err) {
        throw userError(err, sql, last);
      }
    },
  };
}
