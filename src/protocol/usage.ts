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
