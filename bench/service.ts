// Serving a 1M-row x 8-column stored result (SELECT * FROM sample.events ORDER BY id) over HTTP,
// the service in a process of its own so that its CPU is its own. Every figure is a ratio against
// a baseline measured in the same run:
// - service CPU per page, JSON/CSV/Arrow from the pre-encoded result, at offset 0 and at the
//   last full page, against the per-request page query (what every page cost before pre-encoding;
//   asking for every column by name still takes that path, with identical bytes);
// - filtered pages (per-request query, as before) against the unfiltered per-request page;
// - raw download of all pages at concurrency 4 against bare JSON.parse of the same bytes;
// - Arrow download + RecordBatchReader against JSON download + JSON.parse;
// - execution_ended_at to the first page served, and to the pre-encoded pages being ready,
//   against the execution time itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { RecordBatchReader } from 'apache-arrow';
import { request } from 'undici';

export const KEY = 'sk_bench_service_key';
/** 1M rows; BENCH_SERVICE_ROWS overrides it for a quick check of the bench itself. */
export const ROWS = Number(process.env.BENCH_SERVICE_ROWS ?? 1_000_000);
export const ARROW = 'application/vnd.apache.arrow.stream';
const CPU_REPEAT = 3;

export interface Child {
  url: string;
  proc: ChildProcess;
  /** Resolves when the execution's pre-encoded pages are written. */
  whenEncoded(id: string): Promise<void>;
}

/** The service in its own process (`engine` settings, if given); it answers `encoded <id>` lines on stdout. */
export async function startChild(dataDir: string, encodeMinBytes?: number, engine?: Record<string, unknown>): Promise<Child> {
  const service = new URL('../src/service/index.ts', import.meta.url).href;
  const extra = encodeMinBytes === undefined ? '' : ` encodeMinBytes: ${encodeMinBytes},`;
  const engineSettings = engine === undefined ? '' : ` engine: ${JSON.stringify(engine)},`;
  const script = `
    const { startService } = await import(${JSON.stringify(service)});
    const svc = await startService({ dataDir: ${JSON.stringify(dataDir)}, sampleRows: ${ROWS},${extra}
      settings: { teams: [{ name: 'bench', keys: [{ key: '${KEY}', scopes: ['Admin'] }] }],${engineSettings} } });
    console.log('url ' + svc.url);
    const { createInterface } = await import('node:readline');
    for await (const line of createInterface({ input: process.stdin })) {
      const [cmd, id] = line.split(' ');
      if (cmd === 'encoded') svc.whenEncoded(id).then(() => console.log('encoded ' + id));
      if (cmd === 'stop') { await svc.close(); process.exit(0); }
    }`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<string, () => void>();
  let gotUrl: (url: string) => void = () => undefined;
  const url = new Promise<string>((ok) => (gotUrl = ok));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    const [what, arg] = line.split(' ');
    if (what === 'url') gotUrl(arg!);
    else if (what === 'encoded') waiting.get(arg!)?.();
  });
  return {
    url: await url,
    proc,
    whenEncoded: (id) =>
      new Promise<void>((ok) => {
        waiting.set(id, ok);
        proc.stdin!.write(`encoded ${id}\n`);
      }),
  };
}

/** CPU seconds (user + system) the process has used, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function get(url: string, accept?: string): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'x-service-api-key': KEY };
  if (accept !== undefined) headers.accept = accept;
  let res;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await request(url, { headers });
      break;
    } catch (err) {
      // A pooled connection the service closed as idle just as it was reused (on a loaded machine
      // the keep-alive race is won by the close now and then; after a pause longer than the
      // service's keep-alive timeout, every pooled connection is such): a GET is safe to send again.
      const code = (err as { code?: string }).code;
      if ((code !== 'UND_ERR_SOCKET' && code !== 'ECONNRESET') || attempt > 8) throw err;
    }
  }
  const body = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${body.toString().slice(0, 200)}`);
  return { status: res.statusCode, body, headers: res.headers };
}

/** Service CPU per request of `url`, in ms (the mean of CPU_REPEAT requests; /proc counts 10 ms ticks). */
async function cpuPerPage(child: Child, url: string, accept?: string): Promise<number> {
  await get(url, accept); // warm: attach, page cache
  const before = cpuSeconds(child.proc.pid!);
  for (let i = 0; i < CPU_REPEAT; i++) await get(url, accept);
  return ((cpuSeconds(child.proc.pid!) - before) * 1000) / CPU_REPEAT;
}

/** Every page, `concurrency` at a time; returns the bodies in order and the wall time. */
export async function downloadAll(urls: string[], concurrency: number, accept?: string): Promise<{ ms: number; bodies: Buffer[] }> {
  const bodies: Buffer[] = new Array(urls.length);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < urls.length) {
        const i = next++;
        bodies[i] = (await get(urls[i]!, accept)).body;
      }
    }),
  );
  return { ms: performance.now() - t0, bodies };
}

export const fmt = (ms: number): string => `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
export const ratio = (a: number, b: number): string => (b === 0 ? 'n/a' : `${(a / b).toFixed(2)}x`);

/** Submits `sql` and polls its status every 5 ms until it finished: its id and last status. */
export async function submitAndWait(url: string, sql: string): Promise<{ id: string; status: any }> {
  const submitted = await request(`${url}/v1/sql/execute`, { method: 'POST', headers: { 'x-service-api-key': KEY }, body: JSON.stringify({ sql }) });
  const { execution_id: id } = (await submitted.body.json()) as { execution_id: string };
  for (;;) {
    const status = JSON.parse((await get(`${url}/v1/execution/${id}/status`)).body.toString());
    if (status.is_execution_finished) return { id, status };
    await sleep(5);
  }
}

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-service-'));
  const t0 = performance.now();
  const child = await startChild(dataDir);
  try {
    console.log(`service: own process, ${ROWS} sample rows, started in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const { id, status } = await submitAndWait(child.url, 'SELECT * FROM sample.events ORDER BY id');
    // The first page as soon as the status says COMPLETED (served by the page query meanwhile).
    const seen = performance.now();
    await get(`${child.url}/v1/execution/${id}/results?limit=1000`);
    const firstPageMs = performance.now() - seen;
    // The JSON / CSV encoding is published first (its directory appears), the Arrow chunks after.
    const enc = join(dataDir, 'engine', 'results', `${id}.enc`);
    let jsonReadyMs = Number.NaN;
    const watch = setInterval(() => {
      if (Number.isNaN(jsonReadyMs) && existsSync(enc)) jsonReadyMs = performance.now() - seen;
    }, 5);
    await child.whenEncoded(id);
    clearInterval(watch);
    const encodedMs = performance.now() - seen;
    if (Number.isNaN(jsonReadyMs)) jsonReadyMs = encodedMs;
    if (status.state !== 'QUERY_STATE_COMPLETED') throw new Error(`bench query ended ${status.state}`);
    const m = status.result_metadata;
    const execMs = Date.parse(status.execution_ended_at) - Date.parse(status.execution_started_at);
    console.log(`execute: ${m.total_row_count} rows x ${m.column_names.length} columns, ${(m.total_result_set_bytes / 1e6).toFixed(1)} MB, execution ${fmt(execMs)}`);
    console.log(
      `completion -> first page served: ${fmt(firstPageMs)} (the page query serves until the encoding is there: as before); ` +
        `completion -> pre-encoded JSON/CSV pages ready: ${fmt(jsonReadyMs)} (${ratio(jsonReadyMs, execMs)} the execution time), Arrow too: ${fmt(encodedMs)} (${ratio(encodedMs, execMs)})`,
    );

    const base = `${child.url}/v1/execution/${id}/results`;
    const first = JSON.parse((await get(base)).body.toString());
    const pageRows: number = first.result.metadata.row_count;
    const total: number = m.total_row_count;
    const lastFull = (Math.floor(total / pageRows) - 1) * pageRows;
    const everyColumn = `columns=${encodeURIComponent(m.column_names.join(','))}`;
    console.log(`pages of ${pageRows} rows; the last full page is at offset ${lastFull}`);

    console.log('service CPU per page (mean of 3), against the per-request page query of the same page:');
    for (const offset of [0, lastFull]) {
      const q = `offset=${offset}&limit=${pageRows}`;
      const dynJson = await cpuPerPage(child, `${base}?${q}&${everyColumn}`);
      const encJson = await cpuPerPage(child, `${base}?${q}`);
      const dynCsv = await cpuPerPage(child, `${base}/csv?${q}&${everyColumn}`);
      const encCsv = await cpuPerPage(child, `${base}/csv?${q}`);
      const arrow = await cpuPerPage(child, `${base}?${q}`, ARROW);
      const arrowBuilt = await cpuPerPage(child, `${base}?${q}&${everyColumn}`, ARROW);
      console.log(
        `  offset ${String(offset).padStart(7)}: JSON ${fmt(encJson)} vs ${fmt(dynJson)} (${ratio(dynJson, encJson)} less); ` +
          `CSV ${fmt(encCsv)} vs ${fmt(dynCsv)} (${ratio(dynCsv, encCsv)} less); Arrow ${fmt(arrow)} vs built per request ${fmt(arrowBuilt)} (${ratio(arrowBuilt, arrow)} less)`,
      );
    }
    const filtered = await cpuPerPage(child, `${base}?limit=${pageRows}&filters=${encodeURIComponent('quantity >= 500')}`);
    const sorted = await cpuPerPage(child, `${base}?limit=${pageRows}&sort_by=${encodeURIComponent('value desc')}`);
    const plainDyn = await cpuPerPage(child, `${base}?limit=${pageRows}&${everyColumn}`);
    console.log(
      `  filtered page (quantity >= 500): ${fmt(filtered)}, sorted page (value desc): ${fmt(sorted)}, against the unfiltered page query ${fmt(plainDyn)} ` +
        `(${ratio(filtered, plainDyn)}, ${ratio(sorted, plainDyn)}; the same per-request path as before)`,
    );

    const offsets = Array.from({ length: Math.ceil(total / pageRows) }, (_, i) => i * pageRows);
    const urls = offsets.map((o) => `${base}?offset=${o}&limit=${pageRows}`);
    const json = await downloadAll(urls, 4);
    const bytes = json.bodies.reduce((a, b) => a + b.length, 0);
    let t = performance.now();
    let rows = 0;
    for (const b of json.bodies) rows += JSON.parse(b.toString('utf8')).result.rows.length;
    const parseMs = performance.now() - t;
    const dyn = await downloadAll(urls.map((u) => `${u}&${everyColumn}`), 4);
    console.log(
      `download of all ${urls.length} JSON pages at concurrency 4 (${(bytes / 1e6).toFixed(1)} MB, ${rows} rows): ${fmt(json.ms)}; bare JSON.parse of the same bytes ${fmt(parseMs)}: ` +
        `download/parse ${ratio(json.ms, parseMs)} (target <= 0.5x); with the per-request page query ${fmt(dyn.ms)} (${ratio(dyn.ms, parseMs)} the parse)`,
    );
    const arrowDl = await downloadAll(urls, 4, ARROW);
    t = performance.now();
    let arrowRows = 0;
    for (const b of arrowDl.bodies) for (const batch of RecordBatchReader.from(b)) arrowRows += batch.numRows;
    const readMs = performance.now() - t;
    const arrowBytes = arrowDl.bodies.reduce((a, b) => a + b.length, 0);
    const jsonTotal = json.ms + parseMs;
    const arrowTotal = arrowDl.ms + readMs;
    const arrowBuiltDl = await downloadAll(urls.map((u) => `${u}&${everyColumn}`), 4, ARROW);
    console.log(
      `Arrow download + RecordBatchReader (${(arrowBytes / 1e6).toFixed(1)} MB, ${arrowRows} rows): ${fmt(arrowDl.ms)} + ${fmt(readMs)} = ${fmt(arrowTotal)}; ` +
        `JSON download + JSON.parse: ${fmt(jsonTotal)}: Arrow is ${ratio(jsonTotal, arrowTotal)} faster (target >= 5x); ` +
        `Arrow pages built per request: download ${fmt(arrowBuiltDl.ms)} (${ratio(jsonTotal, arrowBuiltDl.ms + readMs)} faster than JSON)`,
    );
    console.log(`bench process peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
  } finally {
    child.proc.stdin!.write('stop\n');
    await new Promise((ok) => child.proc.once('exit', ok));
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
