import type { Schema } from 'apache-arrow';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import { stream, type RangeReader } from '../../pipeline/stream.ts';
import { readOptions } from '../run/readOptions.ts';
import type { SourceDecision } from '../run/sourceDecision.ts';

/**
 * What the service answered the request a run settles its wire with, for `--plan`: the range reader
 * and schema a run decides each output's path on (`writtenNatively`), or why the plan could not ask.
 */
export type ServedWire = { readonly reader: RangeReader; readonly schema: Schema } | { readonly unknown: string; readonly embedded?: true };

export interface ServedWireOptions {
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  /** The connection is the embedded service (this project's own, which serves Arrow pages). */
  readonly embedded?: boolean | undefined;
}

/**
 * Asks the service the way the run does: the job's read of an execution whose result exists
 * (stored, resumed, given) opens with the run's own options, which reads the first page asking for
 * Arrow (`wire: auto`: Arrow when the service answers with it, else JSON pages). Starts nothing
 * and charges nothing. Without a result to read (the run would execute), the service is asked by
 * the first page of the execution the run starts: the plan says the condition, and for the
 * embedded service, which serves Arrow pages, what it answers.
 */
export async function servedWire(job: Job, decision: SourceDecision, options: ServedWireOptions): Promise<ServedWire> {
  if (decision.executionId === undefined || decision.rows === undefined) {
    const unknown = 'the service tells on the first page of the execution the run starts, which a plan does not start';
    return options.embedded === true ? { unknown, embedded: true } : { unknown };
  }
  const result = stream(options.client, { executionId: decision.executionId }, { ...readOptions(job), signal: options.signal, cancelOnAbort: false });
  try {
    const reader = await result.rangeReader();
    if (reader === undefined) return { unknown: 'the result cannot be read by row ranges (filters, or a client that cannot be copied)' };
    return { reader, schema: await result.schema() };
  } catch (error) {
    if (options.signal.aborted) throw error;
    return { unknown: `the service could not be asked for a page of execution ${decision.executionId}: ${error instanceof Error ? error.message : String(error)}` };
  }
}
