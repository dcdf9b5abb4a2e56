import { createHash } from 'node:crypto';
import { contractQuarantines, type Expect, type Job } from '../../config/jobSchema.ts';
import type { Commit, CommitProtocol } from '../../export/commit.ts';
import { commitFor } from '../../export/commitFor.ts';
import type { Destination } from '../../export/destination.ts';
import { describeOutput, type ResolvedOutput } from '../../export/outputConfig.ts';
import { openDestination } from '../../export/storage/openDestination.ts';

/**
 * What the outputs hold now, read through the commit seam (`commitFor`: the manifest, an Iceberg
 * table): the one place in src/jobs that reads committed state. A run, a shard and a plan all ask
 * here, so a plan says "skip" exactly where a run skips.
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

/** The output's commit at an open destination (undefined: none, or a single-stream destination). */
export async function readCommit(output: ResolvedOutput, destination: Destination, signal: AbortSignal): Promise<Commit | undefined> {
  return destination.multiFile ? commitFor(output).read(destination, signal) : undefined;
}

/** Each output's commit (undefined for a single-stream output, or one with none yet). */
export async function readCommits(job: Job, signal: AbortSignal): Promise<(Commit | undefined)[]> {
  const commits: (Commit | undefined)[] = [];
  for (const output of job.outputs) commits.push(await withDestination(output, (destination) => readCommit(output, destination, signal)));
  return commits;
}

/** Which export a run would skip an output for: this execution, written the same way, with these rows (when known). */
interface Wanted {
  readonly executionId: string;
  readonly rows: number | undefined;
  readonly fingerprint: string;
}

/**
 * The commit that holds the wanted export (with its rows, unless the output appends: an append's
 * commit holds earlier runs' rows too), when the output still holds it: that output is done and a
 * run skips it. Any doubt (no commit, unreadable, another execution, other options) means "not
 * committed". Reads only.
 */
async function findCommitted(destination: Destination, output: ResolvedOutput, wanted: Wanted, signal: AbortSignal, commit: CommitProtocol): Promise<Commit | undefined> {
  if (!destination.multiFile) return undefined;
  const { executionId, rows, fingerprint } = wanted;
  const found = await (commit.find ? commit.find(destination, executionId, fingerprint, signal) : commit.read(destination, signal)).catch(() => undefined);
  if (found === undefined || found.executionId !== executionId || found.fingerprint !== fingerprint) return undefined;
  if (rows !== undefined && output.mode !== 'append' && found.rows !== rows) return undefined;
  return found;
}

/** Whether a run reading `executionId` (of `rows` rows, when known) would skip `output`. A plan asks: nothing is touched. */
export async function wouldSkip(job: Job, output: ResolvedOutput, executionId: string, rows: number | undefined, signal: AbortSignal): Promise<boolean> {
  const wanted = { executionId, rows, fingerprint: outputFingerprint(job, output) };
  return (await withDestination(output, (destination) => findCommitted(destination, output, wanted, signal, commitFor(output)))) !== undefined;
}

/**
 * The output's committed export of `executionId` (see `findCommitted`): that output is done and the
 * run skips it. It is then tidied as a commit would leave it: a commit a kill cut short is finished
 * (`_SUCCESS`), and what earlier attempts left beside it is swept, so the place holds exactly what
 * the commit lists.
 */
export async function committedExport(
  output: ResolvedOutput,
  executionId: string,
  rows: number | undefined,
  fingerprint: string,
  signal: AbortSignal,
  commit: CommitProtocol = commitFor(output),
): Promise<Committed | undefined> {
  return withDestination(output, async (destination) => {
    const found = await findCommitted(destination, output, { executionId, rows, fingerprint }, signal, commit);
    if (found === undefined) return undefined;
    await commit.finish?.(destination, found, signal);
    await destination.sweep?.(async () => (await commit.read(destination, signal))?.owns, signal);
    return { url: destination.url, rows: found.rows, bytes: found.bytes, files: found.files.length, ...(found.snapshot ? { snapshot: found.snapshot } : {}) };
  });
}

async function withDestination<T>(output: ResolvedOutput, use: (destination: Destination) => Promise<T>): Promise<T> {
  const destination = openDestination(output);
  try {
    return await use(destination);
  } finally {
    await destination.close();
  }
}
