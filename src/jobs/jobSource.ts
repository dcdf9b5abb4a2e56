import type { Job } from '../config/jobSchema.ts';
import type { StreamSource } from '../pipeline/source.ts';

/** The cursor value an incremental run passes: as a saved query parameter value, and as SQL text for a placeholder. */
export interface CursorArgument {
  readonly value: string | number;
  readonly sql: string;
}

/**
 * The library's stream source for a job's source: the pipeline then starts, waits and cancels. An
 * incremental job's cursor value goes into its saved query parameter or `{{parameter}}` placeholder.
 */
export function jobSource(job: Pick<Job, 'source' | 'performance' | 'incremental'>, cursor?: CursorArgument): StreamSource {
  const source = job.source;
  const tier = job.performance === undefined ? {} : { performance: job.performance };
  const name = job.incremental?.parameter;
  if ('sql' in source) {
    if (cursor === undefined || name === undefined) return { sql: source.sql, ...tier };
    return { sql: source.sql.replace(new RegExp(`\\{\\{\\s*${name}\\s*\\}\\}`, 'g'), () => cursor.sql), ...tier };
  }
  if ('query_id' in source) {
    const parameters = cursor === undefined || name === undefined ? source.parameters : { ...source.parameters, [name]: cursor.value };
    return { queryId: source.query_id, ...(parameters ? { parameters } : {}), fresh: true, ...tier };
  }
  if ('latest' in source) {
    const { query_id, parameters, max_age_hours } = source.latest;
    return { queryId: query_id, ...(parameters ? { parameters } : {}), ...(max_age_hours === undefined ? {} : { maxAgeHours: max_age_hours }), ...tier };
  }
  return { viewRefresh: source.view_refresh.name, ...tier };
}
