import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Job } from '../../config/jobSchema.ts';
import { describeOutput, type ResolvedOutput } from '../../export/outputConfig.ts';

/** Which shard of how many this process runs, and the id every shard of the export shares. */
export interface ShardSpec {
  readonly index: number;
  readonly count: number;
  /** Names the export across shards: the same for every shard of one run of the launcher, new for the next. */
  readonly runId: string;
  /** Where index and count came from, for messages: `--shard 1/4`, `JOB_COMPLETION_INDEX=1 with --shards 4`. */
  readonly from: string;
}

export const PLAN_NAME = 'plan.json';
/** Shard 0's record of the execution it started, written as soon as it is known (before the plan). */
export const EXECUTION_NAME = 'execution.json';
export const executionRecordSchema = z.object({ execution_id: z.string(), started: z.boolean() });
export const recordName = (index: number, count: number): string => `shard-${pad(index)}-of-${pad(count)}.json`;
export const journalName = (index: number): string => `journal-${pad(index)}.json`;
export const RECORD_PREFIX = 'shard-';

const pad = (n: number): string => String(n).padStart(5, '0');

const partSchema = z.object({
  /** Name of the part file relative to the output. */
  path: z.string().min(1),
  /** Part k holds rows [first_row, first_row + rows) of the result. */
  first_row: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  /** The shard that writes it. */
  shard: z.number().int().nonnegative(),
});

/**
 * The plan of one sharded export to one output, made once (by shard 0) and written create-only in
 * the output's shared area before any shard writes a part: every shard reads the same execution
 * and writes exactly the parts the plan gives it.
 */
export const planSchema = z.object({
  version: z.literal(1),
  run_id: z.string(),
  job: z.string(),
  /** What the job file says about this job (source, result shaping, outputs): shards of one export agree on it. */
  job_fingerprint: z.string(),
  shard_count: z.number().int().positive(),
  execution_id: z.string(),
  /** Whether making the plan started the execution (and was charged for it), or reused a stored result. */
  started_execution: z.boolean(),
  credits: z.number().nonnegative(),
  created_at: z.string(),
  total_rows: z.number().int().nonnegative(),
  rows_per_part: z.number().int().positive(),
  output: z.object({ url: z.string(), fingerprint: z.string() }),
  /** The committed output this export replaces: its commit is conditional on this version. */
  replaces: z.object({ execution_id: z.string(), version: z.string().nullable() }).nullable(),
  parts: z.array(partSchema),
});
export type Plan = z.infer<typeof planSchema>;
export type PlannedPart = z.infer<typeof partSchema>;

const writtenSchema = z.object({ path: z.string().min(1), first_row: z.number().int().nonnegative(), rows: z.number().int().nonnegative(), bytes: z.number().int().nonnegative(), sha256: z.string() });
export type WrittenPart = z.infer<typeof writtenSchema>;

/** A shard's journal: the parts it completed so far (a retried shard keeps them). */
export const journalSchema = z.object({ version: z.literal(1), execution_id: z.string(), parts: z.array(writtenSchema) });

/** A shard's record, created once when all its parts are written: what the commit publishes. */
export const recordSchema = z.object({
  version: z.literal(1),
  shard: z.number().int().nonnegative(),
  shard_count: z.number().int().positive(),
  execution_id: z.string(),
  files: z.array(writtenSchema),
  /** The result's schema as the manifest describes it (each shard read the same one). */
  schema: z.object({ fields: z.array(z.unknown()), metadata: z.record(z.string(), z.string()) }),
});
export type ShardRecord = z.infer<typeof recordSchema>;

/**
 * Part k holds rows [k * R, min((k + 1) * R, total)), R the output's `max_rows_per_file`, or the
 * rows split evenly over the shards when it has none. An empty result still gets one (empty) part.
 */
export function planParts(total: number, rowsPerPart: number, count: number, name: (part: number) => string): PlannedPart[] {
  const parts = Math.max(1, Math.ceil(total / rowsPerPart));
  // Shard s writes parts [floor(s * P / count), floor((s + 1) * P / count)): contiguous, one read each.
  const owner: number[] = [];
  for (let s = 0; s < count; s++) for (let k = Math.floor((s * parts) / count); k < Math.floor(((s + 1) * parts) / count); k++) owner[k] = s;
  return Array.from({ length: parts }, (_, k) => ({ path: name(k), first_row: k * rowsPerPart, rows: Math.max(0, Math.min(rowsPerPart, total - k * rowsPerPart)), shard: owner[k]! }));
}

/**
 * Rows per part of an output whose parts roll by rows: its `max_rows_per_file`, else the rows split
 * evenly over the shards (undefined while the row count is not known, or when files are cut by
 * values or bytes). A sharded run's plan and `--plan` both count with it.
 */
export function rowsPerPart(output: Pick<ResolvedOutput, 'partitionBy' | 'maxBytesPerFile' | 'maxRowsPerFile'>, rows: number | undefined, shards: number): number | undefined {
  if (output.partitionBy.length > 0 || Number.isFinite(output.maxBytesPerFile)) return undefined;
  if (Number.isFinite(output.maxRowsPerFile)) return output.maxRowsPerFile;
  return rows === undefined ? undefined : Math.max(1, Math.ceil(rows / shards));
}

/** How many of `parts` parts each of `count` shards writes (shard s: parts [floor(s * P / count), floor((s + 1) * P / count))). */
export function partsPerShard(parts: number, count: number): number[] {
  return Array.from({ length: count }, (_, s) => Math.floor(((s + 1) * parts) / count) - Math.floor((s * parts) / count));
}

/** What shards of one export must agree on: the job's source, result shaping and this output. */
export function jobFingerprint(job: Job, outputIndex: number): string {
  const basis = JSON.stringify({ job: job.name, source: job.source, result: job.result ?? null, performance: job.performance ?? null, output: describeOutput(job.outputs[outputIndex]!) });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

/** The shared area's id: one per run id, job and output. */
export function areaId(runId: string, job: string, outputIndex: number): string {
  return createHash('sha256').update(JSON.stringify([runId, job, outputIndex])).digest('hex').slice(0, 20);
}

export function encode(value: unknown): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(value, null, 1)}\n`);
}

export function decode<T>(schema: z.ZodType<T>, bytes: Uint8Array, what: string): T {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new Error(`${what} is not JSON: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`${what} is not a sluice shard record: ${parsed.error.issues[0]?.message ?? 'unexpected shape'}`);
  return parsed.data;
}
