/** The source resolved: the execution found or started, and waited for until its result can be read. */
import type { ExecutionStatus } from '../../protocol/index.ts';
import { resolveSource, type ResolvedSource, type StreamClient, type StreamSource } from '../source.ts';
import { abortError, cancelQuietly } from './abort.ts';
import type { StreamOptions } from './options.ts';

/** The execution, once its result can be read. */
export interface Ready {
  readonly executionId: string;
  /** This stream (or, for an execution id, the caller earlier) started it; false for a stored result reused. */
  readonly started: boolean;
  readonly status: ExecutionStatus;
}

export interface Resolution extends Ready {
  readonly resolved: ResolvedSource;
}

/**
 * Finds or starts the execution of `source` and waits for it (`onExecution` as soon as it is known).
 * On abort while waiting, `cancelOnAbort` cancels the execution.
 */
export async function resolveReady(client: StreamClient, source: StreamSource, options: StreamOptions): Promise<Resolution> {
  const { signal, cancelOnAbort, allowPartialResults } = options;
  let resolved: ResolvedSource | undefined;
  try {
    const found = await resolveSource(client, source, {
      signal,
      allowPartialResults,
      onExecution: (r) => {
        resolved = r;
        options.onExecution?.(r.execution.id, { started: r.started });
      },
    });
    return { executionId: found.resolved.execution.id, started: found.resolved.started, status: found.status, resolved: found.resolved };
  } catch (error) {
    // Only an execution still running is worth cancelling: a finished one has nothing to stop.
    if (signal?.aborted && cancelOnAbort && resolved !== undefined) await cancelQuietly(resolved);
    throw abortError(error, signal, 'stream');
  }
}
