import { resolve } from 'node:path';
import { builtins } from '../../../connectors/index.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { DEFAULT_STATE_DIR, type Job } from '../../config/jobSchema.ts';
import type { RunRecord } from '../../jobs/run/runHistory.ts';
import { runJob, type RunEvents } from '../../jobs/run/runJob.ts';
import { systemClock } from '../../scheduler/clock.ts';
import { DEFAULT_HEALTH_HOST, startHealthServer, type HealthServer } from '../../scheduler/healthServer.ts';
import { DEFAULT_FAILING_AFTER, JobHealth, type HealthChange } from '../../scheduler/jobHealth.ts';
import { Metrics } from '../../scheduler/metrics.ts';
import { type FinishedRun, type RunOutcome, Scheduler } from '../../scheduler/scheduler.ts';
import type { Connected } from '../../jobs/run/connect.ts';
import { connectLogged } from '../connection.ts';
import { defineCommand, flag, type OptionValues, stringOption } from '../command.ts';
import type { CliIo } from '../io.ts';
import { EXIT } from '../exitCodes.ts';
import { jobEvents } from '../jobEvents.ts';
import { finishedLogFields } from '../output/summary.ts';
import type { Logger } from '../log.ts';
import { UsageError } from '../usageError.ts';
import { startTelemetry, type Telemetry, withRunTelemetry } from '../../telemetry/index.ts';

/** Runs get this long after SIGTERM to abort uploads and record what they kept (Docker waits 10 s). */
const DEFAULT_GRACE_SECONDS = 8;

export const scheduleCommand = defineCommand({
  name: 'schedule',
  summary: 'Run each job of a job file on its cron schedule until SIGTERM',
  args: 'FILE',
  minArgs: 1,
  handlesSignals: true,
  options: {
    'health-port': { type: 'string', valueName: 'PORT', description: 'Serve /healthz, /readyz, /status and /metrics on this port (default $SLUICE_HEALTH_PORT; 0 = any free port)' },
    'health-host': { type: 'string', valueName: 'HOST', description: `Interface of the health server (default $SLUICE_HEALTH_HOST, else ${DEFAULT_HEALTH_HOST}; 0.0.0.0 = every interface, as a container needs)` },
    'grace-seconds': { type: 'string', valueName: 'S', description: 'On SIGTERM, how long runs in flight get to stop', default: String(DEFAULT_GRACE_SECONDS) },
    'run-now': { type: 'boolean', description: 'Also run every scheduled job once at start' },
    'failing-after': { type: 'string', valueName: 'N', description: 'A job whose last N runs failed is failing: /readyz answers 503 and the log says so once', default: String(DEFAULT_FAILING_AFTER) },
  },
  details: [
    'Never two runs of one job at once: a tick that comes while the previous run is going is skipped.',
    'On SIGTERM or SIGINT: no new runs; runs in flight abort their uploads and keep their executions',
    '(the next run resumes them, as `sluice run` does); exits 0 within the grace period (1 if a run',
    'had to be abandoned).',
    'With --health-port: /healthz (liveness), /readyz (503 while a job is failing, with why),',
    '/status (every job\'s recent runs, JSON) and /metrics (Prometheus).',
  ].join('\n'),
  async run({ io, values, positionals, log, signal }) {
    const file = positionals[0]!;
    const jobFile = await loadJobFile(file, { registry: builtins, env: io.env, cwd: io.cwd });
    const scheduled = jobFile.jobs.filter((j) => j.schedule !== undefined);
    for (const job of jobFile.jobs) if (job.schedule === undefined) log.warn('job has no schedule: not run by `sluice schedule`', { job: job.name });
    if (scheduled.length === 0) throw new UsageError(`${file}: no job has a schedule (add schedule: "<cron>" to a job, or use sluice run)`);
    const settings = scheduleSettings(values, io.env);

    const stateDir = resolve(io.cwd, jobFile.state_dir ?? DEFAULT_STATE_DIR);
    const telemetry = await startTelemetry(io.env, 'schedule', (message) => log.warn(message));
    const connection = await connectLogged(jobFile.connection, io, log, signal, true);
    const metrics = new Metrics(scheduled.map((j) => j.name));
    const health = new JobHealth(scheduled.map((j) => j.name), { failingAfter: settings.failingAfter, onChange: (change) => logHealthChange(log, change, settings.failingAfter) });
    const runs: ScheduledRuns = { io, log, signal, jobs: scheduled, metrics, health, client: connection.client, stateDir, telemetry };
    let healthServer: HealthServer | undefined;
    try {
      const scheduler = new Scheduler({
        jobs: scheduled.map((j) => ({ name: j.name, schedule: j.schedule!, timezone: j.timezone })),
        clock: systemClock,
        metrics,
        run: (name, runSignal) => runScheduled(runs, name, runSignal),
        events: {
          onStart: (job) => log.info('run started', { job }),
          onSkip: (job, at) => log.warn('previous run still going: tick skipped', { job, tick: at.toISOString() }),
          onFinish: (job, outcome) => recordOutcome(runs, job, outcome),
        },
      });
      if (settings.port !== undefined) healthServer = await serveHealth(runs, scheduler, settings.port, settings.host);
      scheduler.start();
      for (const job of scheduled) log.info('scheduled', { job: job.name, schedule: job.schedule, next: nextRunOf(job)?.toISOString() });
      if (flag(values, 'run-now')) for (const job of scheduled) scheduler.trigger(job.name);
      return await stopOnSignal(runs, scheduler, settings.grace);
    } finally {
      await healthServer?.close();
      // Closing the embedded service interrupts whatever is left; bounded so exit stays prompt.
      await Promise.all([Promise.race([connection.close(), new Promise((r) => setTimeout(r, 2000).unref())]), telemetry?.shutdown()]);
    }
  },
});

/** The command line's settings of a schedule, checked before anything starts. */
interface ScheduleSettings {
  readonly grace: number;
  readonly port: number | undefined;
  readonly host: string;
  readonly failingAfter: number;
}

function scheduleSettings(values: OptionValues, env: CliIo['env']): ScheduleSettings {
  const grace = Number(stringOption(values, 'grace-seconds') ?? DEFAULT_GRACE_SECONDS);
  if (!(grace >= 0)) throw new UsageError(`--grace-seconds must be a number of seconds, got ${JSON.stringify(stringOption(values, 'grace-seconds'))}`);
  const portText = stringOption(values, 'health-port') ?? env.SLUICE_HEALTH_PORT;
  const port = portText === undefined || portText === '' ? undefined : Number(portText);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) throw new UsageError(`--health-port must be a port number, got ${JSON.stringify(portText)}`);
  const failingAfterText = stringOption(values, 'failing-after') ?? String(DEFAULT_FAILING_AFTER);
  const failingAfter = Number(failingAfterText);
  if (!(Number.isInteger(failingAfter) && failingAfter >= 1)) throw new UsageError(`--failing-after must be a whole number of runs, at least 1; got ${JSON.stringify(failingAfterText)}`);
  const host = stringOption(values, 'health-host') ?? (env.SLUICE_HEALTH_HOST || DEFAULT_HEALTH_HOST);
  return { grace, port, host, failingAfter };
}

/** What the scheduled runs share: the jobs, the service, and where their outcomes are counted. */
interface ScheduledRuns {
  readonly io: CliIo;
  readonly log: Logger;
  /** Aborted on SIGTERM/SIGINT: the schedule stops. */
  readonly signal: AbortSignal;
  readonly jobs: readonly Job[];
  readonly metrics: Metrics;
  readonly health: JobHealth;
  readonly client: Connected['client'];
  readonly stateDir: string;
  readonly telemetry: Telemetry | undefined;
}

/** One scheduled run of a job: its outcome as the scheduler counts it (a failure is returned, not thrown). */
async function runScheduled(runs: ScheduledRuns, name: string, runSignal: AbortSignal): Promise<RunOutcome> {
  const { log, metrics } = runs;
  const job = runs.jobs.find((j) => j.name === name)!;
  const { events } = jobEvents(name, log, runs.io.stderr, false);
  // The metrics count the run as its history record does, credits of a failed run included.
  let recorded: RunRecord | undefined;
  try {
    const own: RunEvents = { ...events, onRecorded: (r) => (recorded = r), onDrift: (d) => (metrics.drifted(name), events.onDrift?.(d)), onNotification: (n) => metrics.notified(name, n.delivered) };
    const summary = await withRunTelemetry(name, own, (traced) => runJob(job, { client: runs.client, stateDir: runs.stateDir, signal: runSignal, events: traced }));
    log.info('job finished', finishedLogFields(summary, log.format, false));
    return { rows: summary.rows, bytes: summary.bytes, credits: summary.credits };
  } catch (error) {
    return { rows: 0, bytes: 0, credits: recorded?.credits ?? 0, error };
  } finally {
    // Each run's spans and metrics leave when it ends, not at the next export interval.
    void runs.telemetry?.flush();
  }
}

/** A finished run in the job's health; a failure logged unless the job is already known to be failing. */
function recordOutcome({ health, log, signal }: ScheduledRuns, job: string, outcome: FinishedRun): void {
  const at = new Date();
  if (outcome.ok) health.succeeded(job, at);
  else if (signal.aborted) health.stopped(job, at);
  else {
    health.failed(job, at, outcome.error);
    // A failing job's runs that fail the same way are said once (logHealthChange), not every run.
    if (!health.isFailing(job)) log.error(outcome.error instanceof Error ? outcome.error.message : String(outcome.error), { job, duration_ms: Math.round(outcome.durationMs) });
  }
}

function nextRunOf(job: Job): Date | undefined {
  return Scheduler.nextRun({ name: job.name, schedule: job.schedule!, timezone: job.timezone }, new Date());
}

async function serveHealth(runs: ScheduledRuns, scheduler: Scheduler, port: number, host: string): Promise<HealthServer> {
  const next = (name: string) => {
    const job = runs.jobs.find((j) => j.name === name);
    return job === undefined ? undefined : nextRunOf(job);
  };
  const server = await startHealthServer({ port, host, metrics: runs.metrics, healthy: () => !scheduler.stopping, health: runs.health, nextRun: next });
  runs.log.info('health server listening', { url: server.url, host: server.host });
  return server;
}

/** Waits for SIGTERM/SIGINT, then stops the schedule: runs in flight get `grace` seconds. */
async function stopOnSignal({ log, signal }: ScheduledRuns, scheduler: Scheduler, grace: number): Promise<number> {
  await new Promise<void>((resolveWait) => {
    if (signal.aborted) resolveWait();
    signal.addEventListener('abort', () => resolveWait(), { once: true });
  });
  log.info('stopping: no new runs; stopping runs in flight (their executions are kept for the next run)', { running: scheduler.running, grace_seconds: grace });
  const { abandoned } = await scheduler.stop(grace * 1000, signal.reason);
  if (abandoned.length > 0) {
    log.error('runs did not stop within the grace period', { jobs: abandoned });
    return EXIT.other;
  }
  log.info('stopped');
  return EXIT.ok;
}

/** Said once per change of a job's health, not once per failed run. */
function logHealthChange(log: Logger, change: HealthChange, failingAfter: number): void {
  const { state } = change;
  const cause = state.lastFailure;
  const fields = { job: state.job, consecutive_failures: state.consecutiveFailures, ...(cause ? { code: cause.code } : {}) };
  if (change.kind === 'failing') {
    log.error(`job failing: its last ${failingAfter} runs failed (${cause?.code}: ${cause?.message}); /readyz answers 503 until a run succeeds, and further failures of this kind are not logged one by one`, fields);
  } else if (change.kind === 'cause changed') {
    log.error(`job still failing, now for another reason (${cause?.code}: ${cause?.message}; was ${change.previous.code})`, fields);
  } else {
    log.info(`job recovered: a run succeeded after failing (${cause?.code})`, fields);
  }
}
