// Opens the engine over dataDir: dataDir/engine.duckdb (custom types, macros, datasets), the
// teams' tables (one file per team, dataDir/teams/<team>.duckdb, each attached as catalog
// `service` by that team's own instance: teams/teamInstances.ts; or, with walledTeams off,
// dataDir/service.duckdb attached here as catalog `service`, one schema per team, so
// `service.<team>.<name>` resolves either way), dataDir/results/<id>.duckdb (one file per stored
// result). After setting up, the instance is locked down with no readable directory
// (lockdown.ts): user SQL runs sandboxed on it, or on the team's instance. A second, in-memory
// instance opens the results directory and nothing else (engine.ts, "Two instances"); the
// engine's memory_limit is shared between the two.
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { DuckDbEngine } from './engine.ts';
import { ResultFiles } from './results/resultFiles.ts';
import { customTypeStatements } from './customTypes.ts';
import { loadSampleDataset } from './tables/sampleDataset.ts';
import { loadDuneSample } from './tables/duneSample.ts';
import { installDialect } from './dialect/index.ts';
import { sqlString } from '../sql.ts';
import { lockDown } from './sandbox/lockdown.ts';
import { parseDuckDbSize, type EngineCeilings } from './memory/resourceBounds.ts';
import { trimTo } from './memory/memoryTrim.ts';
import { splitServiceDatabase } from './teams/splitService.ts';
import { dropTeamLeftovers } from './teams/leftovers.ts';
import { STAGING_PREFIXES } from './tables/serviceTables.ts';
import type { OpenEngineOptions, SqlEngine } from './types.ts';

export * from './types.ts';

export const DEFAULT_SAMPLE_ROWS = 1_000_000;
const KNOWN_DATASETS = new Set(['sample']);
/**
 * The part of the engine's memory_limit given to the files instance (result files written,
 * pages, encodings, uploads read); the rest runs users' SQL. Both spill beyond their part.
 */
const FILES_MEMORY_SHARE = 0.25;

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
  let files: DuckDBInstance | undefined;
  try {
    await ResultFiles.removeIncomplete(resultsDir);
    const conn = await instance.connect();
    try {
      await conn.run('SET GLOBAL errors_as_json = true');
      await conn.run("SET GLOBAL TimeZone = 'UTC'");
      await attachCatalogs(conn, opts);
      const types = await conn.runAndReadAll(
        'SELECT type_name FROM duckdb_types() WHERE database_name = current_database()',
      );
      const existing = new Set(types.getRowsJson().map((r) => String(r[0])));
      for (const stmt of customTypeStatements(existing)) await conn.run(stmt);
      await installDialect(conn);
      if (opts.datasets?.includes('sample')) {
        const made = await loadSampleDataset(conn, opts.sampleRows, DEFAULT_SAMPLE_ROWS);
        if (made !== undefined) opts.onNotice?.(made);
        await loadDuneSample(conn, opts.duneSampleTransactions);
      }
      const views = await conn.runAndReadAll(
        "SELECT lower(view_name) FROM duckdb_views() WHERE internal AND database_name = 'system' AND schema_name IN ('main', 'pg_catalog')",
      );
      systemViews = new Set(views.getRowsJson().map((r) => String(r[0])));
      const limits = async (): Promise<string[]> =>
        (await conn.runAndReadAll("SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size')")).getRowsJson()[0]!.map(String);
      const [limitText] = await limits();
      const total = parseDuckDbSize(limitText!);
      const filesMemory = total === undefined ? undefined : Math.floor(total * FILES_MEMORY_SHARE);
      // Team instances open engine.duckdb read-only: all of it on disk, nothing left in a WAL
      // (before the trim, which gives back what the checkpoint took).
      if (opts.walledTeams === true) await conn.run('CHECKPOINT');
      // What setting up read and wrote (a generated sample table and its sort) is evicted and
      // given back (memoryTrim.ts) as the users' part of the limit is set.
      await trimTo(conn, total !== undefined && filesMemory !== undefined ? `${total - filesMemory}B` : limitText!);
      const [memoryLimit, maxTempDirectorySize] = await limits();
      ceilings = { memoryLimit: memoryLimit!, maxTempDirectorySize: maxTempDirectorySize! };
      if (opts.memoryAdmission !== undefined) ceilings.admission = opts.memoryAdmission;
      if (filesMemory !== undefined) ceilings.filesMemoryLimit = `${filesMemory}B`;
      if (opts.trim !== undefined) ceilings.trim = opts.trim;
      if (opts.encodeAtCompletionMax !== undefined) ceilings.encodeAtCompletionMax = opts.encodeAtCompletionMax;
      files = await openFiles(opts, config, resultsDir, filesMemory);
      await lockDown(conn);
    } finally {
      conn.closeSync();
    }
  } catch (err) {
    files?.closeSync();
    instance.closeSync();
    throw err;
  }
  return new DuckDbEngine({
    instance,
    files,
    dataDir: opts.dataDir,
    systemViews,
    encodeMinBytes: opts.encodeMinBytes,
    arrowChunkRows: opts.arrowChunkRows,
    ceilings,
    encodeResults: opts.encodeResults,
    teams:
      opts.walledTeams === true
        ? {
            engineFile: join(opts.dataDir, 'engine.duckdb'),
            teamsDir: teamsDir(opts.dataDir),
            publicDir: join(opts.dataDir, 'public'),
            tempDir: join(config['temp_directory']!, 'teams'),
            threads: config['threads'],
            maxTempDirectorySize: parseDuckDbSize(ceilings.maxTempDirectorySize) === undefined ? undefined : ceilings.maxTempDirectorySize,
          }
        : undefined,
  });
}

/**
 * The teams' tables: one file per team (teams/), an older service.duckdb split into them first,
 * what a crash left removed; or, with teams not walled apart, service.duckdb attached as `service`.
 */
async function attachCatalogs(conn: DuckDBConnection, opts: OpenEngineOptions): Promise<void> {
  if (opts.walledTeams === true) {
    for (const notice of await splitServiceDatabase(conn, opts.dataDir, teamsDir(opts.dataDir))) opts.onNotice?.(notice);
    await dropTeamLeftovers(conn, teamsDir(opts.dataDir), STAGING_PREFIXES);
    // Snapshots a crash left between their write and their deletion (teams/sharedObjects.ts).
    await rm(join(opts.dataDir, 'public'), { recursive: true, force: true });
  } else {
    await refuseSplitFolder(opts.dataDir);
    await conn.run(`ATTACH IF NOT EXISTS ${sqlString(join(opts.dataDir, 'service.duckdb'))} AS service`);
  }
}

/**
 * With teams not walled apart, a folder whose tables were split into the teams' files (and no
 * service.duckdb) would start with none of them: refused, so that nothing looks lost.
 */
async function refuseSplitFolder(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, 'service.duckdb'))) return;
  const split = (await readdir(teamsDir(dataDir)).catch(() => [])).filter((f) => f.endsWith('.duckdb'));
  if (split.length === 0) return;
  throw new Error(
    `the teams' tables in ${teamsDir(dataDir)} are kept one file per team (engine.walled_teams was on), and engine.walled_teams is off: turn it on again to serve them (they are not joined back into one service.duckdb)`,
  );
}

function teamsDir(dataDir: string): string {
  return join(dataDir, 'teams');
}

/**
 * The files instance: in memory, reading and writing the results directory only, spilling to its
 * own directory (never the users' instance's, whose spill directory DuckDB lets that instance read).
 */
async function openFiles(opts: OpenEngineOptions, userConfig: Record<string, string>, resultsDir: string, memoryBytes: number | undefined): Promise<DuckDBInstance> {
  const config: Record<string, string> = { temp_directory: join(opts.dataDir, 'results-tmp') };
  if (userConfig['threads'] !== undefined) config['threads'] = userConfig['threads'];
  if (memoryBytes !== undefined) config['memory_limit'] = `${memoryBytes}B`;
  if (userConfig['max_temp_directory_size'] !== undefined) config['max_temp_directory_size'] = userConfig['max_temp_directory_size'];
  const files = await DuckDBInstance.create(':memory:', config);
  try {
    const conn = await files.connect();
    try {
      await conn.run('SET GLOBAL errors_as_json = true');
      await conn.run("SET GLOBAL TimeZone = 'UTC'");
      await lockDown(conn, resultsDir);
    } finally {
      conn.closeSync();
    }
  } catch (err) {
    files.closeSync();
    throw err;
  }
  return files;
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
