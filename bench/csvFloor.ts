// The floor of any export that reads CSV pages with DuckDB: the same CSV pages the native export
// reads (in zstd, as the service sends them), already on disk, turned into zstd Parquet by one
// DuckDB statement with the plainest typed read (no checks, no `<nil>`, each column parsed as its
// type; the zoned timestamp's ` UTC` cut as the native path cuts it). Fetching, staging and
// storing are not in it: what stays is DuckDB's own reading of the text, which no reader of these
// pages goes below. For bench/wire.ts, which sets it beside `COPY` of the same rows from a table.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { request } from 'undici';

export interface CsvFloor {
  readonly threads: number;
  readonly ms: number;
  readonly cpuMs: number;
}

/** The CSV pages of the result, fetched in zstd into `dir` (untimed), then read by DuckDB with 1 and 2 threads. */
export async function csvFloor(url: string, key: string, executionId: string, rows: number, pageSize: number, dir: string): Promise<CsvFloor[]> {
  const folder = await mkdtemp(join(dir, 'csv-floor-'));
  try {
    const files: string[] = [];
    for (let offset = 0; offset < rows; offset += pageSize) {
      const res = await request(`${url}/v1/execution/${executionId}/results/csv?offset=${offset}&limit=${pageSize}`, { headers: { 'x-service-api-key': key, 'accept-encoding': 'zstd', accept: 'text/csv' } });
      if (res.statusCode !== 200 || res.headers['content-encoding'] !== 'zstd') throw new Error(`CSV page at offset ${offset}: ${res.statusCode}, content-encoding ${String(res.headers['content-encoding'])}`);
      const file = join(folder, `page-${files.length}.csv.zst`);
      await writeFile(file, Buffer.from(await res.body.arrayBuffer()));
      files.push(file);
    }
    const out: CsvFloor[] = [];
    for (const threads of [1, 2]) out.push({ threads, ...(await readPages(files, threads, join(folder, `floor-${threads}.parquet`), rows)) });
    return out;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

async function readPages(files: readonly string[], threads: number, file: string, rows: number): Promise<{ ms: number; cpuMs: number }> {
  const instance = await DuckDBInstance.create(':memory:', { threads: String(threads), preserve_insertion_order: 'true' });
  const connection = await instance.connect();
  try {
    await connection.run(`SET TimeZone = 'UTC'`);
    const list = `[${files.map((f) => `'${f}'`).join(', ')}]`;
    const columns = `{'id': 'BIGINT', 'ts': 'VARCHAR', 'name': 'VARCHAR', 'value': 'DOUBLE', 'amount': 'DECIMAL(18, 4)', 'quantity': 'INTEGER', 'flag': 'BOOLEAN', 'day': 'DATE'}`;
    const select = `SELECT id, make_timestamptz(epoch_us(CAST(left(ts, -4) AS TIMESTAMP))) AS ts, name, value, amount, quantity, flag, day FROM read_csv(${list}, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', columns = ${columns})`;
    const cpu = process.cpuUsage();
    const t = performance.now();
    const written = (await connection.run(`COPY (${select}) TO '${file}' (FORMAT parquet, COMPRESSION zstd)`)).rowsChanged;
    const ms = performance.now() - t;
    const used = process.cpuUsage(cpu);
    if (written !== rows) throw new Error(`DuckDB read ${written} rows of the CSV pages, expected ${rows}`);
    return { ms, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
