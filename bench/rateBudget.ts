// The rate budget part of the limits benchmark: one key whose read class is limited to R requests
// per minute, and a 4-fetcher stream of a whole result paged so that it needs about 1.5 x R read
// requests (the bucket's burst of R, then half a minute at R). Figures per R: the share of the
// budget used (read requests the service accepted / what its bucket allowed over the run: R + R x
// minutes), the 429s received, and whether the rows came back whole (count and sum of ids).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceClient, type ClientOptions } from '../src/client/index.ts';
import { stream } from '../src/pipeline/stream.ts';
import { startService } from '../src/service/index.ts';

const KEY = 'sk_bench_rate_key';
const FETCHERS = 4;
/** Read requests the stream should need, as a multiple of the per-minute limit. */
const REQUESTS_PER_RPM = 1.5;

export interface BudgetFigures {
  rpm: number;
  rows: number;
  sum: bigint;
  seconds: number;
  reads: number;
  writes: number;
  tooMany: number;
  share: number;
  error?: string;
}

/** Streams `rows` rows against a service whose read class allows `rpm` per minute per key. */
export async function budgetRun(rows: number, rpm: number, client: Partial<ClientOptions>): Promise<BudgetFigures> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-rate-'));
  const svc = await startService({
    dataDir,
    sampleRows: rows,
    settings: {
      teams: [{ name: 'bench', plan: { credits_per_cycle: 1_000_000 }, keys: [{ key: KEY, scopes: ['Write'] }] }],
      limits: { read_requests_per_minute: rpm, write_requests_per_minute: rpm },
    },
  });
  const counts = { reads: 0, writes: 0, tooMany: 0 };
  const c = new ServiceClient({
    baseUrl: svc.url,
    apiKey: KEY,
    env: {},
    ...client,
    onRequest: (e) => (e.httpMethod === 'GET' ? counts.reads++ : counts.writes++),
    onRetry: (e) => {
      if (e.error.status === 429) counts.tooMany++;
    },
  });
  const pageSize = Math.ceil(rows / (rpm * REQUESTS_PER_RPM));
  const started = performance.now();
  let got = 0;
  let sum = 0n;
  let error: string | undefined;
  try {
    const s = stream(c, { sql: 'SELECT id FROM sample.events' }, { concurrency: FETCHERS, prefetch: 0, pageSize });
    for await (const row of s.rows()) {
      got++;
      sum += BigInt(row.id as number | bigint);
    }
  } catch (err) {
    const e = err as { status?: number; message: string };
    if (e.status === 429) counts.tooMany++;
    error = e.message.slice(0, 200);
  } finally {
    await c.close();
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const accepted = counts.reads - counts.tooMany;
  const budget = rpm + (rpm * seconds) / 60;
  return { rpm, rows: got, sum, seconds, reads: counts.reads, writes: counts.writes, tooMany: counts.tooMany, share: accepted / budget, ...(error === undefined ? {} : { error }) };
}

export function printBudget(label: string, f: BudgetFigures, rows: number): void {
  const whole = f.rows === rows && f.sum === (BigInt(rows) * BigInt(rows - 1)) / 2n;
  console.log(
    `limits: ${label} ${f.rpm} rpm: ${f.rows} rows (${whole ? 'all, ids match' : 'NOT WHOLE'}) in ${f.seconds.toFixed(1)} s, ` +
      `${f.reads} read requests (${f.writes} write), ${f.tooMany} x 429, budget used ${(f.share * 100).toFixed(1)}%` +
      (f.error === undefined ? '' : `; FAILED: ${f.error}`),
  );
}
