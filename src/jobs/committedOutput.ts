import { createHash } from 'node:crypto';
import type { Job } from '../config/jobSchema.ts';
import type { CommitProtocol } from '../export/commit.ts';
import { commitFor } from '../export/commitFor.ts';
import { describeOutput, type ResolvedOutput } from '../export/outputConfig.ts';
import { openDestination } from '../export/storage/openDestination.ts';

export interface Committed {
  readonly url: string;
  readonly rows: number;
  readonly bytes: number;
  readonly files: number;
  /** A table format's snapshot. */
  readonly snapshot?: string;
}

/**
 * What, besides the execution, decides the files of one output: the job's result shaping and the
 * output's options. Recorded in the manifest (`ExportMeta.fingerprint`) so that an output already
 * written for an execution is skipped only when it was written the same way: the same stored
 * result exported with other columns, another sort or another format is written again.
 */
export function outputFingerprint(job: Pick<Job, 'result'>, output: ResolvedOutput): string {
  const basis = JSON.stringify({ result: job.result ?? null, output: describeOutput(output) });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

/**
 * The output's committed export, if its commit says it holds `executionId` with `rows` rows,
 * written with `fingerprint`: that output is done and the run skips it. Any doubt (no commit,
 * unreadable, another execution, other options) means "not committed". A committed output is then
 * tidied as a commit would leave it: a commit a kill cut short is finished (`_SUCCESS`), and what
 * earlier attempts left beside it is swept, so the place holds exactly what the commit lists.
 */
export async function committedExport(
  output: ResolvedOutput,
  executionId: string,
  rows: number | undefined,
  fingerprint: string,
  signal: AbortSignal,
  commit: CommitProtocol = commitFor(output),
): Promise<Committed | undefined> {
  const destination = openDestination(output);
  try {
    if (!destination.multiFile) return undefined;
    const found = await (commit.find ? commit.find(destination, executionId, fingerprint, signal) : commit.read(destination, signal)).catch(() => undefined);
    if (found === undefined || found.executionId !== executionId || found.fingerprint !== fingerprint) return undefined;
    // An append's commit holds earlier runs' rows too: its execution and fingerprint decide.
    if (rows !== undefined && output.mode !== 'append' && found.rows !== rows) return undefined;
    await commit.finish?.(destination, found, signal);
    await destination.sweep?.(async () => (await commit.read(destination, signal))?.owns, signal);
    return { url: destination.url, rows: found.rows, bytes: found.bytes, files: found.files.length, ...(found.snapshot ? { snapshot: found.snapshot } : {}) };
  } finally {
    await destination.close();
  }
}
