import type { Job } from '../config/jobSchema.ts';
import type { ExecutionStatus, Performance } from '../protocol/index.ts';
import { BudgetExceededError } from './errors.ts';

/** Credits of one execution that ran (10 x tier factor). */
export const TIER_COST: Readonly<Record<Performance, number>> = { medium: 10, large: 20 };

/** Whether an execution costing `cost` may start when `spent` credits are already gone. */
export function creditsAllowed(job: Job, spent: number, cost: number): boolean {
  const max = job.budget?.max_credits;
  return max === undefined || spent + cost <= max;
}

/** The error to stop with when the result is larger than `max_bytes`, before any page is fetched. */
export function checkBytes(job: Job, status: ExecutionStatus): BudgetExceededError | undefined {
  const max = job.budget?.max_bytes;
  const total = status.result_metadata?.total_result_set_bytes;
  if (max === undefined || total === undefined || total <= max) return undefined;
  return new BudgetExceededError(job.name, 'max_bytes', `the result is ${total} bytes (total_result_set_bytes), over max_bytes ${max}; nothing was fetched or written`);
}
