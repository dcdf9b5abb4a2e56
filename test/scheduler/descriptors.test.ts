// A scheduled job's runs on the embedded service, as `sluice schedule` makes them (one process:
// the service in a thread, the runner on the main thread): the open descriptors of the process
// come back to what they were after each run, instead of one more per run until the service's
// cache of attached results is full.
import { readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { connect, type Connected } from '../../src/jobs/run/connect.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';

const linux = process.platform === 'linux';
let dir: string;
let connection: Connected;
let job: Job;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-fds-'));
  connection = await connect({ embedded: { data_dir: join(dir, 'service'), sample_rows: 20_000 } }, { env: {}, cwd: dir, ownFolder: true });
  job = parseJobFile(`jobs:\n  - name: snap\n    source: { sql: "select * from sample.events limit 500" }\n    outputs: [{ format: parquet, path: "${join(dir, 'out')}" }]\n`, { file: 'jobs.yaml', registry: builtins, env: {} }).jobs[0]!;
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The open descriptors of this process, by what they point at (sockets and pipes by kind). */
function descriptors(): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`).replace(/:\[\d+\]$/, '')];
    } catch {
      return []; // the one readdir itself had open
    }
  });
}

/** Waits up to `ms` for the count to come down to `target`; the count then. */
async function settle(target: number, ms: number): Promise<number> {
  const end = Date.now() + ms;
  while (descriptors().length > target && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
  return descriptors().length;
}

describe.skipIf(!linux)('descriptors across scheduled runs (reads /proc/self/fd)', () => {
  it('no descriptor more per run once warm', async () => {
    const run = () => runJob(job, { client: connection.client, stateDir: join(dir, 'state'), signal: new AbortController().signal });
    await run();
    // Warm: the first run opened what stays open (the engine's files, the client's pool).
    await new Promise((r) => setTimeout(r, 7_000));
    const warm = descriptors();
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      await run();
      counts.push(await settle(warm.length, 9_000));
    }
    const after = descriptors();
    const added = after.filter((d) => after.filter((x) => x === d).length > warm.filter((x) => x === d).length);
    expect(Math.max(...counts), `warm ${warm.length}; more after the runs: ${[...new Set(added)].join(', ')}`).toBeLessThanOrEqual(warm.length);
  }, 90_000);
});
