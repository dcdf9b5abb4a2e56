import { randomBytes } from 'node:crypto';
import { uniqueColumnNames } from '../engine/columnNames.ts';
import { sqlIdent, sqlString } from '../sql.ts';
import { KeyedMutex, swapTable, type TableHost } from './tableHost.ts';

/**
 * The tables behind materialized views: `service.<team>.result_<x>` in the engine's `service`
 * catalog.
 *
 * Atomic swap: the new rows are first copied from the stored result into a staging table (the slow
 * part, outside any lock a reader could notice), then one transaction drops the old table and
 * renames the staging one. DuckDB's catalog is MVCC: a query that started before the commit keeps
 * reading the old table to its end, one that starts after reads the new one, none sees a mix or
 * a missing table. A failure before the commit leaves the old table untouched.
 */
export class ViewTables {
  readonly #host: TableHost;
  readonly #lock = new KeyedMutex();

  constructor(host: TableHost) {
    this.#host = host;
  }

  /** Replaces the table with the stored result `resultId` (its column names given in order). */
  async replaceFromResult(team: string, name: string, resultId: string, columnNames: readonly string[]): Promise<void> {
    if (columnNames.length === 0) throw new Error('the query returns no columns, so there is no table to store');
    const schema = `service.${sqlIdent(team)}`;
    const suffix = randomBytes(4).toString('hex');
    const stagingName = `__staging_${name}_${suffix}`;
    const staging = `${schema}.${sqlIdent(stagingName)}`;
    const alias = sqlIdent(`v_${resultId}_${suffix}`);
    const select = uniqueColumnNames(columnNames)
      .map((n, i) => `c${i} AS ${sqlIdent(n)}`)
      .join(', ');
    await this.#lock.run(`${team}.${name}`, () =>
      this.#host.withConnection(async (conn) => {
        await conn.run(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        await conn.run(`ATTACH ${sqlString(this.#host.resultPath(resultId))} AS ${alias} (READ_ONLY)`);
        try {
          await conn.run(`CREATE TABLE ${staging} AS SELECT ${select} FROM ${alias}.main.result ORDER BY rowid`);
        } finally {
          await conn.run(`DETACH ${alias}`);
        }
        await swapTable(conn, team, stagingName, name);
      }),
    );
  }

  async rename(team: string, from: string, to: string): Promise<void> {
    const schema = `service.${sqlIdent(team)}`;
    await this.#lock.run(`${team}.${from}`, () =>
      this.#host.withConnection(async (conn) => {
        if (await exists(conn, team, from)) await conn.run(`ALTER TABLE ${schema}.${sqlIdent(from)} RENAME TO ${sqlIdent(to)}`);
      }),
    );
  }

  async drop(team: string, name: string): Promise<void> {
    await this.#lock.run(`${team}.${name}`, () =>
      this.#host.withConnection(async (conn) => {
        await conn.run(`DROP TABLE IF EXISTS service.${sqlIdent(team)}.${sqlIdent(name)}`);
      }),
    );
  }

  async exists(team: string, name: string): Promise<boolean> {
    return this.#host.withConnection((conn) => exists(conn, team, name));
  }
}

async function exists(conn: { runAndReadAll(sql: string): Promise<{ getRowsJson(): unknown[][] }> }, team: string, name: string): Promise<boolean> {
  const r = await conn.runAndReadAll(
    `SELECT count(*) FROM duckdb_tables() WHERE database_name = 'service' AND schema_name = ${sqlString(team)} AND table_name = ${sqlString(name)}`,
  );
  return Number(r.getRowsJson()[0]?.[0]) > 0;
}
