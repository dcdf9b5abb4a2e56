import type { Job } from '../../config/jobSchema.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import { knownWire, partFormatOf, partThreadCount, resolveWorkers, type Workers } from '../../export/partPlan.ts';
import { startPartThreads } from '../../export/partWorkers.ts';
import { serialReason } from '../../export/splitRule.ts';
import { startThreadsFor } from '../../export/writeExport.ts';
import { whyOneThread } from './splitRule.ts';

/**
 * How many threads write a job's outputs: the one place in src/jobs that decides it, for a run
 * (through each output's session), a shard and the threads either starts ahead. (`writeExport`
 * counts again for library callers on the wire the rows come over; it never raises what is
 * decided here.)
 */

/** What was asked: `--workers`, else the job's `workers`, else 1 (this thread). */
export function askedWorkers(job: Pick<Job, 'workers'>, override: Workers | undefined): Workers {
  return override ?? job.workers ?? 1;
}

/** The threads a run hands the export: the asked count, or 1 when the run reads once for all (see `whyOneThread`). */
export function runWorkers(job: Job, asked: Workers, warn?: (message: string, fields: Record<string, unknown>) => void): Workers {
  const reason = whyOneThread(job);
  if (reason === undefined) return asked;
  if (resolveWorkers(asked) > 1) warn?.(reason, { workers: resolveWorkers(asked) });
  return 1;
}

/** The part threads `rows` rows in parts of `rowsPerPart` are worth (see `partThreadCount`). */
function countThreads(workers: Workers, rows: number, rowsPerPart: number, wire: 'json' | 'arrow' | undefined): number {
  return partThreadCount(workers, rows, rowsPerPart, wire);
}

/**
 * The part threads an output's rows are worth: one when they pay for no thread (this thread then
 * writes the output). With `auto` and the wire not known before the first page, `auto` goes on to
 * the export, which counts again on the wire the rows come over. An output part threads cannot
 * write keeps the count asked for: opening it says why (a warning).
 */
export function outputThreads(output: ResolvedOutput, workers: Workers, totalRows: number | undefined, wire: 'json' | 'arrow' | undefined): Workers {
  if (totalRows === undefined || resolveWorkers(workers) <= 1 || serialReason(output) !== undefined) return workers;
  const count = countThreads(workers, totalRows, output.maxRowsPerFile, wire);
  return workers === 'auto' && wire === undefined && count > 1 ? 'auto' : count;
}

/**
 * Part threads load their code while the outputs are checked and staged and the first page is
 * read. With the wire not known before the first page (auto), only the threads the Arrow wire pays
 * for (the fewer): a service that answers JSON gets the rest started by the export itself, while
 * threads started for nothing would take CPU from the one that writes.
 */
export function startRunThreads(job: Job, workers: Workers, totalRows: number | undefined): void {
  if (totalRows === undefined || whyOneThread(job) !== undefined) return;
  const wire = job.wire === 'json' ? 'json' : 'arrow';
  for (const output of job.outputs) startThreadsFor(output, workers, totalRows, wire);
}

/** The threads one shard writes its `parts` parts of `rows` rows with (`auto`: as many as the rows pay for). */
export function shardThreads(job: Job, override: Workers | undefined, rows: number, rowsPerPart: number, parts: number): number {
  return Math.min(countThreads(askedWorkers(job, override), rows, rowsPerPart, knownWire(job.wire)), parts);
}

/** A shard's part threads, started while its first page is read. */
export function startShardThreads(output: ResolvedOutput, threads: number): void {
  if (threads > 1 && output.format.module !== undefined) startPartThreads(threads, partFormatOf(output));
}
