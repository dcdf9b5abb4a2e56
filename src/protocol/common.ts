import { z } from 'zod';

/** The real service's tiers; `free` is its legacy name of the smallest, run here as `small`. */
export const PERFORMANCE_TIERS = ['small', 'medium', 'large', 'free'] as const;
export const PerformanceSchema = z
  .enum(PERFORMANCE_TIERS)
  .describe('Performance tier: `small` (0.5x credits), `medium` (1x), `large` (2x, more engine threads), or the legacy `free` (as small); absent: the team plan\'s tier');
export type Performance = z.infer<typeof PerformanceSchema>;

/** RFC 3339, UTC, with fractional seconds and `Z`. Loose on input: clients accept what servers send. */
export const TimestampSchema = z.string();

/** Every error body: `{"error": "<message>"}`. */
export const ErrorBodySchema = z.object({ error: z.string() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** A query parameter value as sent on the wire. */
export const ParameterValueSchema = z.union([z.string(), z.number(), z.boolean()]);
export type ParameterValue = z.infer<typeof ParameterValueSchema>;

/**
 * API key scopes, each including the ones before: the real service's `Read` (execute SQL and saved
 * queries, read results, get and list) and `Read/Write` (also write queries, uploads and views),
 * and this service's own `Admin` (the team's keys and limits: its settings routes).
 */
export const SCOPES = ['Read', 'Read/Write', 'Admin'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Longest upload table name and view name. Each becomes a file name in the service's catalog
 * (`<team>.<name>.json`), and file systems stop at 255 bytes per name.
 */
export const MAX_NAME_LENGTH = 128;
