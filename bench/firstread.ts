// The first read of a fresh 1M-row x 8-column result (SELECT * FROM sample.events ORDER BY id),
// right after its status says COMPLETED, and the same read again (warm), the service in a process
// of its own. Every figure is a ratio against a baseline measured in the same run:
// - raw download of all pages at concurrency 4 against bare JSON.parse of the same bytes
//   (target <= 0.5x), first and warm;
// - Arrow download + RecordBatchReader against JSON download + JSON.parse (target Arrow >= 5x
//   faster), first and warm; the Arrow first read is of a second fresh result (the first one's
//   JSON read has warmed the disk cache for it);
// - against what the first read cost when results were encoded only in the background: a second
//   service with pre-encoding off serves every page by the page query; the time from submit to
//   the last row read, both ways (encoding is now the execution's last step: it costs time before
//   COMPLETED and saves it on every read);
// - the service process's peak RSS, both ways.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordBatchReader } from 'apache-arrow';
import { ARROW, downloadAll, fmt, get, ratio, ROWS, startChild, submitAndWait, type Child } from './service.ts';

const SQL = 'SELECT * FROM sample.events ORDER BY id';

interface Fresh {
  base: string;
  urls: string[];
  /** Submit to COMPLETED seen by polling. */
  submitToDoneMs: number;
  execMs: number;
}

/** Runs SQL, polls until it finished, and lists the URLs of every page of its default size. */
async function fresh(child: Child): Promise<Fresh> {
  const t0 = performance.now();
  const { id, status } = await submitAndWait(child.url, SQL);
  const submitToDoneMs = performance.now() - t0;
  if (status.state !== 'QUERY_STATE_COMPLETED') throw new Error(`bench query ended ${status.state}`);
  const m = status.result_metadata;
  // The page size: the service's default (the first page's row count), from the metadata alone.
  const pageRows = Math.min(32_000, Math.floor(250_000 / m.column_names.length));
  const base = `${child.url}/v1/execution/${id}/results`;
  const urls = Array.from({ length: Math.ceil(m.total_row_count / pageRows) }, (_, i) => `${base}?offset=${i * pageRows}&limit=${pageRows}`);
  return { base, urls, submitToDoneMs, execMs: Date.parse(status.execution_ended_at) - Date.parse(status.execution_started_at) };
}

function parseAll(bodies: Buffer[]): { ms: number; rows: number } {
  const t = performance.now();
  let rows = 0;
  for (const b of bodies) rows += JSON.parse(b.toString('utf8')).result.rows.length;
  return { ms: performance.now() - t, rows };
}

function readArrow(bodies: Buffer[]): { ms: number; rows: number } {
  const t = performance.now();
  let rows = 0;
  for (const b of bodies) for (const batch of RecordBatchReader.from(b)) rows += batch.numRows;
  return { ms: performance.now() - t, rows };
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

interface Reads {
  json: { ms: number; parseMs: number; rows: number; bytes: number };
  arrow: { ms: number; readMs: number; rows: number };
}

/** JSON first read of one fresh result, Arrow first read of another; then both again, warm. */
async function reads(child: Child): Promise<{ first: Reads; warm: Reads; a: Fresh; b: Fresh }> {
  const a = await fresh(child);
  const jsonFirst = await downloadAll(a.urls, 4);
  const parsed = parseAll(jsonFirst.bodies);
  const b = await fresh(child);
  const arrowFirst = await downloadAll(b.urls, 4, ARROW);
  const arrowRead = readArrow(arrowFirst.bodies);
  const jsonWarm = await downloadAll(a.urls, 4);
  const arrowWarm = await downloadAll(b.urls, 4, ARROW);
  const bytes = jsonFirst.bodies.reduce((n, x) => n + x.length, 0);
  if (!Buffer.concat(jsonWarm.bodies).equals(Buffer.concat(jsonFirst.bodies))) throw new Error('the warm JSON read differs from the first');
  if (!Buffer.concat(arrowWarm.bodies).equals(Buffer.concat(arrowFirst.bodies))) throw new Error('the warm Arrow read differs from the first');
  const first: Reads = { json: { ms: jsonFirst.ms, parseMs: parsed.ms, rows: parsed.rows, bytes }, arrow: { ms: arrowFirst.ms, readMs: arrowRead.ms, rows: arrowRead.rows } };
  const warm: Reads = { json: { ...first.json, ms: jsonWarm.ms }, arrow: { ...first.arrow, ms: arrowWarm.ms } };
  return { first, warm, a, b };
}

function report(label: string, r: Reads): void {
  const jsonTotal = r.json.ms + r.json.parseMs;
  const arrowTotal = r.arrow.ms + r.arrow.readMs;
  console.log(
    `  ${label}: JSON download ${fmt(r.json.ms)} (${(r.json.bytes / 1e6).toFixed(1)} MB, ${r.json.rows} rows), JSON.parse ${fmt(r.json.parseMs)}: ` +
      `download/parse ${ratio(r.json.ms, r.json.parseMs)} (target <= 0.5x); Arrow download + read ${fmt(r.arrow.ms)} + ${fmt(r.arrow.readMs)} (${r.arrow.rows} rows): ` +
      `Arrow ${ratio(jsonTotal, arrowTotal)} faster than JSON (target >= 5x)`,
  );
}

export async function run(): Promise<void> {
  const rows = ROWS;
  const results: Array<{ label: string; r: Awaited<ReturnType<typeof reads>>; rss: number }> = [];
  for (const [label, encodeMinBytes] of [
    ['encoded as the execution\'s last step (now)', undefined],
    ['not pre-encoded (the first read of a fresh result before: the page query)', Number.MAX_SAFE_INTEGER],
  ] as const) {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-first-read-'));
    const child = await startChild(dataDir, encodeMinBytes);
    try {
      const r = await reads(child);
      results.push({ label, r, rss: peakRssMb(child.proc.pid!) });
    } finally {
      child.proc.stdin!.write('stop\n');
      await new Promise((ok) => child.proc.once('exit', ok));
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`first read of a fresh ${rows}-row x 8-column result, pages of the default size at concurrency 4 (machine shared: ratios only):`);
  for (const { label, r, rss } of results) {
    console.log(`${label}: execution ${fmt(r.a.execMs)} and ${fmt(r.b.execMs)}, submit to COMPLETED ${fmt(r.a.submitToDoneMs)} and ${fmt(r.b.submitToDoneMs)}; service peak RSS ${rss.toFixed(0)} MB`);
    report('first read', r.first);
    report('warm read ', r.warm);
  }
  const [now, before] = results as [(typeof results)[0], (typeof results)[0]];
  const endToEnd = (x: (typeof results)[0], f: 'json' | 'arrow'): number =>
    f === 'json' ? x.r.a.submitToDoneMs + x.r.first.json.ms : x.r.b.submitToDoneMs + x.r.first.arrow.ms;
  for (const f of ['json', 'arrow'] as const) {
    console.log(
      `submit to the last ${f === 'json' ? 'JSON' : 'Arrow'} page of the first read: ${fmt(endToEnd(now, f))} now, ${fmt(endToEnd(before, f))} with the page query (${ratio(endToEnd(now, f), endToEnd(before, f))})`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
