import type { Job } from '../config/jobSchema.ts';
import type { StreamSource } from '../pipeline/source.ts';

/** The library's stream source for a job's source: the pipeline then starts, waits and cancels. */
export function jobSource(job: Pick<Job, 'source' | 'performance'>): StreamSource {
  const source = job.source;
  const tier = job.performance === undefined ? {} : { performance: job.performance };
  if ('sql' in source) return { sql: source.sql, ...tier };
  if ('query_id' in source) return { queryId: source.query_id, ...(source.parameters ? { parameters: source.parameters } : {}), fresh: true, ...tier };
  if ('latest' in source) {
    const { query_id, parameters, max_age_hours } = source.latest;
    return { queryId: query_id, ...(parameters ? { parameters } : {}), ...(max_age_hours === undefined ? {} : { maxAgeHours: max_age_hours }), ...tier };
  }
  return { viewRefresh: source.view_refresh.name, ...tier };
}
