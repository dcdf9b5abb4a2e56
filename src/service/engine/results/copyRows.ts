// Rows moved between the engine's two DuckDB instances: the one that runs users' SQL (no file of
// the results directory is readable to it) and the one that opens stored results (engine.ts).
// The rows of a statement prepared on one are streamed chunk by chunk into a table of the other
// through an appender: the chunks stay native (no value becomes a JS value) and one chunk is held
// at a time, so a result of any size passes in the memory of a chunk. Column types travel as
// DuckDB's own type text, which DuckDB reads back as the same type (every type of
// test_all_types() does; the engine test checks it).
import type { DuckDBConnection, DuckDBDataChunk, DuckDBType } from '@duckdb/node-api';
import { sqlIdent } from '../../sql.ts';
import { chunkFetched } from '../memory/chunkGarbage.ts';

/** What copyRows reads: a streamed result, or chunks already held. */
export interface ChunkSource {
  fetchChunk(): Promise<DuckDBDataChunk | null>;
}

export interface CopyTarget {
  catalog: string;
  schema: string;
  table: string;
}

/** The type as DDL; a JSON column keeps its JSON alias (otherwise it would come back as VARCHAR). */
export function sqlTypeOf(type: DuckDBType): string {
  return type.alias?.toUpperCase() === 'JSON' ? 'JSON' : type.toString();
}

/**
 * Creates `target` through `into` with one column per (name, type), then appends every chunk of
 * `rows` to it. Returns the number of rows copied.
 */
export async function copyRows(into: DuckDBConnection, target: CopyTarget, names: readonly string[], types: readonly DuckDBType[], rows: ChunkSource): Promise<number> {
  const table = `${sqlIdent(target.catalog)}.${sqlIdent(target.schema)}.${sqlIdent(target.table)}`;
  await into.run(`CREATE TABLE ${table} (${types.map((t, i) => `${sqlIdent(names[i]!)} ${sqlTypeOf(t)}`).join(', ')})`);
  const appender = await into.createAppender(target.table, target.schema, target.catalog);
  let count = 0;
  try {
    for (;;) {
      const chunk = await rows.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      appender.appendDataChunk(chunk);
      count += chunk.rowCount;
      chunkFetched();
    }
    appender.flushSync();
  } catch (err) {
    // Closing flushes what was appended (into a table the caller drops): its error is not the cause.
    try {
      appender.closeSync();
    } catch {
      // the first error is the one to report
    }
    throw err;
  }
  appender.closeSync();
  return count;
}
