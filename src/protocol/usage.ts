import { z } from 'zod';
import { TimestampSchema } from './common.ts';

/** GET /v1/usage (Admin scope): the team's consumption in the current billing cycle. */
export const UsageSchema = z.object({
  team: z.string(),
  cycle_start: TimestampSchema,
  cycle_end: TimestampSchema,
  credits_used: z.number(),
  credits_limit: z.number(),
  executions: z.number().int(),
  storage_bytes: z.number().int(),
  storage_quota_bytes: z.number().int(),
});
export type Usage = z.infer<typeof UsageSchema>;

/**
 * POST /v1/usage: the official clients' form of the usage request. Only the current billing cycle
 * is kept, so a period is refused (400 naming the field) instead of silently ignored.
 */
export const UsageRequestSchema = z.strictObject({
  start_date: z.undefined({ error: 'only the current billing cycle is reported: omit start_date' }).optional(),
  end_date: z.undefined({ error: 'only the current billing cycle is reported: omit end_date' }).optional(),
});
