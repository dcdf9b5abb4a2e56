import { z } from 'zod';
import { RunHistory } from '../../jobs/run/runHistory.ts';
import { ToolRefusedError } from '../budget.ts';
import { runCharged } from '../ownedExecution.ts';
import { planSource, planView, rememberSql } from '../source.ts';
import { firstRows } from './preview.ts';
import { BudgetShape, ColumnShape } from './shapes.ts';
import { defineTool } from './tool.ts';

export const statusTool = defineTool({
  name: 'status',
  title: 'Status of an execution',
  description: 'The state of an execution (pending, running, completed, failed, ...), its timing, cost, result size and error. Free.',
  input: { execution_id: z.string().min(1) },
  output: {
    execution_id: z.string(),
    state: z.string(),
    finished: z.boolean(),
    query_id: z.number().nullable(),
    submitted_at: z.string().nullable(),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    credits: z.number().nullable().describe('What the execution cost'),
    rows: z.number().nullable(),
    bytes: z.number().nullable(),
    error: z.string().nullable(),
  },
  writes: false,
  readOnly: true,
  async run(args, call) {
    const s = await call.server.client.getStatus(args.execution_id, { signal: call.signal });
    call.facts.executionId = s.execution_id;
    const at = (value: unknown) => (value === undefined || value === null ? null : value instanceof Date ? value.toISOString() : String(value));
    return {
      execution_id: s.execution_id,
      state: s.state,
      finished: s.is_execution_finished,
      query_id: s.query_id ?? null,
      submitted_at: at(s.submitted_at),
      started_at: at(s.execution_started_at),
      ended_at: at(s.execution_ended_at),
      expires_at: at(s.expires_at),
      credits: s.execution_cost_credits ?? null,
      rows: s.result_metadata?.total_row_count ?? null,
      bytes: s.result_metadata?.total_result_set_bytes ?? null,
      error: s.error === undefined ? null : `${s.error.type}: ${s.error.message}`,
    };
  },
});

export const usageTool = defineTool({
  name: 'usage',
  title: 'Credits: the billing cycle and this session',
  description: "The team's billing cycle (credits used and left, executions, storage; needs an Admin key) and this session's credit budget. Free.",
  input: {},
  output: {
    service: z
      .object({ team: z.string(), cycle_start: z.string(), cycle_end: z.string(), credits_used: z.number(), credits_limit: z.number(), credits_left: z.number(), executions: z.number(), storage_bytes: z.number(), storage_quota_bytes: z.number() })
      .nullable(),
    service_error: z.string().nullable().describe('Why the cycle could not be read (a key without the Admin scope)'),
    embedded: z.boolean(),
    budget: BudgetShape,
  },
  writes: false,
  readOnly: true,
  async run(_args, call) {
    const base = { embedded: call.server.embedded, budget: call.session.budget.view() };
    try {
      const u = await call.server.client.getUsage({ signal: call.signal });
      const service = {
        team: u.team,
        cycle_start: String(u.cycle_start),
        cycle_end: String(u.cycle_end),
        credits_used: u.credits_used,
        credits_limit: u.credits_limit,
        credits_left: Math.max(0, u.credits_limit - u.credits_used),
        executions: u.executions,
        storage_bytes: u.storage_bytes,
        storage_quota_bytes: u.storage_quota_bytes,
      };
      return { ...base, service, service_error: null };
    } catch (error) {
      if (call.signal.aborted) throw error;
      return { ...base, service: null, service_error: error instanceof Error ? error.message : String(error) };
    }
  },
});

const MAX_RUNS = 200;

export const runsTool = defineTool({
  name: 'runs',
  title: 'Run history',
  description: `The recorded runs, newest last: jobs run by the CLI, the scheduler or run_job, and every call of this server (origin "mcp"), with outcome, rows, bytes, credits, execution and error. Free.`,
  input: {
    job: z.string().min(1).optional().describe('Only this job (mcp-export for exports, mcp-preview for previews, ...)'),
    last: z.int().min(1).max(MAX_RUNS).optional().describe(`How many (default 20, at most ${MAX_RUNS})`),
  },
  output: { runs: z.array(z.record(z.string(), z.unknown())) },
  writes: false,
  readOnly: true,
  async run(args, call) {
    const runs = await new RunHistory(call.server.stateDir).list({ ...(args.job === undefined ? {} : { job: args.job }), last: args.last ?? 20 });
    return { runs };
  },
});

/** A table name as SQL may reference it: one to three plain identifiers (catalog.schema.table). */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$/;

export const describeTool = defineTool({
  name: 'describe',
  title: "A result's or a table's columns",
  description: [
    'The columns and their types of an execution (free: read from its status) or of a table (e.g. sample.events:',
    'executes `SELECT * FROM table LIMIT 0`, which costs one execution, see plan).',
  ].join(' '),
  input: {
    execution_id: z.string().min(1).optional().describe('An execution'),
    table: z.string().regex(TABLE_NAME, 'a table name: schema.table (letters, digits and _)').optional().describe('A table, e.g. sample.events'),
    performance: z.enum(['medium', 'large']).optional(),
  },
  output: {
    columns: z.array(ColumnShape),
    total_rows: z.number().nullable().describe('Rows of the execution (null for a table)'),
    execution_id: z.string(),
    credits: z.number(),
    budget: BudgetShape,
  },
  writes: false,
  readOnly: false,
  async run(args, call) {
    if ((args.execution_id === undefined) === (args.table === undefined)) throw new ToolRefusedError('INVALID_ARGUMENTS', 'give one of execution_id or table');
    const source = args.table === undefined ? { execution_id: args.execution_id } : { sql: `SELECT * FROM ${args.table.split('.').map((p) => `"${p}"`).join('.')} LIMIT 0`, ...(args.performance ? { performance: args.performance } : {}) };
    const plan = await planSource(source, call);
    const settle = call.session.budget.reserve(plan.credits, planView(plan));
    const read = await runCharged(plan, call, settle, (started) => firstRows(started, 0, call));
    if (read.started) rememberSql(source, read.executionId, call);
    return { columns: read.columns, total_rows: args.table === undefined ? read.totalRows : null, execution_id: read.executionId, credits: call.facts.credits, budget: call.session.budget.view() };
  },
});
