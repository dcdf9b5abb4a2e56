import { z } from 'zod';
import { ParameterValueSchema } from './common.ts';

// An extension of the local service (the official service has no such operation): how the
// service's own sandbox reads SQL, judged as the caller's execution of it would be, running none
// of it. A read-only client (the MCP server's --read-only) refuses writing SQL with it before
// anything is submitted, instead of reading statements with a parser of its own.

/** POST /v1/sql/classify */
export const ClassifySqlRequestSchema = z.strictObject({
  sql: z.string().min(1).describe('The SQL text to classify'),
});
export type ClassifySqlRequest = z.infer<typeof ClassifySqlRequestSchema>;

/** POST /v1/query/{query_id}/classify: the saved query's SQL with these parameter values. */
export const ClassifyQueryRequestSchema = z.strictObject({
  query_parameters: z.record(z.string(), ParameterValueSchema).optional().describe('Values by parameter name'),
});
export type ClassifyQueryRequest = z.infer<typeof ClassifyQueryRequestSchema>;

export const ClassifyResponseSchema = z.object({
  /** Some statement creates, fills or drops a table or view (temporary ones included). */
  writes: z.boolean(),
  statements: z.array(z.object({ line: z.number().int(), column: z.number().int(), writes: z.boolean() })),
  /** The first refusal an execution of it would fail with (`line L:C: Not allowed: ...`). */
  denial: z.object({ message: z.string(), line: z.number().int(), column: z.number().int() }).optional(),
});
export type ClassifyResponse = z.infer<typeof ClassifyResponseSchema>;
