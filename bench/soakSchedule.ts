// The process `npm run bench -- soak` watches: what `sluice schedule FILE` runs (the job file's
// connection, the embedded service in a thread of this process, the scheduler, runJob, metrics and
// job health), under a clock that runs SOAK_SPEED times faster than real time, so that an
// every-minute job runs every 60/SOAK_SPEED seconds. One JSON line per finished run on stdout,
// with this thread's memory split (V8 heap, memory outside it, parquet-wasm's linear memory) and
// the service thread's V8 heap, so that a climb of RSS can be told apart from a heap that grows.
import { builtins } from '../connectors/index.ts';
import { loadJobFile } from '../src/config/index.ts';
import { connect } from '../src/jobs/run/connect.ts';
import { runJob } from '../src/jobs/run/runJob.ts';
import type { Clock } from '../src/scheduler/clock.ts';
import { JobHealth } from '../src/scheduler/jobHealth.ts';
import { Metrics } from '../src/scheduler/metrics.ts';
import { Scheduler } from '../src/scheduler/scheduler.ts';

const [file, stateDir] = process.argv.slice(2) as [string, string];
const speed = Number(process.env.SOAK_SPEED ?? 20);

/** Virtual time: starts now, runs `speed` times faster; sleeps last 1/speed of the virtual wait. */
function compressedClock(factor: number): Clock {
  const realStart = Date.now();
  const now = () => new Date(realStart + (Date.now() - realStart) * factor);
  return {
    now,
    sleepUntil: (when, signal) =>
      new Promise<void>((resolve, reject) => {
        signal.throwIfAborted();
        const timer = setTimeout(() => (signal.removeEventListener('abort', onAbort), resolve()), Math.max(0, (when.getTime() - now().getTime()) / factor));
        const onAbort = (): void => (clearTimeout(timer), reject(signal.reason));
        signal.addEventListener('abort', onAbort, { once: true });
      }),
  };
}

/** parquet-wasm's linear memory (it only grows: a WebAssembly memory never shrinks), once loaded. */
let wasm: typeof import('parquet-wasm') | undefined;
void import('parquet-wasm').then((m) => (wasm = m));
const wasmBytes = (): number => wasm?.wasmMemory().buffer.byteLength ?? 0;

const jobFile = await loadJobFile(file, { registry: builtins, env: process.env, cwd: process.cwd() });
const connection = await connect(jobFile.connection, { env: process.env, cwd: process.cwd(), ownFolder: true });
const names = jobFile.jobs.map((j) => j.name);
const metrics = new Metrics(names);
const health = new JobHealth(names);
const scheduler = new Scheduler({
  jobs: jobFile.jobs.map((j) => ({ name: j.name, schedule: j.schedule!, timezone: j.timezone })),
  clock: compressedClock(speed),
  metrics,
  run: async (name, signal) => {
    const job = jobFile.jobs.find((j) => j.name === name)!;
    const summary = await runJob(job, { client: connection.client, stateDir, signal });
    return { rows: summary.rows, bytes: summary.bytes, credits: summary.credits };
  },
  events: {
    onFinish: (job, outcome) => {
      if (scheduler.stopping) return; // stopped by the end of the soak: neither way
      if (outcome.ok) health.succeeded(job, new Date());
      else health.failed(job, new Date(), outcome.error);
      const error = outcome.ok ? undefined : outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
      void report(job, outcome, error);
    },
  },
});
/** One line for a finished run, with the memory split of this thread and of the service thread. */
async function report(job: string, outcome: { ok: boolean; durationMs: number }, error: string | undefined): Promise<void> {
  const { heapUsed, external, arrayBuffers } = process.memoryUsage();
  const service = await connection.serviceHeap?.();
  const mem = { heapUsed, external, arrayBuffers, wasm: wasmBytes(), serviceHeapUsed: service?.used_heap_size ?? 0, serviceExternal: service?.external_memory ?? 0 };
  process.stdout.write(`${JSON.stringify({ job, ok: outcome.ok, ms: Math.round(outcome.durationMs), mem, ...(error === undefined ? {} : { error }) })}\n`);
}

scheduler.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void scheduler.stop(8_000).then(async () => {
    await connection.close();
    process.exit(0);
  });
});
