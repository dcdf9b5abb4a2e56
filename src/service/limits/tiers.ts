import type { Performance } from '../../protocol/index.ts';
import { resolveTier, type ServiceSettings } from '../settings.ts';

/** Why an execution runs: a client's submission, or a materialized view refresh. */
export type ExecutionPurpose = 'interactive' | 'view';

/**
 * View refreshes get an "extended" timeout (service-interface.md section 8): this many times the
 * tier's. A refresh rebuilds a whole table on a schedule nobody watches, so it is allowed longer
 * than a query a client is polling for.
 */
export const VIEW_TIMEOUT_FACTOR = 4;

export interface TierPolicy {
  performance: Performance;
  /** Engine threads wanted (advisory: DuckDB's threads setting is per instance). */
  threads: number;
  timeoutMs: number;
  costFactor: number;
  /** Engine memory and temporary disk an execution of the tier may use. */
  memoryLimitBytes: number;
  tempLimitBytes: number;
}

/** The settings of a tier for one execution. */
export function tierPolicy(settings: ServiceSettings, performance: Performance, purpose: ExecutionPurpose = 'interactive'): TierPolicy {
  const t = resolveTier(settings, performance);
  return {
    performance,
    threads: t.threads,
    timeoutMs: purpose === 'view' ? t.timeout_ms * VIEW_TIMEOUT_FACTOR : t.timeout_ms,
    costFactor: t.cost_factor,
    memoryLimitBytes: t.memory_limit_bytes,
    tempLimitBytes: t.temp_limit_bytes,
  };
}

/**
 * protocol.md section 6: `credits_per_execution` (10) x tier factor (medium 1, large 2) for an
 * execution that ran; 0 when it did not (syntax or semantic error, engine failure, timeout).
 */
export function executionCost(settings: ServiceSettings, performance: Performance, ran: boolean): number {
  if (!ran) return 0;
  return settings.limits.credits_per_execution * resolveTier(settings, performance).cost_factor;
}
