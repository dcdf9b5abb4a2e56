// Limits benchmark. First the rate budget (rateBudget.ts): a 4-fetcher stream against a key
// limited to 40, 200 and 1000 read requests per minute, with the client told the limit and not.
// Then the queue: 50 clients submit and read at once against one team with max_inflight 3.
// Figures: executions per second end to end (submit -> poll -> first result page), the order the
// queue admitted them in (FIFO: inversions of start order against submission order), the most
// executions seen running at once, and memory before and after.
// Baseline in the same run: the same executions submitted by one client, one after another.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startService, type ServiceHandle } from '../src/service/index.ts';
import { budgetRun, printBudget } from './rateBudget.ts';

const CLIENTS = 50;
const PER_CLIENT = 4;
const MAX_INFLIGHT = 3;
const KEY = 'sk_bench_write_key';
const SQL = 'SELECT id % 97 AS k, count(*) AS n, sum(value) AS s FROM sample.events GROUP BY ALL ORDER BY k';

async function call(svc: ServiceHandle, method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
  const res = await request(`${svc.url}${path}`, {
    method,
    headers: { 'x-service-api-key': KEY },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
}

interface Running {
  max: number;
  /** Result reads that failed (reported, not fatal: the figure is part of the bench's findings). */
  readErrors: string[];
}

interface Observed {
  id: string;
  submittedSeq: number;
  startedAt: string;
  firstQueuePosition?: number;
}

async function oneExecution(svc: ServiceHandle, seq: () => number, running: Running): Promise<Observed> {
  const { execution_id: id } = await call(svc, 'POST', '/v1/sql/execute', { sql: SQL });
  const submittedSeq = seq();
  let firstQueuePosition: number | undefined;
  let seenRunning = false;
  for (;;) {
    const s = await call(svc, 'GET', `/v1/execution/${id}/status`);
    if (firstQueuePosition === undefined && typeof s.queue_position === 'number') firstQueuePosition = s.queue_position;
    if (s.state === 'QUERY_STATE_EXECUTING' && !seenRunning) {
      seenRunning = true;
    }
    if (s.is_execution_finished) {
      if (s.state !== 'QUERY_STATE_COMPLETED') throw new Error(`execution ${id} ended ${s.state}`);
      if (typeof s.max_inflight_interactive_reached === 'number') running.max = Math.max(running.max, s.max_inflight_interactive_reached);
      try {
        await call(svc, 'GET', `/v1/execution/${id}/results?limit=100`);
      } catch (err) {
        running.readErrors.push((err as Error).message.slice(0, 160));
      }
      return { id, submittedSeq, startedAt: s.execution_started_at, ...(firstQueuePosition === undefined ? {} : { firstQueuePosition }) };
    }
    if (typeof s.max_inflight_interactive_reached === 'number') running.max = Math.max(running.max, s.max_inflight_interactive_reached);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** Rows of the rate budget runs (`BENCH_RATE_ROWS`; default 1,000,000). */
const RATE_ROWS = Number(process.env.BENCH_RATE_ROWS ?? 1_000_000);
const RATES = [40, 200, 1000];

export async function run(): Promise<void> {
  for (const rpm of RATES) {
    printBudget('rate_limit set,', await budgetRun(RATE_ROWS, rpm, { rateLimit: { read: rpm, write: rpm } }), RATE_ROWS);
    printBudget('rate_limit unset (learned from 429s),', await budgetRun(RATE_ROWS, rpm, {}), RATE_ROWS);
  }
  await queueRun();
}

async function queueRun(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-limits-'));
  const svc = await startService({
    dataDir,
    sampleRows: 200_000,
    settings: {
      teams: [{ name: 'bench', plan: { credits_per_cycle: 1_000_000, max_inflight: MAX_INFLIGHT }, keys: [{ key: KEY, scopes: ['Write'] }] }],
    },
  });
  try {
    const running: Running = { max: 0, readErrors: [] };
    let n = 0;
    const seq = () => n++;
    // Warm-up and baseline: sequential executions from one client.
    await oneExecution(svc, seq, running);
    global.gc?.();
    const before = process.memoryUsage();
    let t = performance.now();
    for (let i = 0; i < 20; i += 1) await oneExecution(svc, seq, running);
    const baselineRate = 20 / ((performance.now() - t) / 1000);

    n = 0;
    running.max = 0;
    t = performance.now();
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const out: Observed[] = [];
        for (let i = 0; i < PER_CLIENT; i += 1) out.push(await oneExecution(svc, seq, running));
        return out;
      }),
    );
    const seconds = (performance.now() - t) / 1000;
    const all = results.flat();
    global.gc?.();
    const after = process.memoryUsage();

    // FIFO: ULIDs are monotonic in submission order; the queue must start them in that order.
    const byId = [...all].sort((a, b) => (a.id < b.id ? -1 : 1));
    let inversions = 0;
    for (let i = 1; i < byId.length; i += 1) if ((byId[i] as Observed).startedAt < (byId[i - 1] as Observed).startedAt) inversions += 1;
    // The same against the order the clients received their execution ids.
    const bySeq = [...all].sort((a, b) => a.submittedSeq - b.submittedSeq);
    let seqInversions = 0;
    for (let i = 1; i < bySeq.length; i += 1) if ((bySeq[i] as Observed).startedAt < (bySeq[i - 1] as Observed).startedAt) seqInversions += 1;
    const queued = all.filter((o) => o.firstQueuePosition !== undefined);
    const deepest = Math.max(0, ...queued.map((o) => o.firstQueuePosition as number));

    console.log(`limits: ${all.length} executions by ${CLIENTS} clients (max_inflight ${MAX_INFLIGHT}) in ${seconds.toFixed(2)} s: ${(all.length / seconds).toFixed(1)} executions/s`);
    console.log(`limits: baseline, one client sequentially: ${baselineRate.toFixed(1)} executions/s (ratio ${(all.length / seconds / baselineRate).toFixed(2)}x)`);
    console.log(`limits: queue order: ${inversions} start-order inversions against execution id (ULID) order, ${seqInversions} against the order the clients got their ids (FIFO = 0); ${queued.length} executions were seen PENDING, deepest queue_position ${deepest}`);
    console.log(`limits: most running at once as reported by status: ${running.max} (cap ${MAX_INFLIGHT})`);
    console.log(`limits: result reads that failed: ${running.readErrors.length}${running.readErrors.length > 0 ? ` (first: ${running.readErrors[0]})` : ''}`);
    console.log(`limits: memory before ${mb(before.rss)} RSS / ${mb(before.heapUsed)} heap, after ${mb(after.rss)} RSS / ${mb(after.heapUsed)} heap`);
  } finally {
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
