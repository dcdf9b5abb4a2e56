// A soak: `sluice schedule` (two every-minute jobs on the embedded service: a 200,000-row export
// to Parquet and an append) under a clock SOAK_SPEED times faster than real time (default 20: a
// run of each job every 3 s), and beside it `sluice serve` under a steady load (an execution and a
// page read started every SOAK_SERVE_PERIOD_MS, default 500: a steady pace, so that what the
// retentions hold is steady too), for SOAK_MINUTES of real time (default 4). SOAK_ONLY=schedule or
// SOAK_ONLY=serve watches one of them alone. Results expire after SOAK_RETENTION_S (default 60 s)
// and execution records are forgotten SOAK_RECORD_RETENTION_S later (default twice that, as the
// embedded defaults' 1 and 2 days): compressed retentions, so that disk and the records the
// service holds in memory reach the plateau their settings allow within the run's first third
// (the warm-up; the bench says so when it is too short for that). The schedule process runs with
// the memory settings `sluice` gives itself (SLUICE_MEMORY_DEFAULTS=0: without, to compare). Every
// few seconds it samples each process's RSS (and, less often, its split by mapping), open
// descriptors (by kind), data folder on disk and execution records; at the end it prints, for
// each, the medians of the run's thirds, the slope per hour over the last two thirds with its
// standard error (and whether it is 0 within two of them) and over the last third alone, the pace
// of each third with the records its retentions should hold at it, the schedule's memory split by
// thread, and the run and request latencies of the first and last thirds. Not part of `npm run
// bench` with no area named: it runs for minutes.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { ServiceClient } from '../src/client/index.ts';
import { LimitsSchema } from '../src/service/settings.ts';
import { folderBytes } from '../src/cli/output/folderBytes.ts';
import { memoryDefaults } from '../src/memoryDefaults.ts';
import { recordFigure } from './figures.ts';
import { descriptorsOf, rssOf, rssSplitOf } from './soakProc.ts';
import { MiB, report, summaryFigure, type Held, type Run, type Sample } from './soakReport.ts';
import { warmupCovers } from './soakStats.ts';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 4);
const SPEED = Number(process.env.SOAK_SPEED ?? 20);
const RETENTION_S = Number(process.env.SOAK_RETENTION_S ?? 60);
/** Execution records kept after their result expired: twice the results' time, as the embedded defaults (1 day, 2 days). */
const RECORD_RETENTION_S = Number(process.env.SOAK_RECORD_RETENTION_S ?? 2 * RETENTION_S);
const SWEEP_INTERVAL_MS = 5_000;
const SERVE_PERIOD_MS = Number(process.env.SOAK_SERVE_PERIOD_MS ?? 500);
const ONLY = process.env.SOAK_ONLY;
const SAMPLE_MS = 5_000;
/** Every how many samples the RSS is split by mapping (/proc/PID/smaps is long to read). */
const SPLIT_EVERY = 6;
const ROWS = 200_000;
const KEY = 'sk_soak_bench_key';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HELD: Held = { retentionS: RETENTION_S, recordRetentionS: RECORD_RETENTION_S, sweepIntervalS: SWEEP_INTERVAL_MS / 1000 };

function sample(pid: number, dir: string, t0: number, split: boolean): Promise<Sample> | undefined {
  try {
    const rss = rssOf(pid);
    const fdKinds = descriptorsOf(pid, dir);
    const fds = Object.values(fdKinds).reduce((a, b) => a + b, 0);
    const records = entries(join(dir, 'catalog', 'executions'));
    const more = split ? { split: rssSplitOf(pid) } : {};
    return folderBytes(dir).then((disk) => ({ t: (performance.now() - t0) / 3_600_000, rss, fds, fdKinds, disk, records, ...more }));
  } catch {
    return undefined; // the process has gone
  }
}

function entries(folder: string): number {
  try {
    return readdirSync(folder).length;
  } catch {
    return 0; // not made yet
  }
}

/**
 * The environment of the schedule process: with the memory settings `sluice` gives itself when it
 * starts (src/memoryDefaults.ts), so that the soak watches the process a user's `sluice schedule`
 * is; SLUICE_MEMORY_DEFAULTS=0 leaves them out, as it does for the command.
 */
export function scheduleEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...(memoryDefaults(env) ?? env), SOAK_SPEED: String(SPEED), SERVICE_API_KEY: KEY };
}

/**
 * The service's limits in the soak: every bound in time compressed (results, then their records),
 * and the result store bounded, so that each reaches its plateau within minutes.
 */
export function soakLimits(): Record<string, number> {
  const limits: Record<string, number> = { retention_days: RETENTION_S / 86_400, execution_record_retention_days: RECORD_RETENTION_S / 86_400, sweep_interval_ms: SWEEP_INTERVAL_MS };
  if ('result_store_max_bytes' in LimitsSchema.shape) limits.result_store_max_bytes = 256 * MiB;
  return limits;
}

async function settingsFile(dir: string): Promise<string> {
  const file = join(dir, 'service.json');
  await writeFile(file, JSON.stringify({ teams: [{ name: 'demo', plan: { credits_per_cycle: 1_000_000_000 }, keys: [{ key: KEY, scopes: ['Admin'] }] }], limits: soakLimits() }));
  return file;
}

function lines(child: ChildProcess, onLine: (line: string) => void): void {
  createInterface({ input: child.stdout! }).on('line', onLine);
}

interface Watched {
  readonly pid: number;
  /** The runs whose latency is compared (the schedule's snapshot runs, serve's requests). */
  readonly runs: Run[];
  /** Every execution the process's service finished (for the pace). */
  readonly done: Run[];
  readonly failures: number;
  stop(): Promise<void>;
}

async function soakSchedule(dir: string, settings: string, t0: number): Promise<Watched & { ready: Promise<void> }> {
  const file = join(dir, 'jobs.yaml');
  await writeFile(
    file,
    [
      'connection:',
      '  embedded:',
      `    data_dir: ${join(dir, 'service')}`,
      `    settings: ${settings}`,
      `    sample_rows: ${ROWS}`,
      'jobs:',
      '  - name: snapshot',
      '    source: { sql: "select * from sample.events" }',
      `    outputs: [{ format: parquet, path: "${join(dir, 'out', 'snapshot')}" }]`,
      '    schedule: "* * * * *"',
      '  - name: append',
      '    source: { sql: "select * from sample.events order by id limit 100" }',
      `    outputs: [{ format: parquet, path: "${join(dir, 'out', 'append')}", mode: append }]`,
      '    schedule: "* * * * *"',
      '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [fileURLToPath(new URL('./soakSchedule.ts', import.meta.url)), file, join(dir, 'state')], {
    cwd: ROOT,
    env: scheduleEnv(process.env),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const runs: Run[] = [];
  const done: Run[] = [];
  let failures = 0;
  let markReady = (): void => undefined;
  const ready = new Promise<void>((r) => (markReady = r));
  lines(child, (line) => {
    if (line === 'ready') return markReady();
    const run = JSON.parse(line) as { job: string; ok: boolean; ms: number; mem?: Run['mem']; error?: string };
    if (!run.ok) {
      failures++;
      if (failures <= 3) console.log(`schedule: ${run.job} failed: ${run.error}`);
      return;
    }
    const finished = { t: (performance.now() - t0) / 3_600_000, ms: run.ms, ...(run.mem === undefined ? {} : { mem: run.mem }) };
    done.push(finished);
    if (run.job === 'snapshot') runs.push(finished);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    runs,
    done,
    get failures() {
      return failures;
    },
    pid: child.pid!,
    ready,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * `sluice serve` under a steady load: an execution of 5,000 rows and its page read started every
 * SOAK_SERVE_PERIOD_MS (one at a time; one that ends late starts the next at once), so that the pace,
 * and what the retentions hold at it, does not follow the machine's load.
 */
async function soakServe(dir: string, settings: string, t0: number, until: () => boolean): Promise<Watched & { late: () => number; finished: Promise<void> }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/sluice.js'), 'serve', '--port', '0', '--data-dir', join(dir, 'serve'), '--config', settings], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => lines(child, (line) => /^listening on (\S+)/.test(line) && resolve(/^listening on (\S+)/.exec(line)![1]!)));
  const client = new ServiceClient({ baseUrl: url.endsWith('/api') ? url : `${url}/api`, apiKey: KEY, env: {} });
  const requests: Run[] = [];
  let late = 0;
  const finished = (async () => {
    let next = performance.now();
    for (let i = 0; until(); i++) {
      const started = performance.now();
      const execution = await client.execute({ sql: `select id, name, amount from sample.events where id % 97 = ${i % 97} order by id limit 5000` });
      await execution.wait();
      await client.getResults(execution.id, { limit: 5000 });
      requests.push({ t: (performance.now() - t0) / 3_600_000, ms: performance.now() - started });
      next += SERVE_PERIOD_MS;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else {
        late++;
        next = performance.now();
      }
    }
  })();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    pid: child.pid!,
    runs: requests,
    done: requests,
    failures: 0,
    late: () => late,
    finished,
    stop: async () => {
      await client.close();
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-soak-'));
  const settings = await settingsFile(dir);
  const loads: number[] = [loadavg()[0]!];
  const memory = process.env.SLUICE_MEMORY_DEFAULTS === '0' ? 'without the memory settings (SLUICE_MEMORY_DEFAULTS=0)' : "with sluice's memory settings";
  const clock = `clock x${SPEED} (each every-minute job every ${(60 / SPEED).toFixed(1)} s)`;
  const period = `an execution of 5,000 rows and its page read started every ${SERVE_PERIOD_MS} ms`;
  console.log(
    `soak: ${MINUTES} min, ${ONLY === 'serve' ? '' : `schedule ${memory}, ${clock}, `}${ONLY === 'schedule' ? '' : `serve with ${period}, `}results kept ${RETENTION_S} s and their records ${RECORD_RETENTION_S} s more, load ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${availableParallelism()} cores`,
  );
  const horizon = RETENTION_S + RECORD_RETENTION_S + SWEEP_INTERVAL_MS / 1000;
  if (!warmupCovers(MINUTES, horizon)) console.log(`soak: the warm-up (the first third, ${((MINUTES * 60) / 3).toFixed(0)} s) is shorter than the ${horizon} s an execution is held: the records and disk cannot level off in it; run for ${Math.ceil((3 * horizon) / 60)} minutes or more`);
  const t0 = performance.now();
  const schedule = ONLY === 'serve' ? undefined : await soakSchedule(dir, settings, t0);
  await schedule?.ready;
  const end = performance.now() + MINUTES * 60_000;
  const serve = ONLY === 'schedule' ? undefined : await soakServe(dir, settings, t0, () => performance.now() < end);
  const scheduleSamples: Sample[] = [];
  const serveSamples: Sample[] = [];
  try {
    for (let i = 0; performance.now() < end; i++) {
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
      const split = i % SPLIT_EVERY === 0;
      const a = schedule === undefined ? undefined : await sample(schedule.pid, join(dir, 'service'), t0, split);
      const b = serve === undefined ? undefined : await sample(serve.pid, join(dir, 'serve'), t0, split);
      if (a) scheduleSamples.push(a);
      if (b) serveSamples.push(b);
      loads.push(loadavg()[0]!);
    }
    await serve?.finished;
  } finally {
    await schedule?.stop();
    await serve?.stop();
  }
  const load = `${loads[0]!.toFixed(1)} at the start, ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} during, ${loads.at(-1)!.toFixed(1)} at the end`;
  if (schedule !== undefined) {
    console.log(report(`schedule (${schedule.runs.length} snapshot runs, ${schedule.done.length} runs in all, ${schedule.failures} failed runs)`, scheduleSamples, schedule.runs, schedule.done, HELD));
    recordFigure('soak-schedule', summaryFigure(clock, scheduleSamples, schedule.runs, load));
  }
  if (serve !== undefined) {
    console.log(report(`serve (${serve.runs.length} executions read, ${serve.late()} started late)`, serveSamples, serve.runs, serve.done, HELD));
    recordFigure('soak-serve', summaryFigure(period, serveSamples, serve.runs, load));
  }
  console.log(`load (1 min): ${load}`);
  await rm(dir, { recursive: true, force: true });
}
