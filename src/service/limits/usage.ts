import type { Usage } from '../../protocol/index.ts';
import { formatTimestamp } from '../timestamp.ts';
import type { CreditLedger } from './credits.ts';

export interface UsageSources {
  ledger: CreditLedger;
  /** Bytes the team's materialized views and uploaded datasets hold. */
  storageBytes(team: string): number;
  storageQuotaBytes(team: string): number;
}

/** GET /v1/usage: the team's consumption in the current billing cycle. */
export function usageOf(team: string, src: UsageSources): Usage {
  const cycle = src.ledger.cycle();
  return {
    team,
    cycle_start: formatTimestamp(cycle.start),
    cycle_end: formatTimestamp(cycle.end),
    credits_used: src.ledger.used(team),
    credits_limit: src.ledger.limit(team),
    executions: src.ledger.executions(team),
    storage_bytes: src.storageBytes(team),
    storage_quota_bytes: src.storageQuotaBytes(team),
  };
}
