import { withDuckDb } from '../helpers/duckdb.ts';

/** Runs one query on an in-memory DuckDB (to read exported files back) and returns its rows, as JSON values. */
export function duck(sql: string): Promise<Record<string, unknown>[]> {
  return withDuckDb(async (con) => (await con.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[]);
}
