import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

/** Runs `fn` on a fresh in-memory DuckDB (an independent reader of exported files), closed afterwards. */
export async function withDuckDb<T>(fn: (con: DuckDBConnection) => Promise<T>): Promise<T> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    return await fn(con);
  } finally {
    con.closeSync();
    db.closeSync();
  }
}

/** The rows of one query on a fresh in-memory DuckDB, as JS values (bigints, Dates, ...). */
export function duckRowsJS(sql: string): Promise<Record<string, unknown>[]> {
  return withDuckDb(async (con) => (await con.runAndReadAll(sql)).getRowObjectsJS());
}
