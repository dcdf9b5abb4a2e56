import type { Job } from '../../config/jobSchema.ts';
import type { StreamOptions } from '../../pipeline/stream.ts';

/** How a job reads its result (page requests in flight, wire, server-side shaping): every read of a run, a shard or a part takes these. */
export function readOptions(job: Job): Pick<StreamOptions, 'concurrency' | 'wire' | 'columns' | 'filters' | 'sortBy' | 'allowPartialResults'> {
  return {
    allowPartialResults: job.result?.allow_partial ?? false,
    ...(job.concurrency === undefined ? {} : { concurrency: job.concurrency }),
    ...(job.wire === undefined ? {} : { wire: job.wire }),
    ...(job.result?.columns === undefined ? {} : { columns: job.result.columns }),
    ...(job.result?.filters === undefined ? {} : { filters: job.result.filters }),
    ...(job.result?.sort_by === undefined ? {} : { sortBy: job.result.sort_by }),
  };
}
