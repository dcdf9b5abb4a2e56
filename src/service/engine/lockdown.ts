// The engine-wide wall under the per-statement sandbox (sandbox.ts): once the engine has
// attached what it needs, DuckDB itself refuses files outside the results directory, refuses
// to install or load extensions, and refuses any further configuration change. Measured on
// DuckDB 1.5.6: read_csv/read_text/glob/COPY/ATTACH/EXPORT of other paths fail with
// "Permission Error: ... file system operations are disabled by configuration"; INSTALL and
// LOAD fail; SET/RESET/PRAGMA of global options (threads, memory_limit, errors_as_json) fail
// with "the configuration has been locked" (except memory_limit and max_temp_directory_size, which
// the engine itself changes). What it does NOT stop, so the sandbox must:
// reading files inside the results directory (other teams' stored results), DETACH, USE and
// session options (search_path, schema), and tables of another team's schema.
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../sql.ts';

export async function lockDown(conn: DuckDBConnection, resultsDir: string): Promise<void> {
  const dir = resultsDir.endsWith('/') ? resultsDir : `${resultsDir}/`;
  await conn.run(`SET GLOBAL allowed_directories = [${sqlString(dir)}]`);
  await conn.run('SET GLOBAL enable_external_access = false');
  await conn.run('SET GLOBAL autoinstall_known_extensions = false');
  await conn.run('SET GLOBAL autoload_known_extensions = false');
  // The engine sets the memory and spill limits to the executions running (resourceBounds.ts);
  // user SQL cannot change them (the sandbox refuses SET).
  await conn.run("SET GLOBAL allowed_configs = ['memory_limit', 'max_temp_directory_size']");
  // Last: after this no SET succeeds, the engine's own included.
  await conn.run('SET GLOBAL lock_configuration = true');
}
