import { z } from 'zod';
import type { Job } from '../config/jobSchema.ts';
import { planRun, type JobPlan } from '../jobs/plan/planRun.ts';
import type { StreamSource } from '../pipeline/source.ts';
import { holdsResult, ParameterValueSchema, PERFORMANCE_TIERS, type Performance } from '../protocol/index.ts';
import { ToolRefusedError } from './budget.ts';
import type { ToolCall } from './context.ts';
import { refuseWrites } from './readOnly.ts';

/** The arguments that name what to read, shared by plan, preview, export and describe. */
export const SOURCE_ARGS = {
  sql: z.string().min(1).optional().describe('SQL to execute (DuckDB dialect on the local service). Give exactly one of sql, query_id, execution_id.'),
  query_id: z.int().positive().optional().describe('A saved query to execute, with parameters.'),
  parameters: z.record(z.string(), ParameterValueSchema).optional().describe('Parameters of the saved query (query_id).'),
  execution_id: z.string().min(1).optional().describe('An existing execution to read (free: nothing is executed).'),
  max_age_hours: z
    .number()
    .nonnegative()
    .optional()
    .describe('Reuse a stored result at most this old instead of executing: for query_id its latest result, for sql an execution of the same text by this session. Absent: always execute.'),
  performance: z.enum(PERFORMANCE_TIERS).optional().describe('medium (default, 10 credits an execution) or large (20 credits).'),
};

export interface SourceArgs {
  sql?: string | undefined;
  query_id?: number | undefined;
  parameters?: Record<string, string | number | boolean> | undefined;
  execution_id?: string | undefined;
  max_age_hours?: number | undefined;
  performance?: Performance | undefined;
}

/** What the call would read and what that costs, found by reading only. */
export interface SourcePlan {
  readonly action: 'execute' | 'reuse';
  readonly credits: number;
  readonly execution_id: string | null;
  readonly reason: string;
  readonly rows: number | null;
  readonly bytes: number | null;
  /** How the pipeline reads it: the reused execution itself, or the source to execute. */
  readonly stream: StreamSource;
}

/** Exactly one of sql, query_id, execution_id: a mistake here is the agent's to fix, said plainly. */
export function checkSource(args: SourceArgs): void {
  const given = (['sql', 'query_id', 'execution_id'] as const).filter((k) => args[k] !== undefined);
  if (given.length !== 1) {
    throw new ToolRefusedError('INVALID_ARGUMENTS', given.length === 0 ? 'give one of sql, query_id or execution_id' : `give one of sql, query_id or execution_id, not ${given.join(' and ')}`);
  }
  if (args.parameters !== undefined && args.query_id === undefined) throw new ToolRefusedError('INVALID_ARGUMENTS', 'parameters go with query_id');
  if (args.execution_id !== undefined && (args.max_age_hours !== undefined || args.performance !== undefined)) {
    throw new ToolRefusedError('INVALID_ARGUMENTS', 'execution_id reads an existing execution: leave out max_age_hours and performance');
  }
}

/** The job-file source the `--plan` logic reads (an execution id has none: it is read as it is). */
export function jobSourceOf(args: SourceArgs): Job['source'] {
  if (args.sql !== undefined) return { sql: args.sql };
  const parameters = args.parameters === undefined ? {} : { parameters: args.parameters };
  // max_age_hours 0 accepts no stored result: the query executes.
  if (args.max_age_hours !== undefined && args.max_age_hours > 0) return { latest: { query_id: args.query_id!, ...parameters, max_age_hours: args.max_age_hours } };
  return { query_id: args.query_id!, ...parameters };
}

export function sqlKey(sql: string, performance: Performance): string {
  return `${performance}\u0000${sql}`;
}

/**
 * The plan of a source, by the `--plan` logic (planRun) for SQL and saved queries, by the execution's
 * status for an execution id, and by this session's own executions for SQL with `max_age_hours`.
 */
export async function planSource(args: SourceArgs, call: ToolCall): Promise<SourcePlan> {
  checkSource(args);
  const { client, stateDir } = call.server;
  if (args.execution_id !== undefined) {
    const status = await client.getStatus(args.execution_id, { signal: call.signal });
    const meta = status.result_metadata;
    return { action: 'reuse', credits: 0, execution_id: status.execution_id, reason: `execution ${status.execution_id} exists (${status.state})`, rows: meta?.total_row_count ?? null, bytes: meta?.total_result_set_bytes ?? null, stream: { executionId: status.execution_id } };
  }
  const performance = args.performance ?? 'medium';
  if (args.sql !== undefined && args.max_age_hours !== undefined) {
    const reused = await recentSql(args.sql, performance, args.max_age_hours, call);
    if (reused !== undefined) return reused;
  }
  const job = { name: 'mcp-plan', source: jobSourceOf(args), performance, outputs: [] } satisfies Job;
  const plan: JobPlan = await planRun(job, { client, stateDir, signal: call.signal, resume: false });
  const reuse = plan.action !== 'execute' && plan.executionId !== undefined;
  // Read-only: SQL that would execute and writes is refused here, before anything is submitted.
  if (!reuse && call.server.settings.readOnly) await refuseWrites(args, call);
  return {
    action: reuse ? 'reuse' : 'execute',
    credits: reuse ? 0 : plan.credits,
    execution_id: plan.executionId ?? null,
    reason: plan.reason,
    rows: plan.rows ?? null,
    bytes: plan.bytes ?? null,
    stream: reuse ? { executionId: plan.executionId! } : args.sql !== undefined ? { sql: args.sql, performance } : { queryId: args.query_id!, ...(args.parameters ? { parameters: args.parameters } : {}), fresh: true, performance },
  };
}

/** An execution of the same SQL this session ran, young enough and still readable. */
async function recentSql(sql: string, performance: Performance, maxAgeHours: number, call: ToolCall): Promise<SourcePlan | undefined> {
  const recent = call.session.recentSql.get(sqlKey(sql, performance));
  if (recent === undefined) return undefined;
  const ageHours = (Date.now() - recent.endedAt) / 3_600_000;
  if (ageHours > maxAgeHours) return undefined;
  const status = await call.server.client.getStatus(recent.executionId, { signal: call.signal }).catch(() => undefined);
  if (status === undefined || !holdsResult(status)) return undefined;
  const meta = status.result_metadata;
  return {
    action: 'reuse',
    credits: 0,
    execution_id: recent.executionId,
    reason: `this session ran the same SQL ${(ageHours * 60).toFixed(1)} min ago (execution ${recent.executionId}), within max_age_hours ${maxAgeHours}`,
    rows: meta?.total_row_count ?? null,
    bytes: meta?.total_result_set_bytes ?? null,
    stream: { executionId: recent.executionId },
  };
}

/** Remembers an SQL execution this session started, for a later `max_age_hours`. */
export function rememberSql(args: SourceArgs, executionId: string, call: ToolCall): void {
  if (args.sql === undefined) return;
  call.session.recentSql.set(sqlKey(args.sql, args.performance ?? 'medium'), { executionId, endedAt: Date.now() });
}

/** A plan as the agent sees it (without the internal stream source). */
export function planView(plan: SourcePlan): Omit<SourcePlan, 'stream'> {
  const { stream: _stream, ...view } = plan;
  return view;
}
