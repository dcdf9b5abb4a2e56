import { DuckDBInstance } from '@duckdb/node-api';

/** Runs one query on an in-memory DuckDB (to read exported files back) and returns its rows. */
export async function duck(sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  try {
    return (await con.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    con.closeSync();
    db.closeSync();
  }
}
