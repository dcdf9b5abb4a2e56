// Opens the engine over dataDir: dataDir/engine.duckdb (custom types, macros, datasets),
// dataDir/service.duckdb attached as catalog `service` (one schema per team, so
// `service.<team>.<name>` resolves), dataDir/results/<id>.duckdb (one file per stored result).
// After setting up, the instance is locked down (lockdown.ts): user SQL runs sandboxed.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DuckDbEngine } from './engine.ts';
import { customTypeStatements } from './customTypes.ts';
import { loadSampleDataset } from './sampleDataset.ts';
import { sqlString } from '../sql.ts';
import { lockDown } from './lockdown.ts';
import type { EngineCeilings } from './resourceBounds.ts';
import type { OpenEngineOptions, SqlEngine } from './types.ts';

export * from './types.ts';

export const DEFAULT_SAMPLE_ROWS = 1_000_000;
const KNOWN_DATASETS = new Set(['sample']);

export async function openEngine(opts: OpenEngineOptions): Promise<SqlEngine> {
  for (const name of opts.datasets ?? []) {
    if (!KNOWN_DATASETS.has(name)) throw new Error(`unknown dataset "${name}" (known: ${[...KNOWN_DATASETS].join(', ')})`);
  }
  const resultsDir = join(opts.dataDir, 'results');
  await mkdir(resultsDir, { recursive: true });
  const config = engineConfig(opts);
  await mkdir(config['temp_directory']!, { recursive: true });
  // Opening engine.duckdb takes the folder's lock: only then are leftovers known to be no other
  // process's files being written (a process that finds the folder held must not touch them).
  const instance = await DuckDBInstance.create(join(opts.dataDir, 'engine.duckdb'), config);
  let systemViews: Set<string>;
  let ceilings: EngineCeilings;
  try {
    await DuckDbEngine.removeIncomplete(resultsDir);
    const conn = await instance.connect();
    try {
      await conn.run('SET GLOBAL errors_as_json = true');
      await conn.run("SET GLOBAL TimeZone = 'UTC'");
      await conn.run(`ATTACH IF NOT EXISTS ${sqlString(join(opts.dataDir, 'service.duckdb'))} AS service`);
      const types = await conn.runAndReadAll(
        'SELECT type_name FROM duckdb_types() WHERE database_name = current_database()',
      );
      const existing = new Set(types.getRowsJson().map((r) => String(r[0])));
      for (const stmt of customTypeStatements(existing)) await conn.run(stmt);
      if (opts.datasets?.includes('sample')) await loadSampleDataset(conn, opts.sampleRows, DEFAULT_SAMPLE_ROWS);
      const views = await conn.runAndReadAll(
        "SELECT lower(view_name) FROM duckdb_views() WHERE internal AND database_name = 'system' AND schema_name IN ('main', 'pg_catalog')",
      );
      systemViews = new Set(views.getRowsJson().map((r) => String(r[0])));
      const limits = (await conn.runAndReadAll("SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size')")).getRowsJson()[0]!;
      ceilings = { memoryLimit: String(limits[0]), maxTempDirectorySize: String(limits[1]) };
      await lockDown(conn, resultsDir);
    } finally {
      conn.closeSync();
    }
  } catch (err) {
    instance.closeSync();
    throw err;
  }
  return new DuckDbEngine(instance, opts.dataDir, systemViews, opts.encodeMinBytes, opts.arrowChunkRows, ceilings, opts.encodeResults);
}

/** DuckDB's configuration of the instance: set at creation, locked from then on (lockdown.ts). */
function engineConfig(opts: OpenEngineOptions): Record<string, string> {
  const size = (v: number | string): string => (typeof v === 'number' ? `${v}B` : v);
  const config: Record<string, string> = { temp_directory: opts.tempDirectory ?? join(opts.dataDir, 'tmp') };
  if (opts.defaultThreads !== undefined) config['threads'] = String(opts.defaultThreads);
  if (opts.memoryLimit !== undefined) config['memory_limit'] = size(opts.memoryLimit);
  if (opts.maxTempDirectorySize !== undefined) config['max_temp_directory_size'] = size(opts.maxTempDirectorySize);
  return config;
}
