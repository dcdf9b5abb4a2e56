import { z } from 'zod';

/** Output fragments several tools share. */
export const BudgetShape = z
  .object({
    call_limit: z.number().describe('Credits one call may spend at most'),
    session_limit: z.number().describe('Credits this session may spend in all'),
    session_spent: z.number(),
    session_reserved: z.number().describe('Credits held by calls still running'),
    session_left: z.number(),
  })
  .describe("The server's credit budget for this session, after the call");

export const PlanShape = z
  .object({
    action: z.enum(['execute', 'reuse']).describe('execute: a new execution, charged; reuse: a stored result, free'),
    credits: z.number().describe('Credits the call would spend'),
    execution_id: z.string().nullable().describe('The execution it would read, when it exists'),
    reason: z.string(),
    rows: z.number().nullable().describe('Rows of the result, when it exists already'),
    bytes: z.number().nullable(),
  })
  .describe('What reading the source costs and does');

export const ColumnShape = z.object({ name: z.string(), type: z.string().describe("The service's column type, e.g. bigint, decimal(38, 2), timestamp(3) with time zone") });

export const OutputSummaryShape = z.object({
  url: z.string(),
  format: z.string(),
  rows: z.number(),
  files: z.number(),
  bytes: z.number(),
  skipped: z.boolean().describe('Already held this execution, written the same way: nothing rewritten'),
  snapshot: z.string().optional().describe('Iceberg outputs: the snapshot committed'),
});

/** A job run's summary as run_job and export return it (see jobResult). */
export const JOB_RESULT_SHAPE = {
  execution_id: z.string(),
  started_execution: z.boolean().describe('This call started the execution (false: an existing one was read)'),
  resumed: z.boolean().describe('An interrupted run of the job was picked up'),
  rows: z.number(),
  files: z.number(),
  bytes: z.number(),
  credits: z.number().describe('Credits the run spent'),
  credits_left: z.number().optional().describe("Credits left in the team's billing cycle (an Admin key)"),
  outputs: z.array(OutputSummaryShape),
};
