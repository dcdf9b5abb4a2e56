import { z } from 'zod';
import { ExecutionStateSchema } from './states.ts';
import { TimestampSchema } from './common.ts';
import { ExecutionErrorSchema, ResultMetadataSchema } from './status.ts';

/**
 * A JSON result page (protocol.md section 4). Rows are left as `unknown`: they are parsed losslessly
 * (bigints beyond 2^53) and checked column by column by the typed decoders, which is where a value
 * that does not fit its declared type is reported with its column and row.
 * The same page as an Arrow IPC stream (Accept: application/vnd.apache.arrow.stream, an extension
 * of ours) carries these fields in response headers instead: see arrowPage.ts.
 */
export const ResultPageSchema = z.object({
  execution_id: z.string(),
  query_id: z.number().int().optional(),
  state: ExecutionStateSchema,
  is_execution_finished: z.boolean(),
  submitted_at: TimestampSchema.optional(),
  expires_at: TimestampSchema.optional(),
  execution_started_at: TimestampSchema.optional(),
  execution_ended_at: TimestampSchema.optional(),
  cancelled_at: TimestampSchema.optional(),
  execution_cost_credits: z.number().optional(),
  result: z
    .object({
      rows: z.array(z.record(z.string(), z.unknown())),
      metadata: ResultMetadataSchema,
    })
    .optional(),
  error: ExecutionErrorSchema.optional(),
  next_offset: z.number().int().nonnegative().optional(),
  next_uri: z.string().optional(),
});
export type ResultPage = z.infer<typeof ResultPageSchema>;
export type ResultPageOut = z.input<typeof ResultPageSchema>;

const commaList = z.string().min(1);

/**
 * Query parameters of the results endpoints, as the service parses them from the URL
 * (all strings on the wire). Unknown parameters are rejected with 400 by the service.
 */
export const ResultParamsSchema = z.strictObject({
  limit: z.coerce.number().int().positive().optional().describe('Rows on this page; the server may lower it'),
  offset: z.coerce.number().int().nonnegative().optional().describe('First row, 0-based'),
  columns: commaList.optional().describe('Comma-separated column names; special names in double quotes'),
  filters: z.string().min(1).optional().describe('WHERE-like filter expression (protocol.md section 4)'),
  sort_by: z.string().min(1).optional().describe('`col [asc|desc], ...`'),
  sample_count: z.coerce.number().int().positive().optional().describe('Uniform random sample of about this many rows'),
  allow_partial_results: z.enum(['true', 'false']).optional(),
  ignore_max_datapoints_per_request: z.enum(['true', 'false']).optional(),
});
export type ResultParams = z.infer<typeof ResultParamsSchema>;

/** What a client may pass to shape a result read (camelCase in TypeScript; serialised to the params above). */
export interface ResultOptions {
  limit?: number;
  offset?: number;
  columns?: string[];
  filters?: string;
  sortBy?: string;
  sampleCount?: number;
  allowPartialResults?: boolean;
  ignoreMaxDatapointsPerRequest?: boolean;
}
