import { z } from 'zod';
import { ParameterValueSchema, PerformanceSchema } from '../protocol/index.ts';

/**
 * One execution as the service keeps it (memory and disk). The state is the discriminant: each
 * state carries exactly the fields that apply to it, so the status rules of protocol.md section 2
 * ("present when it applies, omitted otherwise") follow from the type.
 */

const ResultInfoSchema = z.object({
  columnNames: z.array(z.string()),
  columnTypes: z.array(z.string()),
  rowCount: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  truncated: z.boolean(),
});

const ExecutionFailureSchema = z.object({
  message: z.string(),
  line: z.number().int().optional(),
  column: z.number().int().optional(),
});
export type ExecutionFailure = z.infer<typeof ExecutionFailureSchema>;

const base = {
  id: z.string(),
  team: z.string(),
  /** 0 for raw SQL. */
  queryId: z.number().int().nonnegative(),
  /** The saved query's version at submission (0 for raw SQL); the latest-result lookup matches on it. */
  queryVersion: z.number().int().nonnegative(),
  /** Effective parameters (defaults filled in), canonical values by name. */
  parameters: z.record(z.string(), ParameterValueSchema),
  sql: z.string(),
  performance: PerformanceSchema,
  submittedAt: z.number(),
  /** 'view': a materialized view refresh (extended timeout; its result becomes the view's table). Absent: interactive. */
  purpose: z.enum(['interactive', 'view']).optional(),
  /** The view a refresh fills. */
  viewId: z.string().optional(),
};

export const ExecutionRecordSchema = z.discriminatedUnion('state', [
  z.object({ ...base, state: z.literal('QUERY_STATE_PENDING') }),
  z.object({ ...base, state: z.literal('QUERY_STATE_EXECUTING'), startedAt: z.number() }),
  z.object({
    ...base,
    state: z.enum(['QUERY_STATE_COMPLETED', 'QUERY_STATE_COMPLETED_PARTIAL']),
    startedAt: z.number(),
    endedAt: z.number(),
    expiresAt: z.number(),
    costCredits: z.number(),
    result: ResultInfoSchema,
  }),
  z.object({
    ...base,
    state: z.literal('QUERY_STATE_FAILED'),
    startedAt: z.number().optional(),
    endedAt: z.number(),
    costCredits: z.number(),
    error: ExecutionFailureSchema,
  }),
  z.object({
    ...base,
    // Records written before the service spelled it with two Ls read the same.
    state: z.enum(['QUERY_STATE_CANCELLED', 'QUERY_STATE_CANCELED']).transform(() => 'QUERY_STATE_CANCELLED' as const),
    startedAt: z.number().optional(),
    cancelledAt: z.number(),
    costCredits: z.number(),
  }),
  z.object({
    ...base,
    state: z.literal('QUERY_STATE_EXPIRED'),
    startedAt: z.number(),
    endedAt: z.number(),
    expiresAt: z.number(),
    costCredits: z.number(),
  }),
]);

export type ExecutionRecord = z.infer<typeof ExecutionRecordSchema>;
export type ExecutionBase = Pick<ExecutionRecord, keyof typeof base>;
export type CompletedExecution = Extract<ExecutionRecord, { result: unknown }>;

export function baseOf(rec: ExecutionRecord): ExecutionBase {
  const { id, team, queryId, queryVersion, parameters, sql, performance, submittedAt, purpose, viewId } = rec;
  return {
    id, team, queryId, queryVersion, parameters, sql, performance, submittedAt,
    ...(purpose === undefined ? {} : { purpose }),
    ...(viewId === undefined ? {} : { viewId }),
  };
}
