import { resolve } from 'node:path';
import { builtins } from '../../../connectors/index.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { type Connection, DEFAULT_STATE_DIR, type Job, MAX_WORKERS } from '../../config/jobSchema.ts';
import { WORKERS_IGNORED } from '../../export/partPlan.ts';
import { runJob, type JobSummary } from '../../jobs/run/runJob.ts';
import { connectLogged } from '../connection.ts';
import { type CommandContext, defineCommand, flag, listOption, type OptionValues, stringOption } from '../command.ts';
import { EXIT, exitCodeOf } from '../exitCodes.ts';
import { type CliIo, type OutputStream, writeOut } from '../io.ts';
import type { Logger } from '../log.ts';
import { jobEvents } from '../jobEvents.ts';
import { errorCode, failureFields, formatFailure, sqlErrorAt, finishedLogFields, formatSummary, messageOf, summaryFields } from '../output/summary.ts';
import { UsageError } from '../usageError.ts';
import { planRun } from '../../jobs/plan/planRun.ts';
import { runShard } from '../../jobs/shards/runShard.ts';
import { formatPlan, formatShard, planFields, shardFields } from '../output/shardSummary.ts';
import { shardSpec } from '../shardSpec.ts';
import type { ShardSpec } from '../../jobs/shards/plan.ts';
import type { ServiceClient } from '../../client/index.ts';
import { spawnShards, type SpawnShardsOptions } from '../shardProcesses.ts';
import { inSpan, type SpanAttributes, type SpanEnd, startTelemetry, traceEnvironment, withRunTelemetry } from '../../telemetry/index.ts';
import { shardAttributes, shardDone } from '../../telemetry/shardSpans.ts';

export const runCommand = defineCommand({
  name: 'run',
  summary: 'Run the jobs of a job file once, now (all of them, or those named with --job)',
  args: 'FILE',
  minArgs: 1,
  options: {
    job: { type: 'string', short: 'j', multiple: true, valueName: 'NAME', description: 'Run only this job (repeatable)' },
    execution: { type: 'string', valueName: 'ID', description: 'Export this existing execution instead of running the source (one job only)' },
    fresh: { type: 'boolean', description: 'Do not resume an interrupted run: start a new execution' },
    workers: {
      type: 'string',
      valueName: 'N|auto',
      description: 'Ignored, with a warning: part threads were removed (they made exports slower); use --processes N for more cores',
    },
    json: { type: 'boolean', description: 'Print each job summary as one JSON object instead of text' },
    'no-progress': { type: 'boolean', description: 'No progress bar, even on a terminal' },
    plan: { type: 'boolean', description: 'Print what a run would do (execute or reuse, credits, rows, parts, shards, outputs) and execute nothing' },
    shard: { type: 'string', valueName: 'I/N', description: 'Run shard I of N of one export (indexes 0 to N-1); every shard needs the same job file, N and run id' },
    shards: { type: 'string', valueName: 'N', description: 'The shard count, with the index from the launcher (JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, CLOUD_RUN_TASK_INDEX)' },
    'run-id': { type: 'string', valueName: 'ID', description: 'The id the shards of one export share, new for each run (default: SLUICE_RUN_ID, the AWS Batch array job, the Cloud Run execution)' },
    processes: { type: 'string', valueName: 'N', description: 'Run the export as N local processes, shard i/N each, one commit' },
  },
  details: [
    'A run that was interrupted after its execution started (killed, or stopped by SIGTERM/SIGINT, which',
    'leave the execution running; `sluice cancel ID` cancels it, `sluice query` cancels its own) resumes on the next',
    'run: the same execution while it has not expired, failed or the job changed (no second charge),',
    'outputs already committed skipped. Part files a killed or stopped run finished are kept; only the',
    'rest of the result is fetched again. A stopped run logs what it kept. --fresh starts anew.',
    'The summary (rows, files, bytes, credits; one entry per job, failed ones with',
    'their error) goes to stdout, logs to stderr. When an output writes to standard output (path: "-"),',
    'stdout carries only that data and the summary goes to stderr.',
    '',
    'One export across processes or machines: start the same command once per shard with --shard I/N',
    '(or --shards N under a Kubernetes Indexed Job) and a run id they share. Shard 0 starts the',
    'execution once and writes the plan; each shard writes its own parts; the last to finish commits.',
    '--processes N does the same with N local processes.',
  ].join('\n'),
  async run({ io, values, positionals, log, signal }) {
    const file = positionals[0]!;
    // Checked before the file is read: a mistake on the command line is reported as such.
    const workers = workersOption(stringOption(values, 'workers'));
    if (workers !== undefined) log.warn(`--${WORKERS_IGNORED}`, { workers });
    const jobFile = await loadJobFile(file, { registry: builtins, env: io.env, cwd: io.cwd });
    const jobs = selectJobs(jobFile.jobs, listOption(values, 'job'));
    const planOnly = flag(values, 'plan');
    // A plan needs the shard count only: no index, no run id.
    const shard = planOnly ? undefined : shardSpec({ shard: stringOption(values, 'shard'), shards: stringOption(values, 'shards'), runId: stringOption(values, 'run-id') }, io.env);
    const processes = stringOption(values, 'processes');
    if (processes !== undefined && !planOnly) return runProcesses({ io, values, log, signal }, file, jobFile.connection, processes, shard, jobs);
    const executionId = stringOption(values, 'execution');
    checkOneExport(jobFile.jobs, jobs, shard, executionId);
    const run: JobsRun = {
      io,
      log,
      signal,
      values,
      jobs,
      executionId,
      stateDir: resolve(io.cwd, jobFile.state_dir ?? DEFAULT_STATE_DIR),
      json: flag(values, 'json'),
      // With data on stdout, anything else written there would corrupt it (an extra NDJSON line, an unreadable Parquet file).
      summaryOut: jobs.some((job) => job.outputs.some((output) => output.path === '-')) ? io.stderr : io.stdout,
    };
    // OpenTelemetry when the environment asks for it (OTEL_EXPORTER_OTLP_ENDPOINT): before connecting, so the clients carry trace context.
    const telemetry = await startTelemetry(io.env, 'run', (message) => log.warn(message));
    // A shard of N spends 1/N of the key's rate: N shards together stay within it.
    const connection = await connectLogged(jobFile.connection, io, log, signal, false, shard === undefined ? 1 : 1 / shard.count);
    try {
      if (planOnly) return await printPlans(run, connection.client, connection.embedded);
      if (shard !== undefined) return await runOneShard(run, connection.client, shard);
      return await runJobs(run, connection.client);
    } finally {
      // Side by side: the embedded service flushes its own spans as it closes, and a collector that
      // is down then costs one exporter timeout, not two.
      await Promise.all([connection.close(), telemetry?.shutdown()]);
    }
  },
});

/** What one `sluice run` (not --processes) decided from its command line and job file. */
interface JobsRun {
  readonly io: CliIo;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly values: OptionValues;
  readonly jobs: readonly Job[];
  readonly executionId: string | undefined;
  /** Resolved against the current folder: where the run keeps its state. */
  readonly stateDir: string;
  readonly json: boolean;
  /** Where the summaries go: stdout, unless an output writes its data there. */
  readonly summaryOut: OutputStream;
}

/** --processes N: this process starts the shards as N child processes and waits for them. */
async function runProcesses(
  { io, values, log, signal }: Pick<CommandContext, 'io' | 'values' | 'log' | 'signal'>,
  file: string,
  connection: Connection | undefined,
  processes: string,
  shard: ShardSpec | undefined,
  jobs: readonly Job[],
): Promise<number> {
  if (shard !== undefined) throw new UsageError(`--processes starts the shards itself: leave out ${shard.from}`);
  if (stringOption(values, 'execution') !== undefined) throw new UsageError('--processes runs the export: leave out --execution');
  const args = [
    file,
    ...listOption(values, 'job').flatMap((j) => ['--job', j]),
    ...(flag(values, 'json') ? ['--json'] : []),
    ...(flag(values, 'fresh') ? ['--fresh'] : []),
    '--no-progress',
  ];
  // The run's span, whose trace the shards continue, when the environment asks for OpenTelemetry.
  const telemetry = await startTelemetry(io.env, 'run', (message) => log.warn(message));
  // One service for all shards: on the embedded service, this process opens (or finds) the
  // data folder's service and holds it while the shards run; they find it through the folder.
  const shared = isRemote(connection) ? undefined : await connectLogged(connection, io, log, signal);
  try {
    const job: SpanAttributes = jobs.length === 1 ? { 'sluice.job': jobs[0]!.name } : {};
    return await inSpan('sluice.job.run', { ...job, 'sluice.shard.count': Number(processes) }, (span) =>
      tracedShards(span, { io, log, signal, processes, args, runId: stringOption(values, 'run-id') }),
    );
  } finally {
    await Promise.all([shared?.close(), telemetry?.shutdown()]);
  }
}

/** The shard processes of a run, started inside its span: each continues the run's trace (TRACEPARENT in its environment). */
async function tracedShards(span: SpanEnd, options: SpawnShardsOptions): Promise<number> {
  const exit = await spawnShards({ ...options, io: { ...options.io, env: { ...options.io.env, ...traceEnvironment() } } });
  span.set({ 'process.exit.code': exit });
  if (exit !== EXIT.ok) span.failed('SHARD_FAILED');
  return exit;
}

/** A shard and --execution each export one job, and a shard's execution is picked by shard 0. */
function checkOneExport(all: readonly Job[], jobs: readonly Job[], shard: ShardSpec | undefined, executionId: string | undefined): void {
  if (shard !== undefined && jobs.length !== 1) throw new UsageError(`${shard.from}: a sharded run exports one job: name it with --job (the file has ${all.map((j) => j.name).join(', ')})`);
  if (shard !== undefined && executionId !== undefined) throw new UsageError(`${shard.from}: shard 0 picks the execution; leave out --execution`);
  if (executionId !== undefined && jobs.length !== 1) throw new UsageError(`--execution exports one execution: name exactly one job with --job (the file has ${all.length})`);
}

/** --plan: what each job would do, executing nothing. */
async function printPlans(run: JobsRun, client: ServiceClient, embedded: boolean): Promise<number> {
  const { io, json, stateDir, executionId } = run;
  // Paths as resolved here (relative ones against this folder): where the run would keep its state and write.
  if (!json) await writeOut(io.stdout, `state_dir: ${stateDir}\n`);
  for (const job of run.jobs) {
    const plan = await planRun(job, { client, stateDir, signal: run.signal, resume: !flag(run.values, 'fresh'), shards: planShards(run.values), embedded, ...(executionId === undefined ? {} : { executionId }) });
    await writeOut(io.stdout, json ? `${JSON.stringify({ ...planFields(plan), state_dir: stateDir })}\n` : formatPlan(plan));
  }
  return EXIT.ok;
}

/** --shard I/N: this process writes one shard of the one job's export. */
async function runOneShard(run: JobsRun, client: ServiceClient, shard: ShardSpec): Promise<number> {
  const { log, signal, json, summaryOut } = run;
  const job = run.jobs[0]!;
  if (job.workers !== undefined) log.warn(`jobs.${job.name}.${WORKERS_IGNORED}`, { job: job.name, workers: job.workers });
  try {
    const summary = await inSpan('sluice.shard', shardAttributes(job.name, shard), (span) => runShard(job, {
      client,
      shard,
      signal,
      events: { onInfo: (message, fields) => log.info(message, fields) },
    }).then((s) => (span.set(shardDone(s)), s)));
    await writeOut(summaryOut, json ? `${JSON.stringify(shardFields(summary))}\n` : formatShard(summary));
    return EXIT.ok;
  } catch (error) {
    if (signal.aborted) throw error;
    return reportFailure(job, error, { log, out: summaryOut, json, extra: { shard: shard.index, shards: shard.count, run_id: shard.runId } });
  }
}

/** The jobs one after another; the exit code is the first failure's. */
async function runJobs(run: JobsRun, client: ServiceClient): Promise<number> {
  const { io, log, signal, json, summaryOut, executionId } = run;
  const showBar = io.stderr.isTTY === true && log.format === 'text' && !flag(run.values, 'no-progress');
  let exit: number = EXIT.ok;
  for (const job of run.jobs) {
    if (signal.aborted) break;
    const { events, done } = jobEvents(job.name, log, io.stderr, showBar);
    let summary: JobSummary;
    try {
      summary = await withRunTelemetry(job.name, events, (events) => runJob(job, {
        client,
        stateDir: run.stateDir,
        signal,
        events,
        ...(executionId === undefined ? {} : { executionId }),
        resume: !flag(run.values, 'fresh'),
      }));
    } catch (error) {
      done();
      if (signal.aborted) throw error;
      // One failing job does not stop the others; the exit code is the first failure's, and every
      // job appears in the summary with its outcome, so the reader sees which one failed and why.
      const code = await reportFailure(job, error, { log, out: summaryOut, json, extra: {} });
      if (exit === EXIT.ok) exit = code;
      continue;
    }
    done();
    log.info('job finished', finishedLogFields(summary, log.format, true));
    await writeOut(summaryOut, json ? `${JSON.stringify(summaryFields(summary))}\n` : formatSummary(summary));
  }
  return exit;
}

/**
 * A failed job in the log and the summary (the shard's fields beside it when it is one); the
 * error's place in the job file when it is an SQL error. Resolves to its exit code.
 */
async function reportFailure(
  job: Job,
  error: unknown,
  to: { log: Logger; out: OutputStream; json: boolean; extra: Record<string, unknown> },
): Promise<number> {
  const code = exitCodeOf(error);
  const sqlAt = sqlErrorAt(job.source, error);
  to.log.error(messageOf(error), { job: job.name, ...to.extra, error: errorCode(error), exit_code: code, ...(sqlAt === undefined ? {} : { sql_at: sqlAt }) });
  await writeOut(to.out, to.json ? `${JSON.stringify({ ...failureFields(job.name, error, code, sqlAt), ...to.extra })}\n` : formatFailure(job.name, error, code, sqlAt));
  return code;
}

function isRemote(connection: Connection | undefined): boolean {
  return connection?.base_url !== undefined && connection.base_url !== '';
}

/** `--workers`, checked as before part threads were removed (a mistake is still one), then ignored. */
function workersOption(text: string | undefined): number | 'auto' | undefined {
  if (text === undefined) return undefined;
  if (text === 'auto') return 'auto';
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > MAX_WORKERS) throw new UsageError(`--workers takes a whole number from 1 to ${MAX_WORKERS} or auto (one per core), got ${JSON.stringify(text)}`);
  return n;
}

/** The shard count a plan is made for: --shards N, --processes N, or the N of --shard I/N (default 1). */
function planShards(values: Record<string, unknown>): number {
  const given = [values.shards, values.processes, typeof values.shard === 'string' ? values.shard.split('/')[1] : undefined].find((v) => typeof v === 'string');
  if (given === undefined) return 1;
  const count = Number(given);
  if (!/^\d+$/.test(String(given).trim()) || count < 1) throw new UsageError(`--plan: the shard count must be a whole number of at least 1, got ${JSON.stringify(given)}`);
  return count;
}

function selectJobs(jobs: readonly Job[], names: readonly string[]): Job[] {
  if (names.length === 0) return [...jobs];
  const unknown = names.filter((n) => !jobs.some((j) => j.name === n));
  if (unknown.length > 0) throw new UsageError(`no job named ${unknown.map((n) => JSON.stringify(n)).join(', ')} (the file has: ${jobs.map((j) => j.name).join(', ')})`);
  return jobs.filter((j) => names.includes(j.name));
}
