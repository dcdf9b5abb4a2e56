// What a team's own tables hold, in the figure the service counts storage in: the bytes of the
// rows' CSV text (result_set_bytes of protocol.md, as for a materialized view's result; an
// upload counts the bytes of the CSV it sent). Tables the service writes itself (materialized
// views, datasets, their work tables) are counted by their own records, not here.
import { sqlIdent, sqlString } from '../sql.ts';
import { headerBytes, rowBytesSql, type StoredColumns } from './pageQuery.ts';
import type { TableConnection } from './serviceTables.ts';
import { protocolTypeName } from './typeNames.ts';

/** Prefixes of the tables in `service.<team>` the service writes (accessPolicy.ts RESERVED_PREFIXES). */
const SERVICE_OWNED = ['result_', 'dataset_', '__staging_', '__upload_'];

/**
 * Bytes of the rows of every table user SQL created in `service.<team>`, as seen by `conn`
 * (inside a transaction: with its uncommitted writes). Reads each table once.
 */
export async function teamTableBytes(conn: TableConnection, team: string): Promise<number> {
  const owned = SERVICE_OWNED.map((p) => `starts_with(lower(table_name), ${sqlString(p)})`).join(' OR ');
  const found = await conn.runAndReadAll(
    `SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'service' AND lower(schema_name) = lower(${sqlString(team)}) AND NOT (${owned}) ORDER BY ALL`,
  );
  let total = 0;
  for (const [schema, name] of found.getRowsJson()) {
    const table = `service.${sqlIdent(String(schema))}.${sqlIdent(String(name))}`;
    const shape = await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`);
    const types = shape.columnTypes();
    if (types.length === 0) continue;
    const names = shape.columnNames();
    const columns: StoredColumns = { table, names, protocolTypes: types.map(protocolTypeName), types, rowCount: 0 };
    const cols = types.map((_, i) => i);
    const renamed = `(SELECT * FROM ${table}) AS t(${cols.map((i) => `c${i}`).join(', ')})`;
    const bytes = await conn.runAndReadAll(`SELECT coalesce(sum(${rowBytesSql(cols, columns)}), 0)::BIGINT FROM ${renamed}`);
    total += headerBytes(names) + Number(bytes.getRowsJson()[0]?.[0] ?? 0);
  }
  return total;
}
