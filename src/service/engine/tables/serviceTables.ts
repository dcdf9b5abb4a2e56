// The service's own tables in the `service` catalog (materialized views `result_*`, uploaded
// datasets `dataset_*`), written by the engine for the views and uploads code, which asks for a
// copy or an ingest and never sees a connection, a SQL text or a file path. Files (a stored
// result, an upload's CSV) are read by the engine's files instance and their rows streamed into
// the `service` catalog of the instance that runs users' SQL, which reads no file (engine.ts).
//
// Atomic swap: new rows first go into a staging table (the slow part, outside any lock a reader
// could notice), then one transaction drops the old table and renames the staging one. DuckDB's
// catalog is MVCC: a query that started before the commit keeps reading the old table to its
// end, one that starts after reads the new one, none sees a mix or a missing table. A failure
// before the commit leaves the old table untouched.
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../../sql.ts';
import { uniqueColumnNames } from '../results/columnNames.ts';
import { ingestCsvSql } from './csvIngest.ts';
import { copyRows } from '../results/copyRows.ts';
import type { IngestedCsv, ServiceTables, UploadTableColumn } from '../types.ts';
import { clearTableSql, createTableSql, insertRowsSql } from './uploadTables.ts';
import { teamTableBytes, type TeamTableSizes } from './teamStorage.ts';

/** The part of a DuckDB connection the table code uses. */
export type TableConnection = Pick<DuckDBConnection, 'run' | 'runAndReadAll'>;

/** What the tables need of the engine's instances: trusted connections and where files live. */
export interface TableHost {
  /**
   * Runs `fn` on a connection of the instance (catalog `service` attached), closed afterwards:
   * the team's own instance when teams are walled apart (teams/teamInstances.ts).
   */
  withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>, team?: string): Promise<T>;
  /** Told after each write of a team's tables (snapshots of them are stale: teams/sharedObjects.ts). */
  changed?(team: string): void;
  /** Runs `fn` on a connection of the files instance (the only one that reads the results directory). */
  withFiles<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T>;
  /** The DuckDB file of a stored result: table `result` with columns c0..cN-1, rows in result order. */
  resultPath(resultId: string): string;
  /** A path for a temporary file the files instance may read (in the results directory). */
  scratchPath(name: string): string;
  /** Keeps each team's teamTableBytes between the SQL that changes them (none: measured each time). */
  tableSizes?: TeamTableSizes;
}

/** Names of scratch files in the results directory (a result id cannot contain '~'). */
export const SCRATCH_PREFIX = 'scratch~';

/**
 * Prefixes of the service's own work tables in `service.<team>`: a refresh copies into
 * `__staging_<view>_<hex>`, an upload into `__upload_raw_<hex>` and `__upload_<name>_<hex>`, each
 * renamed or dropped before the operation answers. User SQL cannot create such names
 * (accessPolicy.ts), so any found at start were left by a crash and are dropped.
 */
export const STAGING_PREFIXES = ['__staging_', '__upload_'] as const;

/** ServiceTables on the engine's DuckDB instance. */
export class DuckDbServiceTables implements ServiceTables {
  readonly #host: TableHost;

  constructor(host: TableHost) {
    this.#host = host;
  }

  async replaceFromResult(team: string, name: string, resultId: string, columnNames: readonly string[]): Promise<void> {
    if (columnNames.length === 0) throw new Error('the query returns no columns, so there is no table to store');
    const schema = `service.${sqlIdent(team)}`;
    const suffix = randomBytes(4).toString('hex');
    const stagingName = `__staging_${name}_${suffix}`;
    const staging = `${schema}.${sqlIdent(stagingName)}`;
    const alias = sqlIdent(`v_${resultId}_${suffix}`);
    const path = this.#host.resultPath(resultId);
    await this.#host.withConnection(async (conn) => {
      await conn.run(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      try {
        await this.#host.withFiles(async (files) => {
          await files.run(`ATTACH ${sqlString(path)} AS ${alias} (READ_ONLY)`);
          try {
            // A plain scan streams the rows in the order they were stored (preserve_insertion_order).
            await copyInto(conn, files, team, stagingName, `SELECT * FROM ${alias}.main.result`, uniqueColumnNames(columnNames));
          } finally {
            await files.run(`DETACH ${alias}`);
          }
        });
      } catch (err) {
        await conn.run(`DROP TABLE IF EXISTS ${staging}`).catch(() => undefined);
        throw err;
      }
      await swapTable(conn, team, stagingName, name);
    }, team);
    this.#host.changed?.(team);
  }

  async ingestCsv(team: string, name: string, csv: string, columnNames: readonly string[]): Promise<IngestedCsv> {
    const suffix = randomBytes(4).toString('hex');
    const file = this.#host.scratchPath(`upload-${suffix}.csv`);
    await writeFile(file, csv);
    try {
      return await this.#host.withConnection(async (conn) => {
        const stagingName = `__upload_${name}_${suffix}`;
        const copyIn = (select: string, table: string): Promise<void> => this.#host.withFiles((files) => copyInto(conn, files, team, table, select));
        const ingested = await ingestCsvSql(conn, { team, file, columnNames, rawName: `__upload_raw_${suffix}`, stagingName, copyIn });
        await swapTable(conn, team, stagingName, name);
        return ingested;
      }, team);
    } finally {
      await rm(file, { force: true });
      this.#host.changed?.(team);
    }
  }

  async createTable(team: string, name: string, columns: readonly UploadTableColumn[]): Promise<void> {
    await this.#host.withConnection((conn) => createTableSql(conn, team, name, columns), team);
    this.#host.changed?.(team);
  }

  async insertRows(team: string, name: string, columns: readonly UploadTableColumn[], rows: { format: 'csv' | 'ndjson'; data: Uint8Array; header?: readonly string[] }): Promise<{ rowsWritten: number }> {
    const written = this.#host.withConnection((conn) =>
      insertRowsSql(conn, {
        team,
        name,
        columns,
        ...rows,
        scratchPath: (n) => this.#host.scratchPath(n),
        copyIn: (select, work) => this.#host.withFiles((files) => copyInto(conn, files, team, work, select)),
      }),
      team,
    );
    return written.finally(() => this.#host.changed?.(team));
  }

  async clearTable(team: string, name: string): Promise<void> {
    await this.#host.withConnection((conn) => clearTableSql(conn, team, name), team).finally(() => this.#host.changed?.(team));
  }

  async rename(team: string, from: string, to: string): Promise<void> {
    await this.#host.withConnection(async (conn) => {
      if (await exists(conn, team, from)) await conn.run(`ALTER TABLE service.${sqlIdent(team)}.${sqlIdent(from)} RENAME TO ${sqlIdent(to)}`);
    }, team);
    this.#host.changed?.(team);
  }

  async drop(team: string, name: string): Promise<void> {
    await this.#host.withConnection(async (conn) => {
      await conn.run(`DROP TABLE IF EXISTS service.${sqlIdent(team)}.${sqlIdent(name)}`);
    }, team);
    this.#host.changed?.(team);
  }

  async exists(team: string, name: string): Promise<boolean> {
    return this.#host.withConnection((conn) => exists(conn, team, name), team);
  }

  teamTableBytes(team: string): Promise<number> {
    const measure = (): Promise<number> => this.#host.withConnection((conn) => teamTableBytes(conn, team), team);
    return this.#host.tableSizes === undefined ? measure() : this.#host.tableSizes.bytes(team, measure);
  }

  async dropStagingLeftovers(): Promise<string[]> {
    return this.#host.withConnection(async (conn) => {
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
}

/**
 * Runs `select` on the files instance and streams its rows into the new table
 * `service.<team>.<table>` through `conn`, its columns named `names` (default: the select's).
 */
async function copyInto(conn: DuckDBConnection, files: DuckDBConnection, team: string, table: string, select: string, names?: readonly string[]): Promise<void> {
  const prepared = await files.prepare(select);
  const types = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnType(i));
  const columns = names ?? Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnName(i));
  await copyRows(conn, { catalog: 'service', schema: team, table }, columns, types, await prepared.stream());
}

async function exists(conn: TableConnection, team: string, name: string): Promise<boolean> {
  const r = await conn.runAndReadAll(
    `SELECT count(*) FROM duckdb_tables() WHERE database_name = 'service' AND schema_name = ${sqlString(team)} AND table_name = ${sqlString(name)}`,
  );
  return Number(r.getRowsJson()[0]?.[0]) > 0;
}

/**
 * Replaces `service.<team>.<name>` by the staging table in one transaction (dropping the staging
 * table on failure); see the header.
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
