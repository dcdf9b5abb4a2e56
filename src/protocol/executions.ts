import { z } from 'zod';
import { ParameterValueSchema, PerformanceSchema } from './common.ts';
import { ExecutionStateSchema } from './states.ts';

/** POST /v1/sql/execute */
export const ExecuteSqlRequestSchema = z.strictObject({
  sql: z.string().min(1).describe('The SQL text to execute'),
  performance: PerformanceSchema.optional(),
  query_parameters: z
    .record(z.string(), ParameterValueSchema)
    .refine((m) => Object.keys(m).length === 0, 'raw SQL takes no parameters: write the values into the SQL, or save it as a query')
    .optional()
    .describe('Accepted only empty (a client may send {}): raw SQL has no parameters'),
});
export type ExecuteSqlRequest = z.infer<typeof ExecuteSqlRequestSchema>;

/** POST /v1/query/{query_id}/execute */
export const ExecuteQueryRequestSchema = z.strictObject({
  query_parameters: z.record(z.string(), ParameterValueSchema).optional().describe('Values by parameter name'),
  performance: PerformanceSchema.optional(),
});
export type ExecuteQueryRequest = z.infer<typeof ExecuteQueryRequestSchema>;

/** The answer of both execute operations. */
export const ExecuteResponseSchema = z.object({
  execution_id: z.string(),
  state: ExecutionStateSchema,
});
export type ExecuteResponse = z.infer<typeof ExecuteResponseSchema>;

/** POST /v1/execution/{id}/cancel */
export const CancelResponseSchema = z.object({ success: z.boolean() });
