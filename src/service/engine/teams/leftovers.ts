// What a crash left in the teams' files (teamInstances.ts), removed at start before any team's
// instance opens: the work tables of an upload or a refresh cut short (serviceTables.ts
// STAGING_PREFIXES), and the views an earlier run made over other teams' snapshots, whose
// catalogs went with that run (sharedObjects.ts).
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../../sql.ts';

const ALIAS = 'team_leftovers';

/** Returns the tables dropped, as `service.<schema>.<table>`. */
export async function dropTeamLeftovers(conn: DuckDBConnection, teamsDir: string, stagingPrefixes: readonly string[]): Promise<string[]> {
  const files = (await readdir(teamsDir).catch(() => [])).filter((f) => f.endsWith('.duckdb')).sort();
  const dropped: string[] = [];
  const like = stagingPrefixes.map((p) => `starts_with(table_name, ${sqlString(p)})`).join(' OR ');
  for (const file of files) {
    const team = file.slice(0, -'.duckdb'.length);
    await conn.run(`ATTACH ${sqlString(join(teamsDir, file))} AS ${ALIAS}`);
    try {
      const others = await conn.runAndReadAll(
        `SELECT schema_name FROM duckdb_schemas() WHERE database_name = '${ALIAS}' AND schema_name NOT IN ('main', 'information_schema', 'pg_catalog') AND lower(schema_name) <> ${sqlString(team)}`,
      );
      for (const [schema] of others.getRowsJson()) await conn.run(`DROP SCHEMA IF EXISTS ${ALIAS}.${sqlIdent(String(schema))} CASCADE`);
      const left = await conn.runAndReadAll(`SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = '${ALIAS}' AND (${like}) ORDER BY ALL`);
      for (const [schema, table] of left.getRowsJson()) {
        await conn.run(`DROP TABLE IF EXISTS ${ALIAS}.${sqlIdent(String(schema))}.${sqlIdent(String(table))}`);
        dropped.push(`service.${String(schema)}.${String(table)}`);
      }
      // On disk before the team's instance opens the file (another instance of this process).
      await conn.run(`CHECKPOINT ${ALIAS}`);
    } finally {
      await conn.run(`DETACH ${ALIAS}`);
    }
  }
  return dropped;
}
