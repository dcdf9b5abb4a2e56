import type { CommitProtocol } from './commit.ts';
import { commitFor } from './commitFor.ts';
import type { Destination } from './destination.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { openDestination } from './storage/openDestination.ts';

/**
 * An output opened for reading and writing: its destination, and the commit protocol that makes an
 * export of it visible and finds it again (undefined for a single-stream destination, which holds no
 * commit). Whoever opens it closes the destination; an export handed an opened output
 * (`OpenExportOptions.opened`) leaves it open.
 */
export interface OpenedOutput {
  readonly output: ResolvedOutput;
  readonly destination: Destination;
  readonly commit: CommitProtocol | undefined;
}

/** Opens `output`: the one place that creates an output's destination and its commit (`commit`: another protocol, for tests and library callers). */
export function openOutput(output: ResolvedOutput, commit?: CommitProtocol): OpenedOutput {
  const destination = openDestination(output);
  return { output, destination, commit: destination.multiFile ? (commit ?? commitFor(output)) : undefined };
}

/**
 * Checks an opened output as far as it can be known without writing or spending: the sink's
 * `check` (a local folder that can be written and holds nothing foreign; S3 credentials that
 * resolve and a bucket that answers), and the commit protocol's `check` (an Iceberg output's path
 * holds an Iceberg table whose metadata reads, or nothing). Run before an execution is started, so a
 * destination that cannot work costs nothing; its errors are not worth retrying (the job runner's
 * error table).
 */
export async function checkOutput(opened: OpenedOutput, signal: AbortSignal): Promise<void> {
  const { destination, commit } = opened;
  // A commit that checks the destination itself (with a catalog's vended credentials) does it below.
  if (commit?.checksDestination !== true) await destination.check?.(signal, { records: commit?.records ?? [] });
  // What is there must be an output this commit can go on top of (an Iceberg table, not foreign files).
  if (commit !== undefined) await commit.check?.(destination, signal);
}
