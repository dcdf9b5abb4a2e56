// Rows moved between the engine's two DuckDB instances: the one that runs users' SQL (no file of
// the results directory is readable to it) and the one that opens stored results (engine.ts).
// The rows of a statement prepared on one are streamed chunk by chunk into a table of the other
// through an appender: the chunks stay native (no value becomes a JS value) and one chunk is held
// at a time, so a result of any size passes in the memory of a chunk. Column types travel as
// DuckDB's own type text, which DuckDB reads back as the same type (every type of
// test_all_types() does; the engine test checks it).
import { DuckDBTypeId, type DuckDBConnection, type DuckDBDataChunk, type DuckDBType } from '@duckdb/node-api';
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

/**
 * The type as DDL. DuckDB's text of a type drops the JSON alias (JSON is a VARCHAR with an alias),
 * at the top and inside lists, arrays, maps, rows and unions: json is written back at every depth,
 * or a column of JSON[] would be stored as VARCHAR[] and its column_types would say array(varchar).
 */
export function sqlTypeOf(type: DuckDBType): string {
  if (type.alias?.toUpperCase() === 'JSON') return 'JSON';
  if (!holdsJson(type)) return type.toString();
  switch (type.typeId) {
    case DuckDBTypeId.LIST:
      return `${sqlTypeOf(type.valueType)}[]`;
    case DuckDBTypeId.ARRAY:
      return `${sqlTypeOf(type.valueType)}[${type.length}]`;
    case DuckDBTypeId.MAP:
      return `MAP(${sqlTypeOf(type.keyType)}, ${sqlTypeOf(type.valueType)})`;
    case DuckDBTypeId.STRUCT:
      return `STRUCT(${type.entryNames.map((name, i) => `${sqlIdent(name)} ${sqlTypeOf(type.entryTypes[i]!)}`).join(', ')})`;
    case DuckDBTypeId.UNION:
      return `UNION(${type.memberTags.map((name, i) => `${sqlIdent(name)} ${sqlTypeOf(type.memberTypes[i]!)}`).join(', ')})`;
    default:
      return type.toString();
  }
}

/** Whether a JSON type is anywhere inside `type`. */
function holdsJson(type: DuckDBType): boolean {
  if (type.alias?.toUpperCase() === 'JSON') return true;
  switch (type.typeId) {
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.ARRAY:
      return holdsJson(type.valueType);
    case DuckDBTypeId.MAP:
      return holdsJson(type.keyType) || holdsJson(type.valueType);
    case DuckDBTypeId.STRUCT:
      return type.entryTypes.some(holdsJson);
    case DuckDBTypeId.UNION:
      return type.memberTypes.some(holdsJson);
    default:
      return false;
  }
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
