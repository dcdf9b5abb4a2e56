import { z } from 'zod';
import { MAX_NAME_LENGTH, PerformanceSchema, TimestampSchema } from './common.ts';
import { VIEW_SHORT_NAME } from './ids.ts';

/** POST /v1/materialized-views (upsert) */
export const UpsertViewRequestSchema = z.strictObject({
  name: z.string().max(MAX_NAME_LENGTH, `at most ${MAX_NAME_LENGTH} characters`).regex(VIEW_SHORT_NAME, 'a view name starts with result_ and holds a-z, 0-9 and _').describe('result_<x>'),
  query_id: z.number().int().positive().describe('The saved query whose result the view stores'),
  cron_expression: z.string().optional().describe('Five-field cron; every 15 minutes at the most, weekly at the least'),
  performance: PerformanceSchema.optional(),
  is_private: z.boolean().optional(),
});
export type UpsertViewRequest = z.infer<typeof UpsertViewRequestSchema>;

export const UpsertViewResponseSchema = z.object({ execution_id: z.string(), name: z.string() });

/** POST /v1/materialized-views/{name}/refresh */
export const RefreshViewRequestSchema = z.strictObject({ performance: PerformanceSchema.optional() });
export const RefreshViewResponseSchema = z.object({ execution_id: z.string(), sql_id: z.string() });

/** The view record. */
export const ViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  query_id: z.number().int(),
  cron_expression: z.string().optional(),
  performance: PerformanceSchema,
  is_private: z.boolean(),
  table_size_bytes: z.number().int().nonnegative(),
  owner_team: z.string(),
  last_execution_ids: z.array(z.string()),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
});
export type View = z.infer<typeof ViewSchema>;

export const ViewListSchema = z.object({
  materialized_views: z.array(ViewSchema),
  next_offset: z.number().int().optional(),
});
export type ViewList = z.infer<typeof ViewListSchema>;

export const DeleteViewResponseSchema = z.object({ message: z.string() });
