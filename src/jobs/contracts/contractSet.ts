import type { Job } from '../../config/jobSchema.ts';
import type { ExportSummary } from '../../export/writeExport.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { Committed } from '../output/committedOutput.ts';
import type { OutputSessions } from '../output/outputSession.ts';
import { type ContractWarning, RunContract } from './contract.ts';
import { quarantineOutput, quarantineSession } from './contractQuarantine.ts';
import type { OutputSummary } from '../run/jobRun.ts';

type Warn = ((message: string, fields: Record<string, unknown>) => void) | undefined;

/** An output's quarantine as the run summary reports it (an output's summary, never a snapshot). */
export type QuarantineSummary = Omit<OutputSummary, 'snapshot'>;

/** What a run's contracts add to its summary. */
export interface ContractSummary {
  readonly warnings: readonly ContractWarning[];
  /** A contract that quarantines: the checks that set rows aside (how many each, the first), and each quarantine. */
  readonly quarantined?: readonly ContractWarning[];
  readonly quarantine?: readonly QuarantineSummary[];
}

/**
 * The contracts of one run: the job's `expect` (checked on the one read, before the outputs), and
 * each output's own (checked on the rows that output receives). Which outputs have a quarantine,
 * which of those a run still has to write, and what they add to the summary.
 */
export class ContractSet {
  readonly job: RunContract | undefined;
  /** By the job's output index: the output's own contract. */
  readonly outputs: readonly (RunContract | undefined)[];
  readonly #jobDef: Job;

  private constructor(job: Job, warn: Warn) {
    this.#jobDef = job;
    this.job = job.expect === undefined ? undefined : new RunContract(job, warn);
    this.outputs = job.outputs.map((o, i) => (o.expect === undefined ? undefined : new RunContract(job, warn, undefined, i)));
  }

  /** The job's contracts (undefined: neither the job nor any output has `expect`). */
  static of(job: Job, warn: Warn): ContractSet | undefined {
    return job.expect === undefined && job.outputs.every((o) => o.expect === undefined) ? undefined : new ContractSet(job, warn);
  }

  /** Every contract's columns and row count, from the execution's metadata. */
  beforeFetch(status: ExecutionStatus): void {
    this.job?.beforeFetch(status);
    for (const contract of this.outputs) contract?.beforeFetch(status);
  }

  /** Whether output `i` receives fewer rows than the result has (a contract sets rows aside before it). */
  filters(i: number): boolean {
    return this.job?.quarantines === true || this.outputs[i]?.quarantines === true;
  }

  /** Per output with a quarantine, its commit of this execution (undefined: the run writes it). */
  async committedQuarantines(executionId: string, sessions: OutputSessions, signal: AbortSignal): Promise<Map<number, Committed | undefined>> {
    const found = new Map<number, Committed | undefined>();
    for (const [i, output] of this.#jobDef.outputs.entries()) {
      if (!this.filters(i)) continue;
      found.set(i, await quarantineSession(sessions, i, output).skipIfCommitted(executionId, undefined, signal));
    }
    return found;
  }

  /**
   * Whether output `i` is written again although it holds this execution: its own contract's
   * quarantine is written from the rows that output receives, so the two are written together
   * (writing an output again for an execution it holds commits the same files).
   */
  rewrites(i: number, quarantines: ReadonlyMap<number, Committed | undefined>): boolean {
    return this.outputs[i]?.quarantines === true && quarantines.has(i) && quarantines.get(i) === undefined;
  }

  /** The outputs whose quarantine the job's own contract feeds and this run writes. */
  jobQuarantinesToWrite(quarantines: ReadonlyMap<number, Committed | undefined>): number[] {
    if (this.job?.quarantines !== true) return [];
    return [...quarantines].flatMap(([i, committed]) => (committed === undefined ? [i] : []));
  }

  /** The summary's part: warnings and quarantined checks of every contract, and each quarantine (held or written now). */
  summary(quarantines: ReadonlyMap<number, Committed | undefined> | undefined, written: readonly (readonly [number, ExportSummary])[]): ContractSummary {
    const all = [this.job, ...this.outputs].filter((c) => c !== undefined);
    const quarantining = all.some((c) => c.quarantines);
    if (!quarantining) return { warnings: all.flatMap((c) => c.warnings) };
    const now = new Map(written);
    const quarantine = [...(quarantines ?? new Map<number, Committed | undefined>())].map(([i, held]): QuarantineSummary => {
      const format = this.#jobDef.outputs[i]!.format.type;
      const s = now.get(i);
      if (s !== undefined) return { url: s.url, format, rows: s.rows, files: s.files.length, bytes: s.bytes, skipped: false, resumedFiles: s.resumedFiles };
      return { url: held?.url ?? quarantineOutput(this.#jobDef.outputs[i]!).path, format, rows: held?.rows ?? 0, files: held?.files ?? 0, bytes: held?.bytes ?? 0, skipped: true, resumedFiles: 0 };
    });
    return { warnings: all.flatMap((c) => c.warnings), quarantined: all.flatMap((c) => c.quarantined), quarantine };
  }
}
