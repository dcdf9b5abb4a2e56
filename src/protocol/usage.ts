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
  /** Extension of the local service: the bytes of its stored results (all teams') and their bound. */
  result_store_bytes: z.number().int().optional(),
  result_store_max_bytes: z.number().int().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** A `YYYY-MM-DD` day of the official clients' usage request. */
const DaySchema = z.iso.date({ error: 'must be a date YYYY-MM-DD' });

/**
 * POST /v1/usage: the official clients' form of the usage request, an optional period of days
 * (both ends included). Without one, the current billing cycle is reported.
 */
export const UsageRequestSchema = z
  .strictObject({ start_date: DaySchema.optional(), end_date: DaySchema.optional() })
  .refine((r) => r.start_date === undefined || r.end_date === undefined || r.start_date <= r.end_date, {
    error: 'must not be before start_date',
    path: ['end_date'],
  });
export type UsageRequest = z.infer<typeof UsageRequestSchema>;

/**
 * POST /v1/usage: the answer in the shape the official clients decode (protocol.md section 3):
 * the billing cycles the period overlaps, dates as `YYYY-MM-DD` (the end the cycle's last day).
 */
export const BillingUsageSchema = z.object({
  private_queries: z.number().int(),
  private_dashboards: z.number().int(),
  bytes_used: z.number().int(),
  bytes_allowed: z.number().int(),
  billing_periods: z.array(
    z.object({ start_date: z.string(), end_date: z.string(), credits_used: z.number(), credits_included: z.number() }),
  ),
});
export type BillingUsage = z.infer<typeof BillingUsageSchema>;
