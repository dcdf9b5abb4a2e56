import { commitFor } from './commitFor.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { openDestination } from './storage/openDestination.ts';

/**
 * Checks every output's destination as far as it can be known without writing or spending: the
 * sink's `check` (a local folder that can be written and holds nothing foreign; S3 credentials
 * that resolve and a bucket that answers), and the commit protocol's `check` (an Iceberg output's
 * path holds an Iceberg table whose metadata reads, or nothing). Run before an execution is started, so a destination
 * that cannot work costs nothing; its errors are not worth retrying (src/jobs/run/errorPolicy.ts).
 */
export async function checkOutputs(outputs: readonly ResolvedOutput[], signal: AbortSignal): Promise<void> {
  for (const output of outputs) {
    const destination = openDestination(output);
    const commit = commitFor(output);
    try {
      // A commit that checks the destination itself (with a catalog's vended credentials) does it below.
      if (commit.checksDestination !== true) await destination.check?.(signal, { records: commit.records });
      // What is there must be an output this commit can go on top of (an Iceberg table, not foreign files).
      if (destination.multiFile) await commit.check?.(destination, signal);
    } finally {
      await destination.close();
    }
  }
}
