import type { Execution } from '../client/execution.ts';
import type { ServiceClient } from '../client/service-client.ts';
import type { Job } from '../config/jobSchema.ts';
import type { Performance } from '../protocol/index.ts';

/** Credits of one execution that ran (protocol.md section 6: 10 x tier factor). */
export const TIER_COST: Readonly<Record<Performance, number>> = { medium: 10, large: 20 };

export interface Started {
  readonly execution: Execution;
  /** False when a stored result is exported (a query's latest result): nothing is charged. */
  readonly started: boolean;
}

export type ExecutionClient = Pick<ServiceClient, 'execute' | 'execution' | 'getLatestResult' | 'refreshView'>;

/** Starts (or, for `latest`, finds) the execution of a job's source. */
export async function startExecution(client: ExecutionClient, job: Job, signal: AbortSignal): Promise<Started> {
  const performance = job.performance;
  const source = job.source;
  if ('sql' in source) {
    return { execution: await client.execute({ sql: source.sql }, { performance, signal }), started: true };
  }
  if ('query_id' in source) {
    return { execution: await client.execute({ queryId: source.query_id, parameters: source.parameters }, { performance, signal }), started: true };
  }
  if ('latest' in source) {
    const { query_id, parameters, max_age_hours } = source.latest;
    const execution = await client.getLatestResult(query_id, { parameters, maxAgeHours: max_age_hours, performance, signal });
    return { execution, started: !execution.reused };
  }
  const refreshed = await client.refreshView(source.view_refresh.name, { performance, signal });
  return { execution: client.execution(refreshed.execution_id), started: true };
}
