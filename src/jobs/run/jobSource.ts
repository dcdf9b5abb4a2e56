import type { Job } from '../../config/jobSchema.ts';
import type { StreamSource } from '../../pipeline/source.ts';
import type { ParameterValue } from '../../protocol/index.ts';
import { openEnd } from '../../config/backfillSchema.ts';

/** The cursor value an incremental run passes: as a saved query parameter value, and as SQL text for a placeholder. */
export interface CursorArgument {
  readonly value: string | number;
  readonly sql: string;
}

/**
 * A job's source as the rest of the runner needs it. This file is the one place in src/jobs that
 * tells the source kinds apart (the YAML's `sql`, `query_id`, `latest`, `view_refresh`); everything
 * else asks `kind` or reads these fields.
 */
export interface JobSourceInfo {
  readonly kind: 'sql' | 'query' | 'latest' | 'view';
  /** The saved query (`query_id`, `latest`). */
  readonly queryId: number | undefined;
  /** Its parameters as the job gives them (recorded in the commit). */
  readonly parameters: Record<string, ParameterValue> | undefined;
  /** `latest`: reuse a stored result at most this old (undefined: any age). */
  readonly maxAgeHours: number | undefined;
  /** The view a `view_refresh` refreshes. */
  readonly view: string | undefined;
}

export function sourceInfo(job: Pick<Job, 'source'>): JobSourceInfo {
  const source = job.source;
  const none = { queryId: undefined, parameters: undefined, maxAgeHours: undefined, view: undefined };
  if ('sql' in source) return { ...none, kind: 'sql' };
  if ('query_id' in source) return { ...none, kind: 'query', queryId: source.query_id, parameters: source.parameters };
  if ('latest' in source) return { ...none, kind: 'latest', queryId: source.latest.query_id, parameters: source.latest.parameters, maxAgeHours: source.latest.max_age_hours };
  return { ...none, kind: 'view', view: source.view_refresh.name };
}

/**
 * The library's stream source for a job's source: the pipeline then starts, waits and cancels. An
 * incremental job's cursor value goes into its saved query parameter or `{{parameter}}` placeholder.
 * `fresh`: a `latest` source executes its saved query anew (its stored result was found too old).
 */
export function jobSource(job: Pick<Job, 'source' | 'performance' | 'incremental' | 'backfill'>, cursor?: CursorArgument, fresh = false): StreamSource {
  // The incremental runs after a backfill: the range's end parameter is open.
  if (job.backfill !== undefined && cursor !== undefined) return withOpenEnd(job, jobSource({ ...job, backfill: undefined }, cursor, fresh));
  const source = job.source;
  const tier = job.performance === undefined ? {} : { performance: job.performance };
  const name = job.incremental?.parameter;
  const info = sourceInfo(job);
  if ('sql' in source) {
    if (cursor === undefined || name === undefined) return { sql: source.sql, ...tier };
    return { sql: source.sql.replace(new RegExp(`\\{\\{\\s*${name}\\s*\\}\\}`, 'g'), () => cursor.sql), ...tier };
  }
  if (info.kind === 'view') return { viewRefresh: info.view!, ...tier };
  const parameters = cursor === undefined || name === undefined ? info.parameters : { ...info.parameters, [name]: cursor.value };
  const age = info.kind === 'latest' && !fresh && info.maxAgeHours !== undefined ? { maxAgeHours: info.maxAgeHours } : {};
  return { queryId: info.queryId!, ...(parameters ? { parameters } : {}), ...age, ...(info.kind === 'query' || fresh ? { fresh: true } : {}), ...tier };
}

function withOpenEnd(job: Pick<Job, 'source' | 'backfill'>, source: StreamSource): StreamSource {
  const end = openEnd(job.backfill!);
  if ('sql' in source) return { ...source, sql: source.sql.replace(new RegExp(`\\{\\{\\s*${end.name}\\s*\\}\\}`, 'g'), () => end.sql) };
  if ('queryId' in source) return { ...source, parameters: { ...source.parameters, [end.name]: end.value } };
  return source;
}
