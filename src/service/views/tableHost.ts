import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../sql.ts';

/** The part of a DuckDB connection the table code uses. */
export type TableConnection = Pick<DuckDBConnection, 'run' | 'runAndReadAll'>;

/**
 * What views and uploads need of the engine's DuckDB: a connection of the instance that has the
 * catalog `service` attached (so `service.<team>.<name>` is the table queries read), and where a
 * stored result lives. The engine owns the instance; this is the narrow seam to it.
 */
export interface TableHost {
  /** Runs `fn` on a connection of the engine's instance; the connection is closed afterwards. */
  withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T>;
  /** The DuckDB file of a stored result: table `result` with columns c0..cN-1, rows in result order. */
  resultPath(resultId: string): string;
  /**
   * A path for a temporary file DuckDB may read (the engine's lockdown allows one directory);
   * absent: uploads use their own temporary directory.
   */
  scratchPath?(name: string): string;
}

/** A TableHost over an instance laid out as the engine lays it out (dataDir/results/<id>.duckdb). */
export function tableHostOver(instance: DuckDBInstance, engineDataDir: string): TableHost {
  return {
    async withConnection(fn) {
      const conn = await instance.connect();
      try {
        return await fn(conn);
      } finally {
        conn.closeSync();
      }
    },
    resultPath: (id) => join(engineDataDir, 'results', `${id}.duckdb`),
  };
}

/**
 * Prefixes of the service's own work tables in `service.<team>`: a refresh copies into
 * `__staging_<view>_<hex>`, an upload into `__upload_raw_<hex>` and `__upload_<name>_<hex>`, each
 * renamed or dropped before the operation answers. User SQL cannot create such names
 * (accessPolicy.ts), so any found at start were left by a crash and are dropped.
 */
export const STAGING_PREFIXES = ['__staging_', '__upload_'] as const;

/** Drops the work tables a crash left in the `service` catalog; returns their full names. */
export async function dropStagingLeftovers(host: TableHost): Promise<string[]> {
  return host.withConnection(async (conn) => {
    const like = STAGING_PREFIXES.map((p) => `starts_with(table_name, ${sqlString(p)})`).join(' OR ');
    const found = await conn.runAndReadAll(`SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'service' AND (${like}) ORDER BY ALL`);
    const dropped: string[] = [];
    for (const [schema, table] of found.getRowsJson()) {
      await conn.run(`DROP TABLE IF EXISTS service.${sqlIdent(String(schema))}.${sqlIdent(String(table))}`);
      dropped.push(`service.${String(schema)}.${String(table)}`);
    }
    return dropped;
  });
}

/** Serialises async work per key (two refreshes of one view must not swap its table at once). */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    const result = prev.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}

/**
 * Replaces `service.<team>.<name>` by the staging table in one transaction (dropping the staging
 * table on failure). DuckDB's catalog is MVCC: queries that started before the commit read the
 * old table to their end, later ones the new; none sees a mix or no table at all.
 */
export async function swapTable(conn: TableConnection, team: string, stagingName: string, name: string): Promise<void> {
  const schema = `service.${sqlIdent(team)}`;
  try {
    await conn.run('BEGIN TRANSACTION');
    await conn.run(`DROP TABLE IF EXISTS ${schema}.${sqlIdent(name)}`);
    await conn.run(`ALTER TABLE ${schema}.${sqlIdent(stagingName)} RENAME TO ${sqlIdent(name)}`);
    await conn.run('COMMIT');
  } catch (err) {
    await conn.run('ROLLBACK').catch(() => undefined);
    await conn.run(`DROP TABLE IF EXISTS ${schema}.${sqlIdent(stagingName)}`).catch(() => undefined);
    throw err;
  }
}
