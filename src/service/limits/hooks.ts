import type { ExecutionRecord } from '../executionRecord.ts';
import type { ResultInfo } from '../engine/types.ts';
import type { ServiceSettings } from '../settings.ts';
import type { Datasets } from '../uploads/datasets.ts';
import type { ViewRegistry } from '../views/registry.ts';
import type { ViewService } from '../views/viewService.ts';
import type { CreditLedger } from './credits.ts';
import { executionCost } from './tiers.ts';

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
  /**
   * The team's storage quota and what its views and uploads already hold, for SQL that writes
   * tables in its schema (the engine adds the tables and refuses what would exceed the quota).
   */
  storageQuota?(team: string): { limitBytes: number; otherBytes: number };
  /** Once per execution, when it reaches a terminal state (COMPLETED*, FAILED, CANCELLED). */
  finished?(rec: ExecutionRecord): Promise<void>;
}

export interface HookParts {
  settings: ServiceSettings;
  ledger: CreditLedger;
  views: ViewService;
  canRead(owner: string, name: string): boolean;
  storageQuota?(team: string): { limitBytes: number; otherBytes: number };
}

/**
 * Credits are reserved when a submission is admitted and settled when it finishes; a view
 * refresh swaps its table in after the run.
 */
export function executionHooks({ settings, ledger, views, canRead, storageQuota }: HookParts): ExecutionHooks {
  return {
    ...(storageQuota === undefined ? {} : { storageQuota }),
    admit: (rec) => ledger.reserve(rec.team, executionCost(settings, rec.performance, true), rec.id),
    abandon: (rec) => ledger.release(rec.id),
    afterRun: async (rec, info) => {
      if (rec.purpose !== 'view') return;
      await views.complete(rec.id, rec.viewId, info);
    },
    canRead,
    finished: (rec) => ledger.settle(rec.id, 'costCredits' in rec ? rec.costCredits : 0),
  };
}

/** Another team's view or dataset is readable by user SQL when it is not private. */
export function readableWhenShared(registry: ViewRegistry, datasets: Datasets): (owner: string, name: string) => boolean {
  return (owner, name) => {
    const view = registry.get(owner, name);
    if (view !== undefined) return !view.isPrivate;
    const dataset = datasets.get(owner, name);
    return dataset !== undefined && !dataset.isPrivate;
  };
}
