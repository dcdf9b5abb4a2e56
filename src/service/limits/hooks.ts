import type { ExecutionRecord } from '../executionRecord.ts';
import type { ResultInfo } from '../engine/types.ts';

/**
 * Where the limits, views and credits plug into the executions state machine. Executions calls
 * these; each may be absent.
 */
export interface ExecutionHooks {
  /**
   * Before a submission is recorded (and queued): throws to refuse it, e.g. CreditLimitError
   * (402) when the team's cycle has no credits left for it. Nothing is recorded then.
   */
  admit?(rec: ExecutionRecord): Promise<void>;
  /** A submission `admit` accepted could not be recorded after all: undo what admit held. */
  abandon?(rec: ExecutionRecord): Promise<void>;
  /**
   * After the engine ran the execution, before it is reported COMPLETED: a view refresh swaps its
   * table in here. Throws to make the execution FAILED (cost 0) with the error's message.
   */
  afterRun?(rec: ExecutionRecord, info: ResultInfo): Promise<void>;
  /** Lets the engine's sandbox read another team's `service.<owner>.<name>` (a non-private view or dataset). */
  canRead?(owner: string, name: string): boolean;
  /** Once per execution, when it reaches a terminal state (COMPLETED*, FAILED, CANCELED). */
  finished?(rec: ExecutionRecord): Promise<void>;
}
