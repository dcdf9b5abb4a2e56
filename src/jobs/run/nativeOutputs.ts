import type { Schema } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import { nativeOutputReason, nativeRoute } from '../../export/nativeExport.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { RangeReader } from '../../pipeline/stream.ts';
import type { RunDrift } from '../drift/drift.ts';
import { whyOneThread } from '../output/splitRule.ts';

/**
 * Outputs the one read would feed that the native path writes instead (src/export/nativeExport.ts):
 * like outputs split over part threads, they read their parts by row ranges themselves. Only where
 * nothing of the run needs to see the rows (no job feature that reads once for all, no drift
 * reshaping the output's rows): the same rule as part threads.
 */
export function mayBeNative(job: Job, output: ResolvedOutput): boolean {
  return whyOneThread(job) === undefined && nativeOutputReason(output) === undefined;
}

/** Whether output `index` is written natively, now that the result's schema and the wire are known. */
export function writtenNatively(output: ResolvedOutput, index: number, schema: Schema, reader: RangeReader, drift: RunDrift | undefined): boolean {
  if (drift !== undefined && drift.shape(index, schema, (async function* () {})()).schema !== schema) return false;
  return nativeRoute(output, schema, reader).native;
}
