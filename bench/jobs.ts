// The quickstart job end to end (embedded service -> pipeline -> Parquet), in this process:
// rows per second and peak RSS; in the same run, the bare pipeline (batches read, nothing
// written) as the baseline the job's cost is compared with.
//
// Then an incremental sync against a full re-export of the same source: the output first holds
// 99% of sample.events (ids below the cut), then the incremental run fetches the 1% above the
// committed cursor and appends it; the full re-export (mode replace) reads and writes everything.
// Time, rows fetched and credits as ratios, in the same run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadJobFile, parseJobFile } from '../src/config/index.ts';
import { connect } from '../src/jobs/run/connect.ts';
import { runJob } from '../src/jobs/run/runJob.ts';
import { stream } from '../src/pipeline/stream.ts';
import { builtins } from '../connectors/index.ts';
import { recordFigure } from './figures.ts';

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
      if (ROWS === 1_000_000) {
        recordFigure('quickstart-rate', `${(rate / baseline).toFixed(2)}x the rows per second`);
        recordFigure('quickstart-peak', `${rssMiB()} MB`);
      }
      await incrementalAgainstFull(connection.client, work, signal);
    } finally {
      await connection.close();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function incrementalAgainstFull(client: Parameters<typeof runJob>[1]['client'], work: string, signal: AbortSignal): Promise<void> {
  const cut = Math.floor(ROWS * 0.99);
  const job = (sql: string, mode: 'append' | 'replace', path: string, incremental: boolean) =>
    parseJobFile(
      `jobs:
  - name: sync
    source: { sql: "${sql}" }
${incremental ? '    incremental: { cursor: id, parameter: after, initial: -1 }\n' : ''}    outputs: [{ format: parquet, format_options: { compression: zstd }, path: "${path}", mode: ${mode}, max_rows_per_file: 250000 }]
`,
      { file: 'bench.yaml', registry: builtins, env: {} },
    ).jobs[0]!;
  const state = join(work, 'state-sync');
  // The output as a previous sync left it: 99% of the rows, and the cursor at the last of them.
  const t = performance.now();
  const seed = await runJob(job(`select * from sample.events where id > {{after}} and id < ${cut}`, 'append', join(work, 'sync'), true), { client, stateDir: state, signal });
  const seedSeconds = (performance.now() - t) / 1000;
  const t0 = performance.now();
  const inc = await runJob(job('select * from sample.events where id > {{after}}', 'append', join(work, 'sync'), true), { client, stateDir: state, signal });
  const incSeconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const full = await runJob(job('select * from sample.events', 'replace', join(work, 'full'), false), { client, stateDir: state, signal });
  const fullSeconds = (performance.now() - t1) / 1000;
  console.log(
    `incremental sync of ${inc.rows.toLocaleString('en-US')} new rows (1% of ${ROWS.toLocaleString('en-US')}): ${incSeconds.toFixed(2)} s, ${inc.fetchedRows.toLocaleString('en-US')} rows fetched, ${inc.credits} credits, cursor ${inc.cursor?.from} -> ${inc.cursor?.to}`,
  );
  console.log(`full re-export of ${full.rows.toLocaleString('en-US')} rows: ${fullSeconds.toFixed(2)} s, ${full.fetchedRows.toLocaleString('en-US')} rows fetched, ${full.credits} credits`);
  // What tracking the cursor of every row costs: the first sync (99% of the rows) against the full export.
  console.log(
    `first incremental sync of ${seed.rows.toLocaleString('en-US')} rows (cursor of every row checked and tracked): ${seedSeconds.toFixed(2)} s, ` +
      `${((seedSeconds / seed.rows) / (fullSeconds / full.rows)).toFixed(2)}x the full re-export's time per row`,
  );
  console.log(
    `incremental / full: time ${(incSeconds / fullSeconds).toFixed(3)}x, rows fetched ${(inc.fetchedRows / full.fetchedRows).toFixed(3)}x, credits ${full.credits === 0 ? 'n/a' : (inc.credits / full.credits).toFixed(2)}x` +
      ' (the local service charges a flat 10 credits per medium-tier execution, whatever it reads)',
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
