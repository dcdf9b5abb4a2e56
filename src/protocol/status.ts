import { z } from 'zod';
import { ExecutionStateSchema } from './states.ts';
import { TimestampSchema } from './common.ts';

const int = () => z.number().int();

/** service-interface.md 2.2; protocol.md section 4. `row_count` etc. describe one page, `total_*` the whole result. */
export const ResultMetadataSchema = z.object({
  column_names: z.array(z.string()),
  column_types: z.array(z.string()),
  row_count: int().nonnegative(),
  result_set_bytes: int().nonnegative(),
  total_row_count: int().nonnegative(),
  total_result_set_bytes: int().nonnegative(),
  datapoint_count: int().nonnegative(),
  pending_time_millis: int().nonnegative().optional(),
  execution_time_millis: int().nonnegative().optional(),
});
export type ResultMetadata = z.infer<typeof ResultMetadataSchema>;

/** service-interface.md 2.3. */
export const ExecutionErrorSchema = z.object({
  type: z.string(),
  message: z.string(),
  metadata: z.object({ line: int().optional(), column: int().optional() }).loose().optional(),
});
export type ExecutionError = z.infer<typeof ExecutionErrorSchema>;

/**
 * The status object (service-interface.md 2.1). Every field is optional in the interface; protocol.md
 * section 2 makes `execution_id`, `state`, `is_execution_finished` and `submitted_at` always present on ours.
 * Unknown fields are tolerated (stripped), as clients must.
 */
export const ExecutionStatusSchema = z.object({
  execution_id: z.string(),
  query_id: int().optional(),
  state: ExecutionStateSchema,
  is_execution_finished: z.boolean(),
  submitted_at: TimestampSchema.optional(),
  execution_started_at: TimestampSchema.optional(),
  execution_ended_at: TimestampSchema.optional(),
  cancelled_at: TimestampSchema.optional(),
  expires_at: TimestampSchema.optional(),
  execution_cost_credits: z.number().optional(),
  queue_position: int().optional(),
  max_inflight_interactive_executions: int().optional(),
  max_inflight_interactive_reached: int().optional(),
  result_metadata: ResultMetadataSchema.optional(),
  error: ExecutionErrorSchema.optional(),
});
export type ExecutionStatus = z.infer<typeof ExecutionStatusSchema>;
/** What the service emits (the state spelled as service-interface.md spells it). */
export type ExecutionStatusOut = z.input<typeof ExecutionStatusSchema>;
