// A soak: `sluice schedule` (two every-minute jobs on the embedded service: a 200,000-row export
// to Parquet and an append) under a clock SOAK_SPEED times faster than real time (default 20: a
// run of each job every 3 s), and beside it `sluice serve` under a steady load of executions and
// page reads, for SOAK_MINUTES of real time (default 4). Results expire after SOAK_RETENTION_S
// (default 60 s) and execution records are forgotten SOAK_RECORD_RETENTION_S later (default
// twice that, as the embedded defaults' 1 and 2 days): compressed retentions, so that disk and
// the records the service holds in memory reach the plateau their settings allow within the run.
// The schedule process runs with the memory settings `sluice` gives itself
// (SLUICE_MEMORY_DEFAULTS=0: without, to compare). Every few seconds it samples each process's
// RSS, open descriptors, data folder on disk and execution records; at the end it prints, for
// each, the medians of the run's thirds (the first is the warm-up), the slope per hour over the
// last two thirds with its standard error (and whether it is 0 within two of them) and over the
// last third alone (a plateau being reached shows as a slope that falls and medians that stop
// rising), the schedule's main-thread memory split, and the run and request latencies of the
// first and last thirds. Not part of `npm run bench` with no area named: it runs for minutes.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { ServiceClient } from '../src/client/index.ts';
import { LimitsSchema } from '../src/service/settings.ts';
import { folderBytes } from '../src/cli/output/folderBytes.ts';
import { memoryDefaults } from '../src/memoryDefaults.ts';
import { recordFigure } from './figures.ts';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 4);
const SPEED = Number(process.env.SOAK_SPEED ?? 20);
const RETENTION_S = Number(process.env.SOAK_RETENTION_S ?? 60);
/** Execution records kept after their result expired: twice the results' time, as the embedded defaults (1 day, 2 days). */
const RECORD_RETENTION_S = Number(process.env.SOAK_RECORD_RETENTION_S ?? 2 * RETENTION_S);
const SAMPLE_MS = 5_000;
const ROWS = 200_000;
const KEY = 'sk_soak_bench_key';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A finished run (or a request read), at `t` hours; the schedule's runs carry its main thread's memory. */
interface Run {
  readonly t: number;
  readonly ms: number;
  readonly mem?: { heapUsed: number; external: number; arrayBuffers: number; wasm: number; serviceHeapUsed: number; serviceExternal: number };
}

interface Sample {
  readonly t: number;
  readonly rss: number;
  readonly fds: number;
  readonly disk: number;
  /** Execution records the service keeps (one JSON file each, each also held in its memory). */
  readonly records: number;
}

function sample(pid: number, dir: string, t0: number): Promise<Sample> | undefined {
  try {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    const fds = readdirSync(`/proc/${pid}/fd`).length;
    const records = entries(join(dir, 'catalog', 'executions'));
    return folderBytes(dir).then((disk) => ({ t: (performance.now() - t0) / 3_600_000, rss, fds, disk, records }));
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

/** Least-squares slope of y over t (hours), and its standard error (0 with fewer than 3 points). */
function fit(points: readonly { t: number; y: number }[]): { slope: number; error: number } {
  const n = points.length;
  if (n < 2) return { slope: 0, error: 0 };
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.t - mt) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  if (den === 0) return { slope: 0, error: 0 };
  const slope = num / den;
  const residuals = points.reduce((s, p) => s + (p.y - my - slope * (p.t - mt)) ** 2, 0);
  return { slope, error: n < 3 ? 0 : Math.sqrt(residuals / (n - 2) / den) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

const MiB = 1024 * 1024;

/** The run's thirds: the first is the warm-up, the other two are compared to tell a plateau from a climb. */
function thirds<T extends { t: number }>(xs: readonly T[], end: number): [T[], T[], T[]] {
  return [xs.filter((x) => x.t < end / 3), xs.filter((x) => x.t >= end / 3 && x.t < (2 * end) / 3), xs.filter((x) => x.t >= (2 * end) / 3)];
}

/**
 * A level after warm-up: the slope fitted over the last two thirds, with its standard error (a
 * slope within twice its error is no trend the samples can show), the slope over the last third
 * alone (a plateau being reached shows a smaller one), and the median of each third (the median,
 * not the last sample, which swings with the run in flight).
 */
function level(samples: readonly Sample[], k: 'rss' | 'fds' | 'disk' | 'records', scale: number, unit: string): string {
  const end = samples.at(-1)!.t;
  const [early, middle, late] = thirds(samples, end);
  const all = fit([...middle, ...late].map((s) => ({ t: s.t, y: s[k] / scale })));
  const last = fit(late.map((s) => ({ t: s.t, y: s[k] / scale })));
  const med = (xs: readonly Sample[]) => median(xs.map((s) => s[k] / scale)).toFixed(0);
  return `${med(early)} / ${med(middle)} / ${med(late)}${unit} (medians of the thirds), slope ${all.slope.toFixed(1)} ± ${all.error.toFixed(1)}${unit}/h after warm-up (${verdict(all)}), ${last.slope.toFixed(1)} ± ${last.error.toFixed(1)}${unit}/h over the last third`;
}

/** Whether a fitted slope is 0 within twice its standard error (no trend the samples can show), or how many errors away it is. */
export function verdict({ slope, error }: { slope: number; error: number }): string {
  if (Math.abs(slope) <= 2 * error) return '0 within 2 standard errors';
  return error === 0 ? 'not 0' : `not 0: ${(Math.abs(slope) / error).toFixed(1)} standard errors`;
}

/** Medians of the memory split the schedule process reports per run, first and last third. */
function memorySplit(runs: readonly Run[]): string | undefined {
  const withMem = runs.filter((r) => r.mem !== undefined);
  if (withMem.length === 0) return undefined;
  const [early, , late] = thirds(withMem, withMem.at(-1)!.t);
  const med = (xs: readonly Run[], k: keyof NonNullable<Run['mem']>) => (median(xs.map((r) => r.mem![k])) / MiB).toFixed(0);
  const part = (k: keyof NonNullable<Run['mem']>) => `${med(early, k)} -> ${med(late, k)}`;
  return [
    `  main thread  V8 heap used ${part('heapUsed')} MiB, external ${part('external')} MiB (ArrayBuffers ${part('arrayBuffers')}), parquet-wasm memory ${part('wasm')} MiB (medians, first -> last third)`,
    `  service thread V8 heap used ${part('serviceHeapUsed')} MiB, external ${part('serviceExternal')} MiB (medians, first -> last third)`,
  ].join('\n');
}

function report(name: string, samples: readonly Sample[], latencies: readonly Run[]): string {
  const last = samples.at(-1)!;
  const end = latencies.at(-1)?.t ?? 0;
  const [early, , late] = thirds(latencies, end);
  const lines = [
    `${name}: ${samples.length} samples over ${(last.t * 60).toFixed(1)} min; first / middle / last third:`,
    `  RSS          ${level(samples, 'rss', MiB, ' MiB')}; max ${(Math.max(...samples.map((s) => s.rss)) / MiB).toFixed(0)} MiB`,
    `  descriptors  ${level(samples, 'fds', 1, '')}; max ${Math.max(...samples.map((s) => s.fds))}`,
    `  disk         ${level(samples, 'disk', MiB, ' MiB')}; max ${(Math.max(...samples.map((s) => s.disk)) / MiB).toFixed(0)} MiB`,
    `  records      ${level(samples, 'records', 1, '')}; max ${Math.max(...samples.map((s) => s.records))}`,
    memorySplit(latencies),
    `  latency      median ${median(early.map((l) => l.ms)).toFixed(0)} ms in the first third, ${median(late.map((l) => l.ms)).toFixed(0)} ms in the last (${latencies.length} in all)`,
  ];
  return lines.filter((l) => l !== undefined).join('\n');
}

function summaryFigure(samples: readonly Sample[], latencies: readonly Run[], load: string): string {
  const end = samples.at(-1)!.t;
  const [, middle, late] = thirds(samples, end);
  const warm = [...middle, ...late];
  const rss = fit(warm.map((s) => ({ t: s.t, y: s.rss / MiB })));
  const fds = fit(warm.map((s) => ({ t: s.t, y: s.fds })));
  const rssMed = (xs: readonly Sample[]) => (median(xs.map((s) => s.rss)) / MiB).toFixed(0);
  const disk = Math.max(...samples.map((s) => s.disk)) / MiB;
  const lat = thirds(latencies, latencies.at(-1)?.t ?? 0);
  return `RSS ${rssMed(middle)} -> ${rssMed(late)} MiB (medians of the last two thirds), slope ${rss.slope.toFixed(0)} ± ${rss.error.toFixed(0)} MiB/h (${verdict(rss)}); descriptors ${fds.slope.toFixed(1)} ± ${fds.error.toFixed(1)}/h after warm-up (${verdict(fds)}); disk at most ${disk.toFixed(0)} MiB; median latency ${median(lat[0].map((l) => l.ms)).toFixed(0)} -> ${median(lat[2].map((l) => l.ms)).toFixed(0)} ms (${MINUTES} min, ${latencies.length} runs or reads, load ${load})`;
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
  const limits: Record<string, number> = { retention_days: RETENTION_S / 86_400, execution_record_retention_days: RECORD_RETENTION_S / 86_400, sweep_interval_ms: 5_000 };
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

async function soakSchedule(dir: string, settings: string, t0: number): Promise<{ samples: Sample[]; runs: Run[]; failures: number; stop: () => Promise<void>; pid: number; ready: Promise<void> }> {
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
  let failures = 0;
  let markReady = (): void => undefined;
  const ready = new Promise<void>((r) => (markReady = r));
  lines(child, (line) => {
    if (line === 'ready') return markReady();
    const run = JSON.parse(line) as { job: string; ok: boolean; ms: number; mem?: Run['mem']; error?: string };
    if (!run.ok) {
      failures++;
      if (failures <= 3) console.log(`schedule: ${run.job} failed: ${run.error}`);
    } else if (run.job === 'snapshot') runs.push({ t: (performance.now() - t0) / 3_600_000, ms: run.ms, ...(run.mem === undefined ? {} : { mem: run.mem }) });
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    samples: [],
    runs,
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

async function soakServe(dir: string, settings: string, t0: number, until: () => boolean): Promise<{ pid: number; requests: Run[]; done: Promise<void>; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/sluice.js'), 'serve', '--port', '0', '--data-dir', join(dir, 'serve'), '--config', settings], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => lines(child, (line) => /^listening on (\S+)/.test(line) && resolve(/^listening on (\S+)/.exec(line)![1]!)));
  const client = new ServiceClient({ baseUrl: url.endsWith('/api') ? url : `${url}/api`, apiKey: KEY, env: {} });
  const requests: Run[] = [];
  const done = (async () => {
    for (let i = 0; until(); i++) {
      const started = performance.now();
      const execution = await client.execute({ sql: `select id, name, amount from sample.events where id % 97 = ${i % 97} order by id limit 5000` });
      await execution.wait();
      await client.getResults(execution.id, { limit: 5000 });
      requests.push({ t: (performance.now() - t0) / 3_600_000, ms: performance.now() - started });
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    pid: child.pid!,
    requests,
    done,
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
  const startLoad = loadavg()[0]!.toFixed(1);
  const memory = process.env.SLUICE_MEMORY_DEFAULTS === '0' ? 'without the memory settings (SLUICE_MEMORY_DEFAULTS=0)' : "with sluice's memory settings";
  console.log(`soak: ${MINUTES} min, clock x${SPEED} (every-minute jobs every ${(60 / SPEED).toFixed(1)} s), results kept ${RETENTION_S} s, schedule ${memory}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${(await import('node:os')).availableParallelism()} cores`);
  const t0 = performance.now();
  const schedule = await soakSchedule(dir, settings, t0);
  await schedule.ready;
  const end = performance.now() + MINUTES * 60_000;
  const serve = await soakServe(dir, settings, t0, () => performance.now() < end);
  const scheduleSamples: Sample[] = [];
  const serveSamples: Sample[] = [];
  try {
    while (performance.now() < end) {
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
      const a = await sample(schedule.pid, join(dir, 'service'), t0);
      const b = await sample(serve.pid, join(dir, 'serve'), t0);
      if (a) scheduleSamples.push(a);
      if (b) serveSamples.push(b);
    }
    await serve.done;
  } finally {
    await schedule.stop();
    await serve.stop();
  }
  console.log(report(`schedule (${schedule.runs.length} snapshot runs, ${schedule.failures} failed runs)`, scheduleSamples, schedule.runs));
  console.log(report(`serve (${serve.requests.length} executions read)`, serveSamples, serve.requests));
  const load = `${startLoad} -> ${loadavg()[0]!.toFixed(1)}`;
  console.log(`load (1 min) at the start -> end: ${load}`);
  recordFigure('soak-schedule', summaryFigure(scheduleSamples, schedule.runs, load));
  recordFigure('soak-serve', summaryFigure(serveSamples, serve.requests, load));
  await rm(dir, { recursive: true, force: true });
}
