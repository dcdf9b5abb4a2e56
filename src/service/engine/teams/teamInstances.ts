// One DuckDB instance per team, so that another team's private tables are out of what DuckDB can
// open, whatever SQL gets past the sandbox's lists. A team's instance (opened on its first use,
// kept until the engine closes) has:
//   - the engine's main database (`engine.duckdb`: the custom types, the dialect's macros, the
//     sample datasets) opened read-only: nothing writes it after the engine has set it up;
//   - the team's own file `teams/<team>.duckdb` attached as catalog `service`: its schema
//     `service.<team>` holds the team's tables, materialized views and uploads, and nothing of
//     any other team's but the views the engine made over public objects (sharedObjects.ts);
//   - its own spill directory `<temp>/teams/<team>`;
//   - and then the lockdown (sandbox/lockdown.ts) with one readable directory, `public/`, where
//     snapshots of other teams' public objects are written to be attached (sharedObjects.ts).
// DuckDB fixes the files an instance may open when external access goes off: the other teams'
// files are not among them, so `ATTACH` of one is `Permission Error: Cannot access file ...`.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../../sql.ts';
import { registerNativeFunctions } from '../dialect/nativeFunctions.ts';
import { lockDown } from '../sandbox/lockdown.ts';
import { InstanceUse } from '../memory/memoryTrim.ts';
import { EngineError } from '../types.ts';
import type { TeamUses } from '../connections.ts';

/** Where the team instances' files live, and the settings they are opened with. */
export interface TeamInstanceFiles {
  /** The engine's main database, opened read-only by every team instance. */
  engineFile: string;
  /** `<dataDir>/teams`: one `<team>.duckdb` per team. */
  teamsDir: string;
  /** The one directory a team instance may open: snapshots of public objects. */
  publicDir: string;
  /** Each team spills into `<tempDir>/<team>` (a spill directory is readable to its instance). */
  tempDir: string;
  threads?: string | undefined;
  maxTempDirectorySize?: string | undefined;
  /** The team instance's memory_limit in force: a new instance starts with it, a trim restores it. */
  memoryLimit: (team: string) => string | undefined;
  /** A team instance with no connection open for this long gives its idle memory back. */
  idleMs: number;
}

/** The file of a team's own catalog. */
export function teamFile(teamsDir: string, team: string): string {
  return join(teamsDir, `${team.toLowerCase()}.duckdb`);
}

export class TeamInstances implements TeamUses {
  readonly #files: TeamInstanceFiles;
  readonly #opening = new Map<string, Promise<InstanceUse>>();
  readonly #open = new Map<string, InstanceUse>();
  readonly #names = new Map<string, string>();
  #closed = false;

  constructor(files: TeamInstanceFiles) {
    this.#files = files;
  }

  get publicDir(): string {
    return this.#files.publicDir;
  }

  /** The file of the team's `service` catalog (watched by the storage quota while SQL writes it). */
  serviceFile(team: string): string {
    return teamFile(this.#files.teamsDir, team);
  }

  use(team: string): Promise<InstanceUse> {
    if (this.#closed) return Promise.reject(new EngineError('internal', 'engine is closed'));
    const key = team.toLowerCase();
    let opening = this.#opening.get(key);
    if (opening === undefined) {
      opening = this.#create(team).then((use) => {
        // Closed while it opened: nobody will close it but us.
        if (this.#closed) {
          use.instance.closeSync();
          throw new EngineError('internal', 'engine is closed');
        }
        this.#open.set(key, use);
        this.#names.set(key, team);
        return use;
      });
      this.#opening.set(key, opening);
      opening.catch(() => this.#opening.delete(key));
    }
    return opening;
  }

  opened(): InstanceUse[] {
    return [...this.#open.values()];
  }

  openedTeams(): string[] {
    return [...this.#names.values()];
  }

  /** No instance opens from now on (the engine closes those opened). */
  markClosed(): void {
    this.#closed = true;
  }

  async #create(team: string): Promise<InstanceUse> {
    const f = this.#files;
    const temp = join(f.tempDir, team.toLowerCase());
    await mkdir(temp, { recursive: true, mode: 0o700 });
    await mkdir(f.teamsDir, { recursive: true, mode: 0o700 });
    await mkdir(f.publicDir, { recursive: true, mode: 0o700 });
    const config: Record<string, string> = { access_mode: 'READ_ONLY', temp_directory: temp };
    if (f.threads !== undefined) config['threads'] = f.threads;
    const limit = f.memoryLimit(team);
    if (limit !== undefined) config['memory_limit'] = limit;
    if (f.maxTempDirectorySize !== undefined) config['max_temp_directory_size'] = f.maxTempDirectorySize;
    const instance = await DuckDBInstance.create(f.engineFile, config);
    try {
      const conn = await instance.connect();
      try {
        await setUp(conn, team, teamFile(f.teamsDir, team));
        await lockDown(conn, f.publicDir);
      } finally {
        conn.closeSync();
      }
    } catch (err) {
      instance.closeSync();
      throw err;
    }
    return new InstanceUse(instance, limit === undefined ? undefined : () => f.memoryLimit(team) ?? limit, f.idleMs);
  }
}

/**
 * The team's catalog attached read-write (the main database is read-only, and DuckDB attaches
 * read-only by default then) and its schema made; what an earlier run left in the file was
 * dropped at start (leftovers.ts).
 */
async function setUp(conn: DuckDBConnection, team: string, file: string): Promise<void> {
  await conn.run('SET GLOBAL errors_as_json = true');
  await conn.run("SET GLOBAL TimeZone = 'UTC'");
  await conn.run(`ATTACH ${sqlString(file)} AS service (READ_WRITE)`);
  await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(team)}`);
  registerNativeFunctions(conn);
}
