import { z } from 'zod';
import { planRun } from '../../jobs/plan/planRun.ts';
import { ToolRefusedError } from '../budget.ts';
import type { ToolCall } from '../context.ts';
import { planSource, planView, SOURCE_ARGS } from '../source.ts';
import { BudgetShape } from './shapes.ts';
import { defineTool } from './tool.ts';
import { findJob } from './runJob.ts';

export const planTool = defineTool({
  name: 'plan',
  title: 'Plan: what a query or job would cost and do',
  description: [
    'Says, executing nothing, what reading SQL, a saved query or an execution would cost (credits) and do (execute anew or reuse a stored result, its rows and bytes when known),',
    "or what running a job of the server's job file would do (the same as `sluice run --plan`: credits, outputs, parts). Also whether the call fits the server's credit budget.",
  ].join(' '),
  input: {
    ...SOURCE_ARGS,
    job: z.string().min(1).optional().describe('A job of the job file (see run_job), instead of sql, query_id or execution_id'),
  },
  output: {
    action: z.enum(['execute', 'reuse', 'resume']).describe('execute: a new execution, charged; reuse: a stored result; resume: an interrupted run of the job'),
    credits: z.number().describe('Credits one run would spend'),
    worst_case_credits: z.number().describe('Credits the call may spend at most (a job with retries may execute again): what the budget is checked against'),
    execution_id: z.string().nullable(),
    reason: z.string(),
    rows: z.number().nullable(),
    bytes: z.number().nullable(),
    outputs: z
      .array(z.object({ url: z.string(), format: z.string(), action: z.enum(['write', 'skip']), parts: z.number().nullable(), committed_execution: z.string().nullable() }))
      .describe('A job: what each output would get'),
    within_budget: z.boolean(),
    refusal: z.string().nullable().describe('Why the budget would refuse the call (null: it fits)'),
    embedded: z.boolean().describe('The embedded local service: credits are counted as the real service would, and cost nothing'),
    budget: BudgetShape,
  },
  writes: false,
  readOnly: true,
  async run(args, call) {
    const { job: name, ...source } = args;
    const planned = name === undefined ? await sourcePlan(source, call) : await jobPlan(name, args, call);
    const refusal = call.session.budget.problem(planned.worst_case_credits) ?? null;
    return { ...planned, within_budget: refusal === null, refusal, embedded: call.server.embedded, budget: call.session.budget.view() };
  },
});

async function sourcePlan(args: Parameters<typeof planSource>[0], call: ToolCall) {
  const plan = planView(await planSource(args, call));
  return { ...plan, worst_case_credits: plan.credits, outputs: [] };
}

async function jobPlan(name: string, args: Record<string, unknown>, call: ToolCall) {
  const extra = Object.keys(SOURCE_ARGS).filter((k) => args[k] !== undefined);
  if (extra.length > 0) throw new ToolRefusedError('INVALID_ARGUMENTS', `job plans a job of the job file: leave out ${extra.join(', ')}`);
  const job = findJob(name, call);
  const plan = await planRun(job, { client: call.server.client, stateDir: call.server.stateDir, signal: call.signal, resume: true, embedded: call.server.embedded });
  return {
    action: plan.action,
    credits: plan.credits,
    worst_case_credits: plan.credits * (1 + (job.retries ?? 0)),
    execution_id: plan.executionId ?? null,
    reason: plan.reason,
    rows: plan.rows ?? null,
    bytes: plan.bytes ?? null,
    outputs: plan.outputs.map((o) => ({ url: o.url, format: o.format, action: o.action, parts: o.parts ?? null, committed_execution: o.committedExecution ?? null })),
  };
}
