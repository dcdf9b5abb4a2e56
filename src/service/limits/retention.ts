import { holdsResult, type ExecutionState } from '../../protocol/index.ts';
import { PeriodicTask } from '../periodic.ts';

/** An execution as the sweeper sees it. */
export interface RetainedExecution {
  id: string;
  /** COMPLETED and COMPLETED_PARTIAL hold a result; EXPIRED may still hold one after a crash. */
  state: ExecutionState;
  expiresAt?: number;
  /** When its record may be forgotten (`forgetAt`); absent while it runs. */
  forgetAt?: number;
}

/** The few operations the sweeper needs from the executions and the engine. */
export interface RetentionTarget {
  executions(): Iterable<RetainedExecution>;
  /** Moves a finished execution to EXPIRED and persists it (no-op when it already is). */
  markExpired(id: string): Promise<void>;
  hasResult(id: string): Promise<boolean>;
  /** Deletes the stored result and frees its space. */
  dropResult(id: string): Promise<void>;
  /** Deletes the records of these finished executions (memory and disk); a stored result is dropped before. */
  forget(ids: readonly string[]): Promise<void>;
}

export interface SweepReport {
  /** Executions moved to EXPIRED by this sweep. */
  expired: string[];
  /** Stored results deleted by this sweep. */
  reclaimed: string[];
  /** Execution records deleted by this sweep (kept `limits.execution_record_retention_days` after their result expired or they ended). */
  forgotten: string[];
}

/**
 * Retention (protocol.md section 6): at `expires_at` a result's execution becomes EXPIRED and its
 * stored result is deleted. The state change is persisted before the result goes, so a crash in
 * between leaves an EXPIRED execution with an orphaned result, which the next sweep (after a
 * restart, too) deletes. Records past their own retention are then forgotten, their result (if a
 * crash left one) deleted first. Sweeping again changes nothing: it is idempotent.
 */
export async function sweepExpired(target: RetentionTarget, now: number): Promise<SweepReport> {
  const report: SweepReport = { expired: [], reclaimed: [], forgotten: [] };
  for (const e of [...target.executions()]) {
    const forget = e.forgetAt !== undefined && e.forgetAt <= now;
    if (holdsResult(e)) {
      if (e.expiresAt === undefined || now < e.expiresAt) continue;
      await target.markExpired(e.id);
      report.expired.push(e.id);
    } else if (e.state !== 'QUERY_STATE_EXPIRED') {
      if (forget) report.forgotten.push(e.id);
      continue;
    }
    if (await target.hasResult(e.id)) {
      await target.dropResult(e.id);
      report.reclaimed.push(e.id);
    }
    if (forget) report.forgotten.push(e.id);
  }
  if (report.forgotten.length > 0) await target.forget(report.forgotten);
  return report;
}

/**
 * Runs sweepExpired every `intervalMs` (unref'd timer) and on demand; overlapping sweeps are
 * coalesced into the one already running.
 */
export class RetentionSweeper {
  readonly #task: PeriodicTask<SweepReport>;

  constructor(target: RetentionTarget, now: () => number) {
    this.#task = new PeriodicTask(() => sweepExpired(target, now()));
  }

  sweep(): Promise<SweepReport> {
    return this.#task.run();
  }

  start(intervalMs: number, onError: (err: unknown) => void): void {
    this.#task.start(intervalMs, onError);
  }

  stop(): void {
    this.#task.stop();
  }

  /** Stops the timer and waits for a sweep in progress. */
  close(): Promise<void> {
    return this.#task.close();
  }
}
