import type { Job } from '../../config/jobSchema.ts';
import type { Commit, CommitProtocol } from '../../export/commit.ts';
import type { Destination } from '../../export/destination.ts';
import { checkOutput, type OpenedOutput, openOutput } from '../../export/openOutput.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { DestinationTraits } from '../../export/splitRule.ts';
import { type ExportMeta, openExport, type OpenExportOptions, type OpenedExport } from '../../export/writeExport.ts';
import { resumeAttemptId } from '../run/attemptId.ts';
import { type Committed, findCommitted, outputFingerprint, skipCommitted } from './committedOutput.ts';

/**
 * One output, opened once for a run: its destination and commit protocol (`openOutput`), its
 * fingerprint, and what it holds now (its commit, read once and handed to every phase that asks:
 * the incremental cursor, schema drift, the skip check, `--plan`, a shard). The destination stays
 * open across the run's attempts and is closed with the session; the export of an attempt writes
 * through it (`OpenExportOptions.opened`). The writer reads the commit once more, under its lease,
 * for the conditional publish: that read is the write's own.
 */
export class OutputSession {
  readonly index: number;
  readonly output: ResolvedOutput;
  readonly opened: OpenedOutput;
  readonly fingerprint: string;
  readonly #job: string;
  #committed: Promise<Commit | undefined> | undefined;

  constructor(job: Job, output: ResolvedOutput, index: number, commit?: CommitProtocol) {
    this.index = index;
    this.output = output;
    this.#job = job.name;
    this.opened = openOutput(output, commit);
    this.fingerprint = outputFingerprint(job, output);
  }

  get destination(): Destination {
    return this.opened.destination;
  }

  get url(): string {
    return this.opened.destination.url;
  }

  /** What the split rule needs of the destination. */
  get traits(): DestinationTraits {
    return { multiFile: this.destination.multiFile, shared: this.destination.shared !== undefined };
  }

  /** The output's commit (undefined: none yet, or a single stream), read once; `forget` reads it again. */
  committed(signal: AbortSignal): Promise<Commit | undefined> {
    return (this.#committed ??= this.readNow(signal));
  }

  /** The commit as it is now (after a write, or to see whether a racing writer committed). */
  async readNow(signal: AbortSignal): Promise<Commit | undefined> {
    const { commit, destination } = this.opened;
    return commit === undefined ? undefined : commit.read(destination, signal);
  }

  /** What the output holds may have changed (an attempt wrote): the next `committed` reads again. */
  forget(): void {
    this.#committed = undefined;
  }

  /** The destination and the commit checked before anything is started (see `checkOutput`). */
  check(signal: AbortSignal): Promise<void> {
    return checkOutput(this.opened, signal);
  }

  /** The commit that holds this execution, written the same way (with `rows`, when known): a run skips the output. Reads only. */
  find(executionId: string, rows: number | undefined, signal: AbortSignal): Promise<Commit | undefined> {
    return findCommitted(this.opened, { executionId, rows, fingerprint: this.fingerprint }, signal, () => this.committed(signal));
  }

  /** As `find`, and tidied as a commit leaves it (see `skipCommitted`): the run skips the output. */
  skipIfCommitted(executionId: string, rows: number | undefined, signal: AbortSignal): Promise<Committed | undefined> {
    return skipCommitted(this.opened, { executionId, rows, fingerprint: this.fingerprint }, signal, () => this.committed(signal));
  }

  /** The staging id an export of `executionId` resumes under (see `resumeAttemptId`). */
  attemptId(executionId: string): string {
    return resumeAttemptId(this.#job, executionId, this.output);
  }

  /** Opens an export of `executionId` through this session's destination and commit (left open). */
  openExport(meta: Pick<ExportMeta, 'executionId'>, options: Omit<OpenExportOptions, 'opened' | 'commit'>): Promise<OpenedExport> {
    this.forget();
    return openExport(this.output, meta, { ...options, opened: this.opened });
  }

  close(): Promise<void> {
    return this.destination.close();
  }
}

/** The sessions of a job's outputs (by output index), and of the extra outputs a feature writes beside them (quarantines). */
export class OutputSessions {
  readonly job: Job;
  readonly all: readonly OutputSession[];
  readonly #extra = new Map<string, OutputSession>();

  constructor(job: Job) {
    this.job = job;
    const all: OutputSession[] = [];
    try {
      for (const [i, output] of job.outputs.entries()) all.push(new OutputSession(job, output, i));
    } catch (error) {
      for (const s of all) void s.close();
      throw error;
    }
    this.all = all;
  }

  at(index: number): OutputSession {
    return this.all[index]!;
  }

  /** Each output's commit, read once (see `OutputSession.committed`). */
  committed(signal: AbortSignal): Promise<(Commit | undefined)[]> {
    return Promise.all(this.all.map((s) => (s.opened.commit === undefined ? undefined : s.committed(signal))));
  }

  /** Every output checked, in order, before anything is started. */
  async check(signal: AbortSignal): Promise<void> {
    for (const session of this.all) await session.check(signal);
  }

  /** A session for an output a feature writes beside output `index` (`key`: which), opened once. */
  extra(key: string, index: number, output: ResolvedOutput): OutputSession {
    let session = this.#extra.get(`${key}:${index}`);
    if (session === undefined) this.#extra.set(`${key}:${index}`, (session = new OutputSession(this.job, output, index)));
    return session;
  }

  /** A new attempt: what the outputs hold is read again. */
  forget(): void {
    for (const s of [...this.all, ...this.#extra.values()]) s.forget();
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.all, ...this.#extra.values()].map((s) => s.close()));
  }
}
