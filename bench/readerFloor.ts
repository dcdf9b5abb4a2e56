// The floor of any export that reads the service's CSV or JSON pages with DuckDB: the same pages
// the native export reads, already on disk (CSV pages in zstd, as the service sends them; a JSON
// page's rows array, as the native path stages it), turned into zstd Parquet by one DuckDB
// statement with the plainest typed read (no checks, no `<nil>`, each column parsed as its type;
// the zoned timestamp's ` UTC` cut from CSV text as the native path cuts it). Fetching, staging and
// storing are not in it: what stays is DuckDB's own reading of the text, which no reader of these
// pages goes below. Beside it, the native path's own statement over the same files: what its checks
// and casts add. For bench/wire.ts, which sets both beside `COPY` of the same rows from a table.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { request } from 'undici';
import { nativeColumns, pagesSelect } from '../src/pipeline/nativeWire/duckdbColumns.ts';
import { pageRows } from '../src/pipeline/nativeWire/pageRows.ts';
import { SAMPLE_EVENTS_COLUMNS } from '../src/service/engine/tables/sampleEvents.ts';

export interface ReaderFloor {
  readonly threads: number;
  /** The plain typed read, or the native path's own statement (its columns read as text, checked and cast). */
  readonly read: 'plain' | 'checked';
  readonly ms: number;
  readonly cpuMs: number;
}

/**
 * The result's pages in `pages`' encoding, fetched into `dir` (untimed), then read by DuckDB with 1
 * and 2 threads, plainly typed and by the native path's own statement (its columns read as text,
 * checked and cast, as an export reads them: what exactness costs beside the plain read).
 */
export async function readerFloor(url: string, key: string, executionId: string, rows: number, pageSize: number, dir: string, pages: 'csv' | 'json'): Promise<ReaderFloor[]> {
  const folder = await mkdtemp(join(dir, `${pages}-floor-`));
  try {
    const files: string[] = [];
    for (let offset = 0; offset < rows; offset += pageSize) {
      const file = join(folder, `page-${files.length}.${pages === 'csv' ? 'csv.zst' : 'json'}`);
      await writeFile(file, await fetchPage(url, key, executionId, offset, pageSize, pages));
      files.push(file);
    }
    const out: ReaderFloor[] = [];
    for (const read of ['plain', 'checked'] as const) {
      for (const threads of [1, 2]) out.push({ threads, read, ...(await readPages(files, threads, join(folder, `floor-${read}-${threads}.parquet`), rows, pages, read)) });
    }
    return out;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** A CSV page in zstd, as received; a JSON page's rows array, cut from its body as the native path cuts it. */
async function fetchPage(url: string, key: string, executionId: string, offset: number, limit: number, pages: 'csv' | 'json'): Promise<Uint8Array> {
  const csv = pages === 'csv';
  const res = await request(`${url}/v1/execution/${executionId}/results${csv ? '/csv' : ''}?offset=${offset}&limit=${limit}`, {
    headers: { 'x-service-api-key': key, 'accept-encoding': csv ? 'zstd' : 'identity', accept: csv ? 'text/csv' : 'application/json' },
  });
  const coding = res.headers['content-encoding'];
  if (res.statusCode !== 200 || (csv ? coding !== 'zstd' : coding !== undefined)) throw new Error(`${pages} page at offset ${offset}: ${res.statusCode}, content-encoding ${String(coding)}`);
  const body = Buffer.from(await res.body.arrayBuffer());
  return csv ? body : pageRows(body, { method: 'readerFloor' }).rows;
}

async function readPages(files: readonly string[], threads: number, file: string, rows: number, pages: 'csv' | 'json', read: 'plain' | 'checked'): Promise<{ ms: number; cpuMs: number }> {
  const instance = await DuckDBInstance.create(':memory:', { threads: String(threads), preserve_insertion_order: 'true' });
  const connection = await instance.connect();
  try {
    await connection.run(`SET TimeZone = 'UTC'`);
    const list = `[${files.map((f) => `'${f}'`).join(', ')}]`;
    // The JSON reader parses the zoned timestamps itself (as the native path reads them from JSON pages).
    const columns = `{'id': 'BIGINT', 'ts': '${pages === 'csv' ? 'VARCHAR' : 'TIMESTAMPTZ'}', 'name': 'VARCHAR', 'value': 'DOUBLE', 'amount': 'DECIMAL(18, 4)', 'quantity': 'INTEGER', 'flag': 'BOOLEAN', 'day': 'DATE'}`;
    const native = nativeColumns(SAMPLE_EVENTS_COLUMNS, pages);
    if (!('columns' in native)) throw new Error(`sample.events is not read natively: ${native.reason}`);
    const select =
      read === 'checked'
        ? pagesSelect(native.columns, files, pages)
        : pages === 'csv'
        ? `SELECT id, make_timestamptz(epoch_us(CAST(left(ts, -4) AS TIMESTAMP))) AS ts, name, value, amount, quantity, flag, day FROM read_csv(${list}, header = true, auto_detect = false, delim = ',', quote = '"', escape = '"', columns = ${columns})`
        : `SELECT * FROM read_json(${list}, format = 'array', columns = ${columns})`;
    const cpu = process.cpuUsage();
    const t = performance.now();
    const written = (await connection.run(`COPY (${select}) TO '${file}' (FORMAT parquet, COMPRESSION zstd)`)).rowsChanged;
    const ms = performance.now() - t;
    const used = process.cpuUsage(cpu);
    if (written !== rows) throw new Error(`DuckDB read ${written} rows of the ${pages} pages, expected ${rows}`);
    return { ms, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
