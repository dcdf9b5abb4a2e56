// Tables created through the uploads API with a schema, then filled by inserts: CREATE TABLE with
// the declared types, and an insert that reads the rows (CSV or NDJSON, on the files instance, the
// one that reads files) as text into a work table, then appends them in ONE statement casting
// each value to its column's type: a bad value or a NULL in a NOT NULL column fails it, and the
// table is as it was.
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { sqlIdent, sqlString } from '../../sql.ts';
import { parseDuckDbError } from '../duckdbError.ts';
import { EngineError, type UploadTableColumn } from '../types.ts';
import { csvError } from './csvIngest.ts';
import type { TableConnection } from './serviceTables.ts';

/** DuckDB's type of each upload type (int256 and uint256 hold 128 bits here: larger values fail the insert). */
const DUCKDB_TYPES: Record<string, string> = {
  varchar: 'VARCHAR',
  varbinary: 'BLOB',
  uint256: 'UHUGEINT',
  int256: 'HUGEINT',
  bigint: 'BIGINT',
  integer: 'INTEGER',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMP',
  date: 'DATE',
};

function duckType(type: string): string {
  const t = DUCKDB_TYPES[type];
  if (t === undefined) throw new EngineError('bad_request', `unknown column type "${type}" (known: ${Object.keys(DUCKDB_TYPES).join(', ')})`);
  return t;
}

const table = (team: string, name: string): string => `service.${sqlIdent(team)}.${sqlIdent(name)}`;

export async function createTableSql(conn: TableConnection, team: string, name: string, columns: readonly UploadTableColumn[]): Promise<void> {
  await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(team)}`);
  const defs = columns.map((c) => `${sqlIdent(c.name)} ${duckType(c.type)}${c.nullable ? '' : ' NOT NULL'}`).join(', ');
  await conn.run(`CREATE TABLE ${table(team, name)} (${defs})`);
}

export interface InsertPlan {
  team: string;
  name: string;
  columns: readonly UploadTableColumn[];
  format: 'csv' | 'ndjson';
  /** CSV: the header's names in file order (checked against the columns by the caller). */
  header?: readonly string[];
  data: Uint8Array;
  /** A path in the directory the files instance may read. */
  scratchPath(name: string): string;
  /** Runs `select` on the files instance and streams its rows into the new table `service.<team>.<work>`. */
  copyIn(select: string, work: string): Promise<void>;
}

export async function insertRowsSql(conn: TableConnection, plan: InsertPlan): Promise<{ rowsWritten: number }> {
  const suffix = randomBytes(4).toString('hex');
  const file = plan.scratchPath(`insert-${suffix}.csv`);
  const work = `__upload_insert_${suffix}`;
  // NDJSON becomes CSV text here: read_json's buffers would take half the files instance's memory.
  const csv = plan.format === 'csv' ? plan.data : Buffer.from(ndjsonAsCsv(plan.data, plan.columns));
  await writeFile(file, csv);
  // DuckDB's CSV buffer is 32 MiB by default, half the files instance's memory: a body needs no more than its size.
  const bufferSize = Math.min(32 * 1024 * 1024, Math.max(1024 * 1024, csv.byteLength + 1024));
  try {
    const names = plan.format === 'csv' ? (plan.header ?? plan.columns.map((c) => c.name)) : plan.columns.map((c) => c.name);
    const asText = `{${names.map((n) => `${sqlString(n)}: 'VARCHAR'`).join(', ')}}`;
    // An empty unquoted field is NULL, a quoted one ("") the empty string.
    const read = `SELECT * FROM read_csv(${sqlString(file)}, header = true, auto_detect = false, columns = ${asText}, delim = ',', quote = '"', escape = '"', strict_mode = true, null_padding = false, ignore_errors = false, allow_quoted_nulls = false, buffer_size = ${bufferSize})`;
    try {
      await plan.copyIn(read, work);
    } catch (err) {
      throw asBadRequest(csvError(err));
    }
    const cols = plan.columns.map((c) => sqlIdent(c.name)).join(', ');
    const values = plan.columns.map((c) => `CAST(${sqlIdent(c.name)} AS ${duckType(c.type)})`).join(', ');
    try {
      const r = await conn.runAndReadAll(`INSERT INTO ${table(plan.team, plan.name)} (${cols}) SELECT ${values} FROM ${table(plan.team, work)}`);
      return { rowsWritten: Number(r.getRowsJson()[0]?.[0] ?? 0) };
    } catch (err) {
      throw asBadRequest(err, 'no row was inserted: ');
    }
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${table(plan.team, work)}`).catch(() => undefined);
    await rm(file, { force: true });
  }
}

/**
 * NDJSON rows (one JSON object a line; blank lines skipped) as CSV text with the columns as its
 * header: a string as is, a number as its JSON text, true/false, null or a missing key as NULL
 * (an empty unquoted field), an array or object as its JSON text. A key the table lacks is refused.
 */
export function ndjsonAsCsv(data: Uint8Array, columns: readonly UploadTableColumn[]): string {
  const quote = (s: string): string => `"${s.replaceAll('"', '""')}"`;
  const field = (v: unknown): string => (v === null || v === undefined ? '' : quote(typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)));
  const known = new Set(columns.map((c) => c.name));
  const lines = [columns.map((c) => quote(c.name)).join(',')];
  Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    .toString('utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch (err) {
        throw new EngineError('bad_request', `NDJSON line ${i + 1}: not JSON (${(err as Error).message})`);
      }
      if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new EngineError('bad_request', `NDJSON line ${i + 1}: expected a JSON object (one row)`);
      const extra = Object.keys(row).filter((k) => !known.has(k));
      if (extra.length > 0) throw new EngineError('bad_request', `NDJSON line ${i + 1}: unknown column${extra.length > 1 ? 's' : ''} ${extra.map((k) => `"${k}"`).join(', ')} (the table has ${[...known].join(', ')})`);
      lines.push(columns.map((c) => field((row as Record<string, unknown>)[c.name])).join(','));
    });
  return `${lines.join('\n')}\n`;
}

export async function clearTableSql(conn: TableConnection, team: string, name: string): Promise<void> {
  await conn.run(`DELETE FROM ${table(team, name)}`);
}

/** DuckDB's errors about the rows themselves: the caller's to fix (400); any other (memory, I/O) is the service's. */
const ROW_ERRORS = new Set(['invalid input', 'conversion', 'constraint', 'invalid']);

function asBadRequest(err: unknown, prefix = ''): unknown {
  if (err instanceof EngineError) return err;
  const { type, message } = parseDuckDbError(err);
  if (!ROW_ERRORS.has(type.toLowerCase())) return err;
  return new EngineError('bad_request', `${prefix}${message.split('\n')[0]}`, { cause: err });
}
