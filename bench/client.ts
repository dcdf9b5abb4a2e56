// Client benchmark: requests per second through ServiceClient for the status call and for a
// single-page JSON result (1,000 rows x 8 columns), on keep-alive connections against a fresh
// connection per request, in the same run against the local service started in-process.
// Sequential (one request in flight): that is where connection reuse shows.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { ServiceClient } from '../src/client/index.ts';
import { PATHS } from '../src/protocol/index.ts';
import { startService } from '../src/service/index.ts';

const KEY = 'sk_bench_client';
const SECONDS_PER_ROUND = 1;
/** Rounds alternate between the variants, and the median is reported: the machine is shared and noisy. */
const ROUNDS = 3;
const PAGE_ROWS = 1_000;

interface Case {
  name: string;
  path: string;
  call: (client: ServiceClient) => Promise<unknown>;
}

async function rate(call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await call(); // warm-up: JIT, first connection
  let n = 0;
  const start = performance.now();
  const end = start + SECONDS_PER_ROUND * 1000;
  while (performance.now() < end) {
    await call();
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

/** Baseline: undici request() + body.text() on a keep-alive Agent, no retry layer, no parse, no validation. */
function bare(agent: Agent, url: string): () => Promise<unknown> {
  return async () => {
    const res = await request(url, { dispatcher: agent, headers: { 'x-service-api-key': KEY } });
    return res.body.text();
  };
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-client-'));
  const svc = await startService({
    dataDir,
    sampleRows: 10_000,
    settings: { teams: [{ name: 'demo', plan: { credits_per_cycle: 1e9, max_inflight: 3, storage_quota_bytes: 1 << 20 }, keys: [{ key: KEY, scopes: ['Admin'] }] }] },
  });
  try {
    const setup = new ServiceClient({ apiKey: KEY, baseUrl: svc.url });
    const exec = await setup.execute({ sql: 'SELECT * FROM sample.events ORDER BY id' });
    await exec.wait();
    await setup.close();

    const cases: Case[] = [
      { name: 'status', path: PATHS.status(exec.id), call: (c) => c.getStatus(exec.id) },
      {
        name: `results page (${PAGE_ROWS} rows x 8 cols)`,
        path: `${PATHS.results(exec.id)}?limit=${PAGE_ROWS}&offset=2000`,
        call: (c) => c.getResults(exec.id, { limit: PAGE_ROWS, offset: 2_000 }),
      },
    ];
    for (const c of cases) {
      const keepAlive = new ServiceClient({ apiKey: KEY, baseUrl: svc.url });
      const fresh = new ServiceClient({ apiKey: KEY, baseUrl: svc.url, keepAlive: false });
      const agent = new Agent();
      try {
        const runs = { ka: [] as number[], fr: [] as number[], base: [] as number[] };
        for (let r = 0; r < ROUNDS; r++) {
          runs.ka.push(await rate(() => c.call(keepAlive)));
          runs.fr.push(await rate(() => c.call(fresh)));
          runs.base.push(await rate(bare(agent, `${svc.url}${c.path}`)));
        }
        const ka = median(runs.ka);
        const fr = median(runs.fr);
        const base = median(runs.base);
        console.log(
          `client ${c.name}: keep-alive ${ka.toFixed(0)} req/s, fresh connection per request ${fr.toFixed(0)} req/s, ratio ${(ka / fr).toFixed(2)}x; ` +
            `bare undici request+text keep-alive ${base.toFixed(0)} req/s (client at ${((ka / base) * 100).toFixed(0)}% of it)`,
        );
      } finally {
        await keepAlive.close();
        await fresh.close();
        await agent.close();
      }
    }
  } finally {
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
