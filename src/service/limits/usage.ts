import type { Usage } from '../../protocol/index.ts';
import { formatTimestamp } from '../timestamp.ts';
import type { CreditLedger } from './credits.ts';

export interface UsageSources {
  ledger: CreditLedger;
  /** Bytes the team stores: its materialized views, uploaded datasets and the tables its SQL created. */
  storageBytes(team: string): number | Promise<number>;
  storageQuotaBytes(team: string): number;
}

/** GET /v1/usage: the team's consumption in the current billing cycle. */
export async function usageOf(team: string, src: UsageSources): Promise<Usage> {
  const cycle = src.ledger.cycle();
  return {
    team,
    cycle_start: formatTimestamp(cycle.start),
    cycle_end: formatTimestamp(cycle.end),
    credits_used: src.ledger.used(team),
    credits_limit: src.ledger.limit(team),
    executions: src.ledger.executions(team),
    storage_bytes: await src.storageBytes(team),
    storage_quota_bytes: src.storageQuotaBytes(team),
  };
}
