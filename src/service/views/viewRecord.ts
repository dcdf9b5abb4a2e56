import { z } from 'zod';
import { PerformanceSchema, type View } from '../../protocol/index.ts';
import { formatTimestamp } from '../timestamp.ts';
import { fullViewName } from './naming.ts';

/** A materialized view as the service keeps it (memory and one JSON file per view). */
export const ViewRecordSchema = z.object({
  id: z.string(),
  team: z.string(),
  /** `result_<x>`. */
  name: z.string(),
  queryId: z.number().int().positive(),
  cron: z.string().optional(),
  performance: PerformanceSchema,
  isPrivate: z.boolean(),
  /** Bytes of the stored table (the result's total_result_set_bytes); counts toward the storage quota. */
  tableSizeBytes: z.number().int().nonnegative(),
  /** Refresh executions, newest first (at most LAST_EXECUTIONS). */
  lastExecutionIds: z.array(z.string()),
  /** The refresh whose rows the table holds: an older refresh finishing later must not overwrite them. */
  appliedExecutionId: z.string().optional(),
  /** When the scheduler runs the next refresh (persisted, so a run missed while stopped happens at start). */
  nextRunAt: z.number().optional(),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type ViewRecord = z.infer<typeof ViewRecordSchema>;

export const LAST_EXECUTIONS = 10;

/** The view record of protocol.md section 3. */
export function viewView(rec: ViewRecord): View {
  return {
    id: rec.id,
    name: fullViewName(rec.team, rec.name),
    query_id: rec.queryId,
    ...(rec.cron === undefined ? {} : { cron_expression: rec.cron }),
    performance: rec.performance,
    is_private: rec.isPrivate,
    table_size_bytes: rec.tableSizeBytes,
    owner_team: rec.team,
    last_execution_ids: rec.lastExecutionIds,
    created_at: formatTimestamp(rec.createdAt),
    updated_at: formatTimestamp(rec.updatedAt),
  };
}
