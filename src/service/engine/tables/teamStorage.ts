// What a team's own tables hold, in the figure the service counts storage in: the bytes of the
// rows' CSV text (result_set_bytes of protocol.md, as for a materialized view's result; an
// upload counts the bytes of the CSV it sent). Tables the service writes itself (materialized
// views, datasets, their work tables) are counted by their own records, not here.
import { sqlIdent, sqlString } from '../../sql.ts';
import { headerBytes, rowBytesSql, type StoredColumns } from '../pages/pageQuery.ts';
import type { TableConnection } from './serviceTables.ts';
import { protocolTypeName } from '../typeNames.ts';

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

/**
 * teamTableBytes per team, kept so that /v1/usage and the quota checks of views and uploads do
 * not read every table of a team each time. Exact by construction: a figure is kept only when no
 * SQL changing the team's tables ran while it was measured; SQL that changes them drops it when it
 * starts, and when it ends either leaves the figure its storage quota measured inside its own
 * transaction (just before committing: exact when no other such SQL of the team overlapped it) or
 * leaves it unknown, measured again at the next read.
 */
export class TeamTableSizes {
  readonly #known = new Map<string, number>();
  /** SQL changing the team's tables now running. */
  readonly #writers = new Map<string, number>();
  /** Bumped whenever such SQL starts or ends: a measurement that saw it move is not kept. */
  readonly #version = new Map<string, number>();

  #bump(key: string): number {
    const v = (this.#version.get(key) ?? 0) + 1;
    this.#version.set(key, v);
    this.#known.delete(key);
    return v;
  }

  /** The team's figure: kept, or measured by `measure` (and kept when nothing wrote meanwhile). */
  async bytes(team: string, measure: () => Promise<number>): Promise<number> {
    const key = team.toLowerCase();
    const known = this.#known.get(key);
    if (known !== undefined) return known;
    const before = this.#version.get(key) ?? 0;
    const measured = await measure();
    if ((this.#writers.get(key) ?? 0) === 0 && (this.#version.get(key) ?? 0) === before) this.#known.set(key, measured);
    return measured;
  }

  /**
   * SQL that creates, fills or drops tables of the team starts; call the returned function once it
   * has ended, with the team's figure measured inside its committed transaction when there is one.
   */
  beginWrite(team: string): (committedBytes?: number) => void {
    const key = team.toLowerCase();
    this.#writers.set(key, (this.#writers.get(key) ?? 0) + 1);
    const started = this.#bump(key);
    let ended = false;
    return (committedBytes) => {
      if (ended) return;
      ended = true;
      const alone = (this.#version.get(key) ?? 0) === started;
      this.#writers.set(key, (this.#writers.get(key) ?? 1) - 1);
      this.#bump(key);
      if (alone && committedBytes !== undefined && this.#writers.get(key) === 0) this.#known.set(key, committedBytes);
    };
  }
}
