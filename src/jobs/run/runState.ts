import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { Job } from '../../config/jobSchema.ts';
import { describeOutput } from '../../export/outputConfig.ts';
import { JobBusyError } from '../errors.ts';
import { writeJsonAtomically } from '../../kit/atomicFile.ts';
import { onExitRemove } from '../../exitHooks.ts';
import { processRuns } from '../../kit/processRuns.ts';

/**
 * What survives a killed run: which execution the job was exporting. The next run of the job
 * resumes with that execution (no second execution, no second charge) when it has not expired
 * and the job's source has not changed since (the fingerprint); outputs whose committed
 * manifest already names that execution are skipped, and within the others the parts the
 * killed run completed are kept (their journal lives in each output's staging area, see
 * `openExport` and `resumeAttemptId`).
 */
const RunStateSchema = z.object({
  version: z.literal(1),
  job: z.string(),
  fingerprint: z.string(),
  /** What the outputs were (`outputsFingerprint`): a run with other outputs does not resume. Absent in older files: no resume. */
  outputs: z.string().optional(),
  execution_id: z.string(),
  /** True when this job started the execution (and pays for it): a stop keeps it running for the next run. */
  started: z.boolean(),
  started_at: z.string(),
  /** A run's history holds this execution's credits already (a stopped run that saw its cost): the run that resumes it does not count them again. */
  counted: z.boolean().optional(),
});
export type RunState = z.infer<typeof RunStateSchema>;

/** Changes when anything that decides the rows changes; outputs may change freely. */
export function jobFingerprint(job: Job): string {
  const basis = JSON.stringify({ source: job.source, result: job.result ?? null, performance: job.performance ?? 'medium' });
  return createHash('sha256').update(basis).digest('hex').slice(0, 32);
}

/** Changes when any output changes (path, format, options): those are written by the resumed execution. */
export function outputsFingerprint(job: Pick<Job, 'outputs'>): string {
  return createHash('sha256').update(JSON.stringify(job.outputs.map(describeOutput))).digest('hex').slice(0, 32);
}

/** Whether this run picks up the execution an interrupted run left, and why (shown in logs and the summary). */
export type ResumeDecision =
  | { readonly resume: true; readonly executionId: string; readonly started: boolean; readonly startedAt: string; readonly uncounted: boolean }
  | { readonly resume: false; readonly executionId: string; readonly reason: string; readonly uncounted: boolean };

/** The run state of one job, the only code that reads, writes or clears it (see `jobRunState`). */
export interface JobRunState {
  /**
   * Resume applies only to an interrupted run of the same job (name), the same source (source,
   * result shaping, tier), the same outputs, whose execution can still be read, and that did not
   * end in a failure that would fail again (`failed` forgets those). Anything else is forgotten.
   * Undefined when no interrupted run is known. `readOnly`: decide, forget nothing (a plan).
   * `readable`: true when the execution can still be read, else why not.
   */
  decide(readable: (executionId: string) => Promise<true | string>, options?: { readonly readOnly?: boolean }): Promise<ResumeDecision | undefined>;
  /** Remembers the execution this run started, before waiting for it: a kill from there on resumes it. */
  remember(executionId: string, started: boolean): Promise<void>;
  /** The execution is exported, or can never be: nothing to resume. */
  forget(): Promise<void>;
  /** A run's history now holds the credits of `executionId`: the run resuming it must not count them again. */
  counted(executionId: string): Promise<void>;
  /** The run failed for good: keep the state only for a failure a later run could get past (not a stop). */
  failed(error: unknown, signal: AbortSignal, worthResuming: (error: unknown) => boolean): Promise<void>;
}

export function jobRunState(store: RunStateStore, job: Job): JobRunState {
  const fingerprint = jobFingerprint(job);
  const outputs = outputsFingerprint(job);
  return {
    async decide(readable, options = {}) {
      const previous = await store.read(job.name);
      if (previous === undefined) return undefined;
      const executionId = previous.execution_id;
      // Credits of an execution this job started that no run's history holds yet (the run that
      // started it was stopped before its cost was known, or killed): the next run counts them.
      const uncounted = previous.started && previous.counted !== true;
      const reason =
        previous.fingerprint !== fingerprint
          ? "the job's source, result shaping or tier changed since"
          : previous.outputs !== outputs
            ? "the job's outputs changed since"
            : await readable(executionId).then((r) => (r === true ? undefined : r));
      if (reason !== undefined) {
        // A plan only reports: the run it describes clears the state.
        if (options.readOnly !== true) await store.clear(job.name);
        return { resume: false, executionId, reason, uncounted };
      }
      return { resume: true, executionId, started: previous.started, startedAt: previous.started_at, uncounted };
    },
    remember: (executionId, started) =>
      store.write({ version: 1, job: job.name, fingerprint, outputs, execution_id: executionId, started, started_at: new Date().toISOString() }),
    forget: () => store.clear(job.name),
    async counted(executionId) {
      const previous = await store.read(job.name);
      if (previous?.execution_id === executionId && previous.counted !== true) await store.write({ ...previous, counted: true });
    },
    async failed(error, signal, worthResuming) {
      if (signal.aborted || worthResuming(error)) return;
      await store.clear(job.name);
    },
  };
}

export class RunStateStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  #file(job: string): string {
    return join(this.dir, `${encodeURIComponent(job)}.json`);
  }

  async read(job: string): Promise<RunState | undefined> {
    let text: string;
    try {
      text = await readFile(this.#file(job), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const parsed = RunStateSchema.safeParse(JSON.parse(text));
      return parsed.success && parsed.data.job === job ? parsed.data : undefined;
    } catch {
      return undefined; // a torn or foreign file: start afresh
    }
  }

  /** Written atomically (temp file + rename): a kill leaves the old state or the new one. */
  async write(state: RunState): Promise<void> {
    await writeJsonAtomically(this.#file(state.job), state, { indent: 2 });
  }

  async clear(job: string): Promise<void> {
    await rm(this.#file(job), { force: true });
    // A backfill's chunk records (backfillState.ts) end with the run state.
    await rm(join(this.dir, `${encodeURIComponent(job)}.backfill.json`), { force: true });
  }

  /**
   * Takes the job's lock file so two processes (a `sluice run` next to `sluice schedule`) never
   * run one job at once. A lock left by a process that no longer exists is taken over.
   */
  async lock(job: string): Promise<() => Promise<void>> {
    await mkdir(this.dir, { recursive: true });
    const file = join(this.dir, `${encodeURIComponent(job)}.lock`);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await open(file, 'wx');
        await handle.writeFile(`${process.pid}\n`);
        await handle.close();
        // A command stopped at once (a second Ctrl-C) removes it too on its way out.
        const unregister = onExitRemove(() => rmSync(file, { force: true }));
        return async () => {
          unregister();
          await rm(file, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processRuns(pid)) {
          throw new JobBusyError(job, `process ${pid} holds ${file}`);
        }
        await rm(file, { force: true });
      }
    }
    throw new JobBusyError(job, `could not take ${file}`);
  }
}

