// The engine-wide wall under the per-statement sandbox (sandbox.ts): once an instance has
// attached what it needs, DuckDB itself refuses files outside the directory it is given (none
// for the instance that runs users' SQL), refuses to install or load extensions, and refuses any
// further configuration change. Measured on DuckDB 1.5: read_csv/read_text/read_blob/glob/COPY/
// ATTACH/EXPORT of other paths fail with "Permission Error: Cannot access file ... file system
// operations are disabled by configuration"; INSTALL and LOAD fail; SET/RESET/PRAGMA of global
// options (threads, memory_limit, errors_as_json) fail with "the configuration has been locked"
// (except memory_limit and max_temp_directory_size, which the engine itself changes).
//
// What DuckDB adds on its own: turning external access off puts the files of the databases
// attached at that moment (with their .wal, .wal.checkpoint, .wal.recovery) in allowed_paths and
// the temp_directory in allowed_directories, and neither list can change afterwards ("Cannot
// change allowed_paths when enable_external_access is disabled"). Its storage needs them, and
// disabled_filesystems = 'LocalFileSystem' (the only other switch) stops its own checkpoints and
// spilling. So, for the instance that runs users' SQL, the catalogs' files and the spill
// directory stay readable to DuckDB; only the sandbox keeps user SQL from them (no allowed
// function opens a file). What the lock does not stop, so the sandbox must: DETACH, USE and
// session options (search_path, schema), and tables of another team's schema.
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../sql.ts';

/** `readableDir`: the one directory whose files DuckDB may open (none when undefined). */
export async function lockDown(conn: DuckDBConnection, readableDir?: string): Promise<void> {
  if (readableDir !== undefined) {
    const dir = readableDir.endsWith('/') ? readableDir : `${readableDir}/`;
    await conn.run(`SET GLOBAL allowed_directories = [${sqlString(dir)}]`);
  }
  await conn.run('SET GLOBAL enable_external_access = false');
  await conn.run('SET GLOBAL autoinstall_known_extensions = false');
  await conn.run('SET GLOBAL autoload_known_extensions = false');
  // The engine sets the memory and spill limits to the executions running (resourceBounds.ts),
  // and integer division per session to the SQL dialect's (dialect/index.ts); user SQL cannot
  // change them (the sandbox refuses SET).
  await conn.run("SET GLOBAL allowed_configs = ['memory_limit', 'max_temp_directory_size', 'integer_division']");
  // Last: after this no SET succeeds, the engine's own included.
  await conn.run('SET GLOBAL lock_configuration = true');
}
