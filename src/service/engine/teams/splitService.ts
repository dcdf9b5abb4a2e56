// The first start with teams walled apart (teamInstances.ts) on a data folder whose teams' tables
// live in one `service.duckdb`: each schema `<team>` of it is copied into `teams/<team>.duckdb`
// (tables by their own CREATE text, so types, NOT NULL and keys survive; then their rows; then
// views, which are stored as text), and `service.duckdb` is renamed `service.duckdb.split` once
// every team's file is written. A crash before the rename leaves the source whole: the next
// start writes the teams' files again from it.
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../../sql.ts';
import { teamFile } from './teamInstances.ts';

const SOURCE = 'split_source';

/**
 * Splits `<dataDir>/service.duckdb` into the teams' files, when it exists. Returns what a user
 * should hear of: the split, and views that could not be made again in their team's file (a view
 * over another team's object: that object is not in the file), whose text is kept in
 * `teams/<team>.views-not-split.sql`.
 */
export async function splitServiceDatabase(conn: DuckDBConnection, dataDir: string, teamsDir: string): Promise<string[]> {
  const file = join(dataDir, 'service.duckdb');
  if (!existsSync(file)) return [];
  const notices: string[] = [];
  await mkdir(teamsDir, { recursive: true, mode: 0o700 });
  const home = String((await conn.runAndReadAll('SELECT current_database()')).getRowsJson()[0]![0]);
  await conn.run(`ATTACH ${sqlString(file)} AS ${SOURCE} (READ_ONLY)`);
  try {
    const schemas = await conn.runAndReadAll(
      `SELECT schema_name FROM duckdb_schemas() WHERE database_name = '${SOURCE}' AND schema_name NOT IN ('main', 'information_schema', 'pg_catalog') ORDER BY ALL`,
    );
    for (const [schema] of schemas.getRowsJson()) {
      const team = String(schema);
      const target = teamFile(teamsDir, team);
      const unmade = await splitTeam(conn, team, target);
      if (unmade.length > 0) {
        const kept = target.replace(/\.duckdb$/, '.views-not-split.sql');
        await writeFile(kept, `${unmade.join('\n')}\n`, { mode: 0o600 });
        notices.push(`${unmade.length} view(s) of service.${team} read other teams' objects and could not be made again in the team's own file; their text is in ${kept}`);
      }
    }
  } finally {
    await conn.run(`USE ${sqlIdent(home)}`);
    await conn.run(`DETACH DATABASE IF EXISTS ${SOURCE}`);
  }
  await rename(file, `${file}.split`);
  if (existsSync(`${file}.wal`)) await rename(`${file}.wal`, `${file}.split.wal`);
  notices.unshift(`the teams' tables were split from service.duckdb into one file per team (teams/); the old file is kept as service.duckdb.split`);
  return notices;
}

/** Returns the views that could not be made again. */
async function splitTeam(conn: DuckDBConnection, team: string, target: string): Promise<string[]> {
  await rm(target, { force: true });
  await rm(`${target}.wal`, { force: true });
  await conn.run(`ATTACH ${sqlString(target)} AS service`);
  try {
    await conn.run('USE service');
    await conn.run(`CREATE SCHEMA service.${sqlIdent(team)}`);
    const where = `database_name = '${SOURCE}' AND schema_name = ${sqlString(team)}`;
    const tables = await conn.runAndReadAll(`SELECT table_name, sql FROM duckdb_tables() WHERE ${where} ORDER BY ALL`);
    for (const [table, sql] of tables.getRowsJson()) {
      await conn.run(String(sql));
      await conn.run(`INSERT INTO service.${sqlIdent(team)}.${sqlIdent(String(table))} SELECT * FROM ${SOURCE}.${sqlIdent(team)}.${sqlIdent(String(table))}`);
    }
    const views = (await conn.runAndReadAll(`SELECT sql FROM duckdb_views() WHERE ${where} AND NOT internal ORDER BY ALL`)).getRowsJson().map((r) => String(r[0]));
    const unmade = await createViews(conn, views);
    await conn.run('CHECKPOINT service');
    return unmade;
  } finally {
    await conn.run(`USE ${SOURCE}`).catch(() => undefined);
    await conn.run('DETACH DATABASE IF EXISTS service');
  }
}

/**
 * Views over views are made in whatever order their dependencies allow (DuckDB binds a view when
 * it is made); returns those that could not be made.
 */
async function createViews(conn: DuckDBConnection, views: string[]): Promise<string[]> {
  let left = views;
  while (left.length > 0) {
    const failed: string[] = [];
    for (const sql of left) await conn.run(sql).catch(() => failed.push(sql));
    if (failed.length === left.length) return failed;
    left = failed;
  }
  return [];
}
