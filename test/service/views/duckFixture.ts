// A DuckDB instance laid out as the engine lays it out: catalog `service` attached, stored results
// as dataDir/results/<id>.duckdb with table `result` (c0..cN-1), read by a second, in-memory
// instance as the engine's files instance reads them. Views and uploads tests run on it.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../src/service/sql.ts';
import { DuckDbServiceTables, SCRATCH_PREFIX, type TableHost } from '../../../src/service/engine/tables/serviceTables.ts';
import type { ServiceTables } from '../../../src/service/engine/types.ts';

export interface DuckFixture {
  dataDir: string;
  host: TableHost;
  /** The engine's table operations over this instance, as views and uploads get them. */
  tables: ServiceTables;
  instance: DuckDBInstance;
  /** Stores `SELECT ...` as result `id`, the way the engine does; returns its column names. */
  storeResult(id: string, select: string): Promise<string[]>;
  rows(sql: string): Promise<unknown[][]>;
  close(): Promise<void>;
}

export async function startDuck(): Promise<DuckFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-views-'));
  await mkdir(join(dataDir, 'results'), { recursive: true });
  const instance = await DuckDBInstance.create(join(dataDir, 'engine.duckdb'));
  const files = await DuckDBInstance.create(':memory:');
  const on = async <T>(inst: DuckDBInstance, fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> => {
    const conn = await inst.connect();
    try {
      return await fn(conn);
    } finally {
      conn.closeSync();
    }
  };
  const host: TableHost = {
    withConnection: (fn) => on(instance, fn),
    withFiles: (fn) => on(files, fn),
    resultPath: (id) => join(dataDir, 'results', `${id}.duckdb`),
    scratchPath: (name) => join(dataDir, 'results', `${SCRATCH_PREFIX}${name}`),
  };
  await host.withConnection((c) => c.run(`ATTACH ${sqlString(join(dataDir, 'service.duckdb'))} AS service`));
  return {
    dataDir,
    host,
    tables: new DuckDbServiceTables(host),
    instance,
    storeResult: (id, select) =>
      host.withConnection(async (c) => {
        const alias = `w_${id}`;
        await c.run(`ATTACH ${sqlString(host.resultPath(id))} AS ${alias}`);
        const probe = await c.runAndReadAll(`SELECT * FROM (${select}) LIMIT 0`);
        const names = probe.columnNames();
        await c.run(`CREATE TABLE ${alias}.main.result AS SELECT * FROM (${select}) AS t(${names.map((_, i) => `c${i}`).join(', ')})`);
        await c.run(`DETACH ${alias}`);
        return names;
      }),
    rows: (sql) => host.withConnection(async (c) => (await c.runAndReadAll(sql)).getRowsJson()),
    async close() {
      files.closeSync();
      instance.closeSync();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
