import type { Job } from '../../config/jobSchema.ts';
import type { ExecutionStatus, Performance } from '../../protocol/index.ts';
import { BudgetExceededError } from '../errors.ts';

/** Credits of one execution that ran (10 x tier factor). */
export const TIER_COST: Readonly<Record<Performance, number>> = { small: 5, medium: 10, large: 20, free: 5 };

/** What one execution of the job costs, at its tier. */
export function executionCost(job: Pick<Job, 'performance'>): number {
  return TIER_COST[job.performance ?? 'medium'];
}

/** Whether an execution costing `cost` may start when `spent` credits are already gone. */
export function creditsAllowed(job: Job, spent: number, cost: number): boolean {
  const max = job.budget?.max_credits;
  return max === undefined || spent + cost <= max;
}

/** The error to stop with before an execution that `max_credits` does not allow is started (`spent`: by earlier attempts of the run). */
export function checkCredits(job: Job, spent: number): void {
  const cost = executionCost(job);
  if (creditsAllowed(job, spent, cost)) return;
  const tier = job.performance ?? 'medium';
  throw new BudgetExceededError(job.name, 'max_credits', `an execution costs ${cost} credits (${tier} tier) and the budget has ${(job.budget?.max_credits ?? 0) - spent} left of max_credits ${job.budget?.max_credits}; nothing was started`);
}

/** The error to stop with when the result is larger than `max_bytes`, before any page is fetched. */
export function checkBytes(job: Job, status: ExecutionStatus): BudgetExceededError | undefined {
  const max = job.budget?.max_bytes;
  const total = status.result_metadata?.total_result_set_bytes;
  if (max === undefined || total === undefined || total <= max) return undefined;
  return new BudgetExceededError(job.name, 'max_bytes', `the result is ${total} bytes (total_result_set_bytes), over max_bytes ${max}; nothing was fetched or written`);
}
