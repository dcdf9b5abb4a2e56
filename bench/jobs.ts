// The quickstart job end to end (embedded service -> pipeline -> Parquet), in this process:
// rows per second and peak RSS; in the same run, the bare pipeline (batches read, nothing
// written) as the baseline the job's cost is compared with.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadJobFile } from '../src/config/index.ts';
import { connect } from '../src/jobs/connect.ts';
import { runJob } from '../src/jobs/runJob.ts';
import { stream } from '../src/pipeline/stream.ts';
import { builtins } from '../connectors/index.ts';

const ROWS = Number(process.env.BENCH_JOB_ROWS ?? 1_000_000);

function rssMiB(): number {
  // maxRSS is in KiB and covers the whole process so far (DuckDB included).
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

export async function run(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'sluice-bench-jobs-'));
  const env = { ...process.env, SLUICE_SAMPLE_ROWS: String(ROWS), SLUICE_OUT: join(work, 'out') };
  try {
    const file = await loadJobFile(new URL('../config/examples/quickstart.yaml', import.meta.url).pathname, { registry: builtins, env });
    const job = file.jobs[0]!;
    const started = performance.now();
    const connection = await connect(file.connection, { env, cwd: work });
    console.log(`embedded service up with ${ROWS.toLocaleString('en-US')} sample rows in ${((performance.now() - started) / 1000).toFixed(1)} s (rss ${rssMiB()} MiB)`);
    try {
      const signal = new AbortController().signal;
      const t0 = performance.now();
      let rows = 0;
      const s = stream(connection.client, { sql: 'select * from sample.events' }, { concurrency: 4 });
      for await (const batch of s.batches()) rows += batch.numRows;
      const baseline = rows / ((performance.now() - t0) / 1000);
      console.log(`baseline (pipeline only, no output): ${Math.round(baseline).toLocaleString('en-US')} rows/s`);

      const t1 = performance.now();
      const summary = await runJob(job, { client: connection.client, stateDir: join(work, 'state'), signal });
      const seconds = (performance.now() - t1) / 1000;
      const rate = summary.rows / seconds;
      console.log(
        `quickstart job: ${summary.rows.toLocaleString('en-US')} rows -> ${summary.files} Parquet files, ${(summary.bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s: ` +
          `${Math.round(rate).toLocaleString('en-US')} rows/s, ${(summary.bytes / 1e6 / seconds).toFixed(1)} MB/s written, ${(rate / baseline).toFixed(2)}x the baseline`,
      );
      console.log(`peak RSS (process, DuckDB and the embedded service included): ${rssMiB()} MiB`);
    } finally {
      await connection.close();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
