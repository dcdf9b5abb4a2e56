// CSV text read into a table by DuckDB in strict mode with a fixed dialect (comma, double quotes,
// header) and every column as text, so a malformed file fails with the line DuckDB stopped at;
// then each column gets the narrowest type all its values fit.
import { sqlIdent, sqlString } from '../../sql.ts';
import type { TableConnection } from './serviceTables.ts';
import { EngineError, type IngestedCsv } from '../types.ts';

/** Narrowest first: a column gets the first type every one of its values casts to. */
const CANDIDATE_TYPES = ['BIGINT', 'DOUBLE', 'BOOLEAN', 'DATE', 'TIMESTAMP'] as const;
const LITERAL: Record<string, string | undefined> = { BIGINT: '[+-]?[0-9]+', DATE: '[0-9]{4}-[0-9]{2}-[0-9]{2}' };

export interface CsvIngestPlan {
  team: string;
  /** The CSV file (in the directory the files instance may read). */
  file: string;
  /** The header's names, already checked (non-empty, unique ignoring case). */
  columnNames: readonly string[];
  /** Work tables in `service.<team>`: the text as read, and the typed table left for the swap. */
  rawName: string;
  stagingName: string;
  /**
   * Runs `select` where `file` is readable (the files instance: the instance of `conn` reads no
   * file) and streams its rows into the new table `service.<team>.<table>`.
   */
  copyIn(select: string, table: string): Promise<void>;
}

/**
 * Reads the file into `service.<team>.<stagingName>` with inferred types; the raw text table is
 * dropped whatever happens, the staging table too when this fails. A malformed file is
 * EngineError 'bad_request' naming the line.
 */
export async function ingestCsvSql(conn: TableConnection, plan: CsvIngestPlan): Promise<IngestedCsv> {
  const schema = `service.${sqlIdent(plan.team)}`;
  const raw = `${schema}.${sqlIdent(plan.rawName)}`;
  const staging = `${schema}.${sqlIdent(plan.stagingName)}`;
  const names = plan.columnNames;
  await conn.run(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  const columns = `{${names.map((n) => `${sqlString(n)}: 'VARCHAR'`).join(', ')}}`;
  try {
    try {
      await plan.copyIn(
        `SELECT * FROM read_csv(${sqlString(plan.file)}, header = true, auto_detect = false, columns = ${columns}, delim = ',', quote = '"', escape = '"', strict_mode = true, null_padding = false, ignore_errors = false)`,
        plan.rawName,
      );
    } catch (err) {
      throw csvError(err);
    }
    const types = await inferTypes(conn, raw, names);
    const select = names.map((n, i) => (types[i] === 'VARCHAR' ? sqlIdent(n) : `CAST(${sqlIdent(n)} AS ${types[i]}) AS ${sqlIdent(n)}`)).join(', ');
    await conn.run(`CREATE TABLE ${staging} AS SELECT ${select} FROM ${raw}`);
    const count = await conn.runAndReadAll(`SELECT count(*) FROM ${staging}`);
    return { columns: names.map((n, i) => ({ name: n, type: types[i] as string })), rowCount: Number(count.getRowsJson()[0]?.[0]) };
  } catch (err) {
    await conn.run(`DROP TABLE IF EXISTS ${staging}`).catch(() => undefined);
    throw err;
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${raw}`).catch(() => undefined);
  }
}

async function inferTypes(conn: TableConnection, raw: string, names: readonly string[]): Promise<string[]> {
  const misfit = (col: string, t: string): string =>
    // DuckDB casts '1.5' to BIGINT by rounding and '2026-01-01 10:00' to DATE by cutting: those two
    // types also require the value's literal form, so nothing is lost.
    `(TRY_CAST(${col} AS ${t}) IS NULL${LITERAL[t] === undefined ? '' : ` OR NOT regexp_full_match(trim(${col}), '${LITERAL[t]}')`})`;
  const probes = names.flatMap((n) => CANDIDATE_TYPES.map((t) => `count(*) FILTER (WHERE ${sqlIdent(n)} IS NOT NULL AND ${misfit(sqlIdent(n), t)})`));
  const nonNull = names.map((n) => `count(${sqlIdent(n)})`);
  const row = (await conn.runAndReadAll(`SELECT ${[...probes, ...nonNull].join(', ')} FROM ${raw}`)).getRowsJson()[0] ?? [];
  return names.map((_, i) => {
    if (Number(row[probes.length + i]) === 0) return 'VARCHAR';
    const k = CANDIDATE_TYPES.findIndex((_, j) => Number(row[i * CANDIDATE_TYPES.length + j]) === 0);
    return k < 0 ? 'VARCHAR' : (CANDIDATE_TYPES[k] as string);
  });
}

/** DuckDB's "CSV Error on Line: N / Original Line: ... / reason / Possible fixes..." as one clear message. */
export function csvError(err: unknown): Error {
  let text = err instanceof Error ? err.message : String(err);
  if (text.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && 'exception_message' in parsed) text = String(parsed.exception_message);
    } catch {
      // not JSON after all: keep the text
    }
  }
  const line = /CSV Error on Line: (\d+)/.exec(text)?.[1];
  if (line === undefined) return err instanceof Error ? err : new Error(text);
  const original = /Original Line: ?(.*)/.exec(text)?.[1];
  const reason = text
    .split('\n')
    .slice(1)
    .filter((l) => !l.startsWith('Original Line'))
    .join(' ')
    .split('Possible fixes')[0]
    ?.replace(/\s+/g, ' ')
    .trim();
  const shown = original === undefined ? '' : ` (the line reads: ${original.length > 80 ? `${original.slice(0, 80)}...` : original})`;
  return new EngineError('bad_request', `CSV line ${line}: ${reason || 'malformed'}${shown}`, { cause: err });
}
