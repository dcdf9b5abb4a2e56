import { createHash } from 'node:crypto';
import { contractQuarantines, type Expect, type Job } from '../../config/jobSchema.ts';
import type { Commit, CommitProtocol } from '../../export/commit.ts';
import { type OpenedOutput, openOutput } from '../../export/openOutput.ts';
import { describeOutput, type ResolvedOutput } from '../../export/outputConfig.ts';

/**
 * What the outputs hold now, read through the commit seam (`commitFor`: the manifest, an Iceberg
 * table): the one place in src/jobs that decides from committed state whether an output is done.
 * A run, a shard and a plan all ask here (through their output sessions), so a plan says "skip"
 * exactly where a run skips.
 */

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
export function outputFingerprint(job: Pick<Job, 'result'> & Partial<Pick<Job, 'expect'>>, output: ResolvedOutput & { readonly expect?: Expect }): string {
  // A contract that sets rows aside decides which rows the output holds; other contracts publish all or nothing.
  const contract = { ...(contractQuarantines(job.expect) ? { expect: job.expect } : {}), ...(contractQuarantines(output.expect) ? { output_expect: output.expect } : {}) };
  const basis = JSON.stringify({ result: job.result ?? null, output: describeOutput(output), ...contract });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

/** Which export a run would skip an output for: this execution, written the same way, with these rows (when known). */
export interface Wanted {
  readonly executionId: string;
  readonly rows: number | undefined;
  readonly fingerprint: string;
}

/**
 * The commit that holds the wanted export (with its rows, unless the output appends: an append's
 * commit holds earlier runs' rows too), when the output still holds it: that output is done and a
 * run skips it. Any doubt (no commit, unreadable, another execution, other options) means "not
 * committed". Reads only: `read` is the output's committed state, read once by its session.
 */
export async function findCommitted(opened: OpenedOutput, wanted: Wanted, signal: AbortSignal, read: () => Promise<Commit | undefined>): Promise<Commit | undefined> {
  const { destination, commit, output } = opened;
  if (commit === undefined) return undefined;
  const { executionId, rows, fingerprint } = wanted;
  const found = await (commit.find ? commit.find(destination, executionId, fingerprint, signal) : read()).catch(() => undefined);
  if (found === undefined || found.executionId !== executionId || found.fingerprint !== fingerprint) return undefined;
  if (rows !== undefined && output.mode !== 'append' && found.rows !== rows) return undefined;
  return found;
}

/**
 * The output's committed export of the wanted execution (see `findCommitted`): that output is done
 * and the run skips it. It is then tidied as a commit would leave it: a commit a kill cut short is
 * finished (`_SUCCESS`), and what earlier attempts left beside it is swept, so the place holds
 * exactly what the commit lists.
 */
export async function skipCommitted(opened: OpenedOutput, wanted: Wanted, signal: AbortSignal, read: () => Promise<Commit | undefined>): Promise<Committed | undefined> {
  const { destination, commit } = opened;
  const found = await findCommitted(opened, wanted, signal, read);
  if (found === undefined || commit === undefined) return undefined;
  await commit.finish?.(destination, found, signal);
  await destination.sweep?.(async () => (await commit.read(destination, signal))?.owns, signal);
  return { url: destination.url, rows: found.rows, bytes: found.bytes, files: found.files.length, ...(found.snapshot ? { snapshot: found.snapshot } : {}) };
}

/** `skipCommitted` for a caller that holds no session: opens the output (with `commit`, else its own protocol) and closes it. */
export async function committedExport(
  output: ResolvedOutput,
  executionId: string,
  rows: number | undefined,
  fingerprint: string,
  signal: AbortSignal,
  commit?: CommitProtocol,
): Promise<Committed | undefined> {
  const opened = openOutput(output, commit);
  try {
    return await skipCommitted(opened, { executionId, rows, fingerprint }, signal, async () => opened.commit?.read(opened.destination, signal));
  } finally {
    await opened.destination.close();
  }
}
