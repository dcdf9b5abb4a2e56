// The result store: each result is its own DuckDB file <results>/<id>.duckdb holding `result`
// (columns c0..cN-1, so any column names work, duplicates included) and `meta` (ResultInfo as
// JSON). rowid is the row's ordinal, so `rowid BETWEEN a AND b` reads only the row groups of a
// page. A result is written under a .tmp name, checkpointed and renamed when complete, so a stored
// result is either whole or absent; dropping it is deleting its files. Leftovers of a crash
// (unfinished files, scratch files, half-written encodings) are removed at start.
import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError, type ResultInfo } from '../types.ts';
import { toEngineError } from '../duckdbError.ts';
import { sqlIdent, sqlString } from '../../sql.ts';
import { protocolTypeName } from '../typeNames.ts';
import { headerBytes, rowBytesSql, type StoredColumns } from '../pages/pageQuery.ts';
import { encodedDir, ENCODED_SUFFIX, ENCODING_SUFFIX, FILES, formatDir, STORED_FORMATS } from '../encoding/encodedResult.ts';
import { SCRATCH_PREFIX } from '../tables/serviceTables.ts';

const RESULT_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** A stored result attached for paging. */
export interface OpenResult {
  alias: string;
  info: ResultInfo;
  columns: StoredColumns;
}

export function checkResultId(id: string): void {
  if (!RESULT_ID.test(id)) {
    throw new EngineError('bad_request', `invalid result id "${id}": use 1-100 letters, digits, '_' or '-'`);
  }
}

export class ResultFiles {
  readonly dir: string;

  constructor(resultsDir: string) {
    this.dir = resultsDir;
  }

  path(id: string): string {
    return join(this.dir, `${id}.duckdb`);
  }

  tmpPath(id: string): string {
    return join(this.dir, `${id}.tmp.duckdb`);
  }

  has(id: string): boolean {
    return existsSync(this.path(id));
  }

  /**
   * A path inside the results directory, the only one the files instance reads files from.
   * Scratch files are named `SCRATCH_PREFIX<name>`, so those a crash left behind are removed at
   * start (removeIncomplete).
   */
  scratchPath(name: string): string {
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(name) || name.startsWith('.')) throw new EngineError('bad_request', `invalid scratch file name "${name}"`);
    return join(this.dir, `${SCRATCH_PREFIX}${name}`);
  }

  /** Removes a result being written (and its encoding being written). */
  async removeUnfinished(id: string): Promise<void> {
    const tmp = this.tmpPath(id);
    await rm(tmp, { force: true }).catch(() => undefined);
    await rm(encodedDir(this.dir, id).tmp, { recursive: true, force: true }).catch(() => undefined);
    await rm(`${tmp}.wal`, { force: true }).catch(() => undefined);
  }

  /** Removes a stored result and its encodings. */
  async remove(id: string): Promise<void> {
    await rm(this.path(id), { force: true });
    await rm(`${this.path(id)}.wal`, { force: true });
    const { dir, tmp } = encodedDir(this.dir, id);
    await rm(dir, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  }

  /** Attaches a stored result read-only on `conn` and reads its meta. */
  async attach(conn: DuckDBConnection, id: string): Promise<OpenResult> {
    const path = this.path(id);
    if (!existsSync(path)) throw new EngineError('not_found', `no stored result ${id}`);
    const alias = sqlIdent(`r_${id}`);
    await conn.run(`ATTACH IF NOT EXISTS ${sqlString(path)} AS ${alias} (READ_ONLY)`);
    const meta = await conn.runAndReadAll(`SELECT info FROM ${alias}.main.meta`);
    const info = parseInfo(String(meta.getRowsJson()[0]?.[0]));
    return { alias, info, columns: await storedColumns(conn, `${alias}.main.result`, info) };
  }

  /** Bytes on disk of each stored result: its file (and WAL) and its encoding directory, by id. */
  async sizes(): Promise<Map<string, number>> {
    const sizes = new Map<string, number>();
    const add = (id: string, n: number): void => void sizes.set(id, (sizes.get(id) ?? 0) + n);
    for (const entry of await readdir(this.dir, { withFileTypes: true })) {
      const name = entry.name;
      const id = /^([A-Za-z0-9_-]{1,100})\.(duckdb|duckdb\.wal|enc)$/.exec(name)?.[1];
      if (id === undefined) continue;
      add(id, entry.isDirectory() ? await treeBytes(join(this.dir, name)) : await fileBytes(join(this.dir, name)));
    }
    return sizes;
  }

  /** Leftovers of executions (and scratch files of uploads) that were in progress when the process died. */
  static async removeIncomplete(resultsDir: string): Promise<void> {
    const names = await readdir(resultsDir);
    const stored = new Set(names.filter((n) => n.endsWith('.duckdb') && !n.includes('.tmp.duckdb')).map((n) => n.slice(0, -'.duckdb'.length)));
    for (const name of names) {
      if (name.includes('.tmp.duckdb') || name.startsWith(SCRATCH_PREFIX)) await rm(join(resultsDir, name), { force: true });
      // Half-written encodings, and encodings whose result was being dropped.
      const orphan = name.endsWith(ENCODED_SUFFIX) && !stored.has(name.slice(0, -ENCODED_SUFFIX.length));
      if (name.endsWith(ENCODING_SUFFIX) || orphan) await rm(join(resultsDir, name), { recursive: true, force: true });
      else if (name.endsWith(ENCODED_SUFFIX)) await removeUnfinishedFormats(join(resultsDir, name));
    }
  }
}

/**
 * In a result's encoding directory, the formats an encoder was writing (no info.json: written again
 * when next read). A directory in the layout of an older version (one index for JSON and CSV at its
 * top) is removed whole: its formats are encoded again as they are read.
 */
async function removeUnfinishedFormats(encoded: string): Promise<void> {
  if (existsSync(join(encoded, FILES.index))) {
    await rm(encoded, { recursive: true, force: true });
    return;
  }
  for (const format of STORED_FORMATS) {
    const dir = formatDir(encoded, format);
    if (existsSync(dir) && !existsSync(join(dir, FILES.info))) await rm(dir, { recursive: true, force: true });
  }
}

/** A file's size; 0 when it went meanwhile (a result dropped while counted). */
async function fileBytes(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

/** The bytes of the files under a directory. */
async function treeBytes(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  let total = 0;
  for (const e of entries) if (e.isFile()) total += await fileBytes(join(e.parentPath, e.name));
  return total;
}

/**
 * Writes the result file's WAL into the file. DETACH alone skips its checkpoint while another
 * connection has a transaction open on the database (catalog scans such as duckdb_schemas() of
 * a concurrent execution open one on every attached database), and the file is renamed without
 * its WAL: the stored result would lack rows or its `meta`. So: checkpoint until the WAL is gone.
 */
export async function checkpoint(conn: DuckDBConnection, alias: string, path: string): Promise<void> {
  for (let i = 0; i < 200; i += 1) {
    try {
      await conn.run(`CHECKPOINT ${alias}`);
    } catch (err) {
      const mapped = toEngineError(err);
      if (mapped.kind === 'canceled') throw mapped;
    }
    if (!existsSync(`${path}.wal`)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new EngineError('internal', `could not checkpoint the stored result ${alias}`);
}

/** A late interrupt (issued just before the repeating stopped) may still hit the first try. */
export async function detachRetrying(conn: DuckDBConnection, alias: string): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    try {
      await conn.run(`DETACH DATABASE IF EXISTS ${alias}`);
      return;
    } catch {
      // retried
    }
  }
}

/** Counts rows and bytes, truncates to maxResultBytes, and writes `meta`. */
export async function finishResult(conn: DuckDBConnection, alias: string, names: string[], maxResultBytes?: number, chunkRows?: (columnCount: number) => number): Promise<ResultInfo> {
  const info = names.length === 0 ? { columnNames: [], columnTypes: [], rowCount: 0, bytes: 0, truncated: false } : await measure(conn, alias, names, maxResultBytes, chunkRows?.(names.length));
  await conn.run(`CREATE TABLE ${alias}.main.meta AS SELECT ${sqlString(JSON.stringify(info))} AS info`);
  return info;
}

async function measure(conn: DuckDBConnection, alias: string, names: string[], maxResultBytes: number | undefined, chunkRows: number | undefined): Promise<ResultInfo> {
  const table = `${alias}.main.result`;
  const typesReader = await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`);
  const types = typesReader.columnTypes();
  const columns: StoredColumns = { table, names, protocolTypes: types.map(protocolTypeName), types, rowCount: 0 };
  const cols = names.map((_, i) => i);
  const header = headerBytes(names);
  let totals;
  if (chunkRows === undefined) totals = await conn.runAndReadAll(`SELECT count(*)::BIGINT AS n, coalesce(sum(${rowBytesSql(cols, columns)}), 0)::BIGINT AS b FROM ${table}`);
  else {
    // The same pass sums each Arrow chunk's rows (encoding/arrowEncoding.ts): the Arrow encoding
    // then needs no pass of its own over the rows' text.
    const chunks = chunkBytesTable(table);
    await conn.run(
      `CREATE TABLE ${chunks} AS SELECT (rowid // ${chunkRows})::BIGINT AS k, ${chunkRows}::BIGINT AS chunk_rows, count(*)::BIGINT AS n, sum(${rowBytesSql(cols, columns)})::BIGINT AS b FROM ${table} GROUP BY k`,
    );
    totals = await conn.runAndReadAll(`SELECT coalesce(sum(n), 0)::BIGINT, coalesce(sum(b), 0)::BIGINT FROM ${chunks}`);
  }
  let rowCount = Number(totals.getRowsJson()[0]![0]);
  let bytes = header + Number(totals.getRowsJson()[0]![1]);
  let truncated = false;
  if (maxResultBytes !== undefined && bytes > maxResultBytes) {
    const budget = maxResultBytes - header;
    const cut = await conn.runAndReadAll(
      `SELECT count(*)::BIGINT AS n, coalesce(max(cs), 0)::BIGINT AS b FROM (SELECT sum(${rowBytesSql(cols, columns)}) OVER (ORDER BY rowid ROWS UNBOUNDED PRECEDING) AS cs FROM ${table}) WHERE cs <= ${Math.max(0, budget)}`,
    );
    rowCount = Number(cut.getRowsJson()[0]![0]);
    bytes = header + Number(cut.getRowsJson()[0]![1]);
    truncated = true;
    await conn.run(`DELETE FROM ${table} WHERE rowid >= ${rowCount}`);
    // Its chunks' sums no longer hold: the Arrow encoding sums each chunk itself.
    if (chunkRows !== undefined) await conn.run(`DROP TABLE ${chunkBytesTable(table)}`);
  }
  return { columnNames: names, columnTypes: columns.protocolTypes, rowCount, bytes, truncated };
}

/** Beside a stored result's table: the result_set_bytes of each chunk of its rows (k, chunk_rows, n, b), when written. */
export function chunkBytesTable(resultTable: string): string {
  return resultTable.replace(/\.result$/, '.chunk_bytes');
}

/** The stored table's columns, as page queries and encoders take them. */
export async function storedColumns(conn: DuckDBConnection, table: string, info: ResultInfo): Promise<StoredColumns> {
  const types = info.columnNames.length > 0 ? (await conn.runAndReadAll(`SELECT * FROM ${table} LIMIT 0`)).columnTypes() : [];
  return { table, names: info.columnNames, protocolTypes: info.columnTypes, types, rowCount: info.rowCount };
}

function parseInfo(text: string): ResultInfo {
  const v: unknown = JSON.parse(text);
  const rec = v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  const strings = (x: unknown): string[] => (Array.isArray(x) ? x.map(String) : []);
  return {
    columnNames: strings(rec['columnNames']),
    columnTypes: strings(rec['columnTypes']),
    rowCount: Number(rec['rowCount'] ?? 0),
    bytes: Number(rec['bytes'] ?? 0),
    truncated: rec['truncated'] === true,
  };
}
