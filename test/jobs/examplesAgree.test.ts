// `--plan`, a run and a shard are ends of the same phases: for every example job in config/examples,
// the plan's skip and split decisions are the ones the run and the shards then take, against the
// real local service, a local S3 server and the Iceberg REST catalog stand-in.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { type Job, loadJobFile } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { type JobPlan, planRun } from '../../src/jobs/plan/planRun.ts';
import { connect } from '../../src/jobs/run/connect.ts';
import { runJob, type JobSummary } from '../../src/jobs/run/runJob.ts';
import { runShard } from '../../src/jobs/shards/runShard.ts';
import type { ServiceClient } from '../../src/client/serviceClient.ts';
import { ROOT } from '../cli/sluiceProcess.ts';
import { startExampleStores, type ExampleStores } from '../helpers/exampleStores.ts';

const EXAMPLES = join(ROOT, 'config', 'examples');
const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml')).sort();

let stores: ExampleStores;
let work: string;
let env: Record<string, string>;

beforeAll(async () => {
  stores = await startExampleStores('sluice-examples-agree-');
  ({ work, env } = stores);
});
afterAll(async () => {
  await stores?.stop();
});

const signal = () => new AbortController().signal;
/** A run: its summary. */
function run(client: ServiceClient, job: Job, stateDir: string): Promise<JobSummary> {
  return runJob(job, { client, stateDir, signal: signal() });
}

/** The run skipped and wrote the outputs the plan said. */
function expectAgrees(plan: JobPlan, summary: JobSummary): void {
  expect(summary.outputs.map((o) => (o.skipped ? 'skip' : 'write'))).toEqual(plan.outputs.map((o) => o.action));
}

describe('--plan, a run and a shard take the same skip and split decisions', () => {
  it('config/examples holds job files', () => {
    expect(files.length).toBeGreaterThan(5);
  });

  it.each(files)('examples/%s', { timeout: 300_000 }, async (name) => {
    const file = await loadJobFile(join(EXAMPLES, name), { registry: builtins, env });
    const connection = await connect(file.connection, { env, cwd: work });
    try {
      const { client } = connection;
      for (const job of file.jobs) {
        const stateDir = join(work, 'state', name);
        // First: everything is written; then the same again: where an output holds the execution, skipped.
        const first = await planRun(job, { client, stateDir, signal: signal(), resume: true });
        expectAgrees(first, await run(client, job, stateDir));
        const again = await planRun(job, { client, stateDir, signal: signal(), resume: true });
        expectAgrees(again, await run(client, job, stateDir));

        // Shards: refused for exactly the reasons the plan gives, or run to one commit.
        const sharded = await planRun(job, { client, stateDir, signal: signal(), resume: true, shards: 2 });
        expect(sharded.split).toEqual(first.split);
        const runId = `agree-${job.name}`;
        const shard = (index: number) => runShard(job, { client, signal: signal(), shard: { index, count: 2, runId, from: `--shard ${index}/2` } });
        if (first.split.notSharded.length > 0) {
          const error = await shard(0).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(ConfigError);
          expect((error as ConfigError).issues.map((i) => [i.path, i.message])).toEqual(first.split.notSharded.map((b) => [b.path, b.message]));
        } else {
          const [zero, one] = await Promise.all([shard(0), shard(1)]);
          const commits = [...zero.outputs, ...one.outputs].map((o) => o.commit);
          expect(commits.filter((c) => c === 'committed')).toHaveLength(job.outputs.length);
          expect(sharded.outputs.every((o) => o.action === 'write')).toBe(true);
        }
      }
    } finally {
      await connection.close();
    }
  });
});
