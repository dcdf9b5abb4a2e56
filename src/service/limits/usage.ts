import type { BillingUsage, Usage, UsageRequest } from '../../protocol/index.ts';
import { formatTimestamp } from '../timestamp.ts';
import type { CreditLedger } from './credits.ts';

export interface UsageSources {
  ledger: CreditLedger;
  /** Bytes the team stores: its materialized views, uploaded datasets and the tables its SQL created. */
  storageBytes(team: string): number | Promise<number>;
  storageQuotaBytes(team: string): number;
  /** Saved queries of the team that are private. */
  privateQueries(team: string): number;
  /** The stored results of the whole service: their bytes and bound (limits/resultStore.ts). */
  resultStore?(): Promise<{ bytes: number; maxBytes: number }>;
}

const DAY_MS = 86_400_000;

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
    ...(await resultStoreFields(src)),
  };
}

async function resultStoreFields(src: UsageSources): Promise<{ result_store_bytes?: number; result_store_max_bytes?: number }> {
  if (src.resultStore === undefined) return {};
  const { bytes, maxBytes } = await src.resultStore();
  return { result_store_bytes: bytes, result_store_max_bytes: maxBytes };
}

/**
 * POST /v1/usage, in the shape the official clients decode: the billing cycles the period overlaps
 * (both days included; without a period, the current cycle). The service has no dashboards.
 */
export async function billingUsageOf(team: string, src: UsageSources, period: UsageRequest): Promise<BillingUsage> {
  const { start_date: start, end_date: end } = period;
  const current = src.ledger.cycle();
  const open = start === undefined && end === undefined;
  const from = start !== undefined ? Date.parse(start) : open ? current.start : -Infinity;
  const to = end !== undefined ? Date.parse(end) + DAY_MS : open ? current.end : Infinity;
  return {
    private_queries: src.privateQueries(team),
    private_dashboards: 0,
    bytes_used: await src.storageBytes(team),
    bytes_allowed: src.storageQuotaBytes(team),
    billing_periods: src.ledger.periods(team, from, to).map((c) => ({
      start_date: formatTimestamp(c.start).slice(0, 10),
      end_date: formatTimestamp(c.end - DAY_MS).slice(0, 10),
      credits_used: c.used,
      credits_included: src.ledger.limit(team),
    })),
  };
}
