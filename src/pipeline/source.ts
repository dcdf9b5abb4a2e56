import type { Execution } from '../client/execution.ts';
import type { ServiceClient } from '../client/serviceClient.ts';
import { InvalidArgumentError } from '../client/errors.ts';
import type { ExecutionStatus, ParameterValue, Performance } from '../protocol/index.ts';

/**
 * What to read: an execution that exists, SQL to run, a saved query (its latest result, or a fresh
 * run), or a materialized view to refresh. The pipeline is the one place that dispatches on it.
 */
export type StreamSource =
  | {
      executionId: string;
      /** The caller started it earlier (an interrupted run resumed): reported as `started`. */
      started?: boolean;
    }
  | { sql: string; performance?: Performance }
  | { viewRefresh: string; performance?: Performance }
  | {
      queryId: number;
      parameters?: Record<string, ParameterValue>;
      /** Reuse the latest result only if it ended at most this long ago; absent: any age. */
      maxAgeHours?: number;
      /** Always start a new execution, never reuse a stored result. */
      fresh?: boolean;
      performance?: Performance;
    };

/** The part of `ServiceClient` the pipeline uses (the tests and the bench pass the real client). */
export type StreamClient = Pick<ServiceClient, 'execute' | 'execution' | 'getLatestResult' | 'getResults' | 'getResultsWire'> & Partial<Pick<ServiceClient, 'refreshView' | 'connectionOptions' | 'getResultsCsv'>>;

export interface ResolvedSource {
  readonly execution: Execution;
  /** True when this stream started the execution (SQL, or a query run fresh). */
  readonly started: boolean;
  readonly queryId: number | undefined;
  readonly parameters: Record<string, ParameterValue> | undefined;
}

export interface ResolveOptions {
  signal?: AbortSignal | undefined;
  allowPartialResults?: boolean | undefined;
  /** Called as soon as the execution is known, before waiting for it (so an abort can cancel it). */
  onExecution?: (resolved: ResolvedSource) => void;
}

/** Finds or starts the execution of `source` and waits until its result can be read. */
export async function resolveSource(
  client: StreamClient,
  source: StreamSource,
  options: ResolveOptions,
): Promise<{ resolved: ResolvedSource; status: ExecutionStatus }> {
  const signal = options.signal;
  let resolved: ResolvedSource;
  if ('executionId' in source) {
    resolved = { execution: client.execution(source.executionId), started: source.started ?? false, queryId: undefined, parameters: undefined };
  } else if ('viewRefresh' in source) {
    if (client.refreshView === undefined) throw new InvalidArgumentError('a viewRefresh source needs a client with refreshView', { method: 'stream' });
    const refreshed = await client.refreshView(source.viewRefresh, { performance: source.performance, signal });
    resolved = { execution: client.execution(refreshed.execution_id), started: true, queryId: undefined, parameters: undefined };
  } else if ('sql' in source) {
    const execution = await client.execute({ sql: source.sql }, { performance: source.performance, signal });
    resolved = { execution, started: true, queryId: undefined, parameters: undefined };
  } else if ('queryId' in source) {
    const { queryId, parameters, performance } = source;
    const execution = source.fresh
      ? await client.execute({ queryId, parameters }, { performance, signal })
      : await client.getLatestResult(queryId, { maxAgeHours: source.maxAgeHours, parameters, performance, signal });
    resolved = { execution, started: !execution.reused, queryId, parameters };
  } else {
    throw new InvalidArgumentError(`source must have executionId, sql, queryId or viewRefresh, got ${describeKeys(source)}`, { method: 'stream' });
  }
  options.onExecution?.(resolved);
  const status = await resolved.execution.wait({ signal, allowPartialResults: options.allowPartialResults });
  return { resolved, status };
}

function describeKeys(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  const keys = Object.keys(value);
  return keys.length === 0 ? 'an empty object' : `keys ${keys.join(', ')}`;
}
