import { z } from 'zod';
import type { Job } from '../../config/jobSchema.ts';
import { planRun } from '../../jobs/plan/planRun.ts';
import { runJob, type JobSummary, type RunEvents } from '../../jobs/run/runJob.ts';
import { ToolRefusedError } from '../budget.ts';
import { chargeOf } from '../ownedExecution.ts';
import type { ToolCall } from '../context.ts';
import { BudgetShape, JOB_RESULT_SHAPE } from './shapes.ts';
import { defineTool } from './tool.ts';

export const runJobTool = defineTool({
  name: 'run_job',
  title: 'Run a job of the job file',
  description: [
    "Runs one job of the server's job file now, as `sluice run FILE --job NAME` does: executes (or reuses) its source and writes its configured outputs, then returns the summary (rows, files, bytes, credits), never the rows.",
    'Refused, executing nothing, when its worst case (credits x (1 + retries)) is over the budget: see plan with job.',
  ].join(' '),
  input: {
    job: z.string().min(1).describe('The job name'),
    fresh: z.boolean().optional().describe('Do not resume an interrupted run of the job: start a new execution'),
  },
  output: {
    job: z.string(),
    ...JOB_RESULT_SHAPE,
    budget: BudgetShape,
  },
  writes: true,
  readOnly: false,
  async run(args, call) {
    const job = findJob(args.job, call);
    const plan = await planRun(job, { client: call.server.client, stateDir: call.server.stateDir, signal: call.signal, resume: args.fresh !== true, embedded: call.server.embedded });
    const worst = plan.credits * (1 + (job.retries ?? 0));
    const settle = call.session.budget.reserve(worst, { job: job.name, action: plan.action, credits: plan.credits, worst_case_credits: worst, reason: plan.reason });
    let summary: JobSummary | undefined;
    try {
      call.facts.recordedByRun = true;
      summary = await runJob(job, { client: call.server.client, stateDir: call.server.stateDir, signal: call.signal, resume: args.fresh !== true, origin: 'mcp', events: runEvents(call) });
    } finally {
      // An unfinished run is charged what it reserved until its execution's cost is known.
      settle(summary?.credits ?? (await chargeOf(plan.action === 'execute', worst, call)));
    }
    return { ...jobResult(summary, call), job: summary.job, budget: call.session.budget.view() };
  },
});

/** What a job run tells the call: its credits for the history and budget, its rows as progress. */
export function runEvents(call: ToolCall): RunEvents {
  return {
    onRecorded: (record) => (call.facts.credits = record.credits),
    onExecution: ({ executionId, started }) => {
      if (started) call.facts.executionId ??= executionId;
      if (started) call.server.log.info('execution started', { execution_id: executionId });
    },
    onProgress: (p) => call.progress(p.rows, p.totalRows, `${p.rows.toLocaleString('en-US')}${p.totalRows === undefined ? '' : ` of ${p.totalRows.toLocaleString('en-US')}`} rows read`),
  };
}

/** A job summary as a tool returns it (and as the call's log line tells it). */
export function jobResult(summary: JobSummary, call: ToolCall) {
  Object.assign(call.facts, { executionId: summary.executionId, rows: summary.rows, files: summary.files, bytes: summary.bytes, credits: summary.credits });
  return {
    execution_id: summary.executionId,
    started_execution: summary.startedExecution,
    resumed: summary.resumed,
    rows: summary.rows,
    files: summary.files,
    bytes: summary.bytes,
    credits: summary.credits,
    ...(summary.creditsLeft === undefined ? {} : { credits_left: summary.creditsLeft }),
    outputs: summary.outputs.map((o) => ({ url: o.url, format: o.format, rows: o.rows, files: o.files, bytes: o.bytes, skipped: o.skipped, ...(o.snapshot === undefined ? {} : { snapshot: o.snapshot }) })),
  };
}

export function findJob(name: string, call: ToolCall): Job {
  const job = call.server.jobs.find((j) => j.name === name);
  if (job !== undefined) return job;
  const names = call.server.jobs.map((j) => j.name);
  throw new ToolRefusedError('UNKNOWN_JOB', names.length === 0 ? `no job named ${JSON.stringify(name)}: the server was started without a job file` : `no job named ${JSON.stringify(name)} (the job file has: ${names.join(', ')})`);
}
