/** What the caller's abort does to a stream: one `AbortError` for every failure, and the execution cancelled when asked. */
import { AbortedError } from '../../client/errors.ts';
import type { ResolvedSource } from '../source.ts';

/** After an abort, every failure is reported as one `AbortError` (the client's, wrapped once). */
export function abortError(error: unknown, signal: AbortSignal | undefined, method: string): unknown {
  if (!signal?.aborted || error instanceof AbortedError) return error;
  return new AbortedError('aborted by the caller', { method, cause: signal.reason });
}

/** Cancels the execution the caller's abort left running, if the service lets it within a few seconds. */
export async function cancelQuietly(resolved: ResolvedSource): Promise<void> {
  try {
    // The caller's signal has fired; the cancel gets its own short deadline instead.
    await resolved.execution.cancel({ signal: AbortSignal.timeout(5_000) });
  } catch {
    // Best effort: the abort is what the caller asked for and what they get; a cancel that failed
    // leaves the execution to finish on its own (it costs what it would have cost anyway).
  }
}
