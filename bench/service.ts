// Serving a 1M-row stored result over HTTP: pages/s and MB/s as JSON and as CSV, the time of
// the first page against the last (paging must not get slower with the offset), peak RSS.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { startService } from '../src/service/index.ts';

const KEY = 'sk_bench_service_key';
const ROWS = 1_000_000;

async function getJson(url: string): Promise<any> {
  const res = await request(url, { headers: { 'x-service-api-key': KEY } });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
}

interface PageTiming {
  ms: number;
  bytes: number;
}

async function readAll(first: string, csv: boolean): Promise<{ pages: PageTiming[]; rows: number }> {
  const pages: PageTiming[] = [];
  let rows = 0;
  let next: string | undefined = first;
  while (next !== undefined) {
    const t0 = performance.now();
    const res: Dispatcher.ResponseData = await request(next, { headers: { 'x-service-api-key': KEY } });
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode !== 200) throw new Error(`${next}: ${res.statusCode} ${body.toString()}`);
    pages.push({ ms: performance.now() - t0, bytes: body.length });
    if (csv) {
      let lines = 0;
      for (let i = body.indexOf(10); i >= 0; i = body.indexOf(10, i + 1)) lines++;
      rows += lines - 1;
      const h: string | string[] | undefined = res.headers['x-service-next-uri'];
      next = typeof h === 'string' ? h : undefined;
    } else {
      // The rows are parsed, as a client would, so the figure includes what a reader pays.
      const page = JSON.parse(body.toString('utf8'));
      rows += page.result.rows.length;
      next = page.next_uri;
    }
  }
  return { pages, rows };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function report(label: string, r: { pages: PageTiming[]; rows: number }): void {
  const totalMs = r.pages.reduce((a, p) => a + p.ms, 0);
  const mb = r.pages.reduce((a, p) => a + p.bytes, 0) / 1e6;
  // Single pages are noisy (GC of the reader in the same process): compare the medians of the first
  // and the last five full pages (the very last page is short).
  const full = r.pages.slice(0, -1).map((p) => p.ms);
  const head = median(full.slice(0, 5));
  const tail = median(full.slice(-5));
  console.log(
    `${label.padEnd(5)} ${r.pages.length} pages, ${r.rows} rows, ${mb.toFixed(1)} MB in ${(totalMs / 1000).toFixed(2)} s: ` +
      `${(r.pages.length / (totalMs / 1000)).toFixed(1)} pages/s, ${(mb / (totalMs / 1000)).toFixed(1)} MB/s, ` +
      `${Math.round(r.rows / (totalMs / 1000))} rows/s; first page ${r.pages[0]?.ms.toFixed(0)} ms; ` +
      `median of first 5 pages ${head.toFixed(0)} ms, of last 5 full pages ${tail.toFixed(0)} ms (ratio ${(tail / head).toFixed(2)})`,
  );
  console.log(`      page ms: ${r.pages.map((p) => p.ms.toFixed(0)).join(' ')}`);
}

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-service-'));
  const t0 = performance.now();
  const svc = await startService({
    dataDir,
    sampleRows: ROWS,
    settings: { teams: [{ name: 'bench', keys: [{ key: KEY, scopes: ['Admin'] }] }] },
  });
  try {
    console.log(`service: started with ${ROWS} sample rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const submitted = await request(`${svc.url}/v1/sql/execute`, {
      method: 'POST',
      headers: { 'x-service-api-key': KEY },
      body: JSON.stringify({ sql: 'SELECT * FROM sample.events ORDER BY id' }),
    });
    const { execution_id: id } = (await submitted.body.json()) as { execution_id: string };
    const e0 = performance.now();
    let status: any;
    do {
      await sleep(20);
      status = await getJson(`${svc.url}/v1/execution/${id}/status`);
    } while (!status.is_execution_finished);
    if (status.state !== 'QUERY_STATE_COMPLETED') throw new Error(`bench query ended ${status.state}`);
    const m = status.result_metadata;
    console.log(
      `execute: ${m.total_row_count} rows x ${m.column_names.length} columns, ${(m.total_result_set_bytes / 1e6).toFixed(1)} MB stored in ${((performance.now() - e0) / 1000).toFixed(2)} s`,
    );
    report('JSON', await readAll(`${svc.url}/v1/execution/${id}/results`, false));
    report('CSV', await readAll(`${svc.url}/v1/execution/${id}/results/csv`, true));
    console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (service and reader in one process)`);
  } finally {
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
