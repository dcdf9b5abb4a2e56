import { z } from 'zod';

export const PERFORMANCE_TIERS = ['medium', 'large'] as const;
export const PerformanceSchema = z
  .enum(PERFORMANCE_TIERS)
  .describe('Performance tier: `medium` (1x credits) or `large` (2x credits, more engine threads)');
export type Performance = z.infer<typeof PerformanceSchema>;

/** RFC 3339, UTC, with fractional seconds and `Z`. Loose on input: clients accept what servers send. */
export const TimestampSchema = z.string();

/** Every error body: `{"error": "<message>"}`. */
export const ErrorBodySchema = z.object({ error: z.string() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** A query parameter value as sent on the wire. */
export const ParameterValueSchema = z.union([z.string(), z.number(), z.boolean()]);
export type ParameterValue = z.infer<typeof ParameterValueSchema>;

export const SCOPES = ['Read', 'Write', 'Admin'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Longest upload table name and view name. Each becomes a file name in the service's catalog
 * (`<team>.<name>.json`), and file systems stop at 255 bytes per name.
 */
export const MAX_NAME_LENGTH = 128;
