import { type ColumnCheck, type Expect, type Job } from '../../config/jobSchema.ts';
import { quarantinePath } from '../../config/quarantinePath.ts';

/** One check of a job's contracts, as `--plan` shows it: what, where in the run, and what a violation does. */
export interface ContractCheckPlan {
  /** The contract field: `expect.columns`, `expect.checks.amount`, `outputs[1].expect.rows`. */
  readonly check: string;
  /** What it checks, as the job says it: `id bigint`, `max 9000, predicate "amount >= 0"`. */
  readonly what: string;
  /** before-fetch: from the execution's metadata, before any page; stream: on every row as it is read; end: when the read ends, before any commit. */
  readonly when: 'before-fetch' | 'stream' | 'end';
  readonly onViolation: 'fail' | 'warn' | 'quarantine';
  /** quarantine: where the rows set aside go (one place per output the contract guards). */
  readonly quarantine?: readonly string[];
}

/** Every check of the job's contracts (the job's, then each output's), in the order a run makes them. */
export function contractPlan(job: Job): ContractCheckPlan[] {
  const checks = contractChecks(job, job.expect, 'expect', job.outputs.map((o) => o.path));
  job.outputs.forEach((output, i) => checks.push(...contractChecks(job, output.expect, `outputs[${i}].expect`, [output.path])));
  const order = { 'before-fetch': 0, stream: 1, end: 2 };
  return checks.sort((a, b) => order[a.when] - order[b.when]);
}

function contractChecks(job: Job, expect: Expect | undefined, at: string, guarded: readonly string[]): ContractCheckPlan[] {
  if (expect === undefined) return [];
  const plans: ContractCheckPlan[] = [];
  // The columns and the row count have no row to set aside: under quarantine they fail.
  const whole = expect.on_violation === 'warn' ? 'warn' : 'fail';
  const columns = Object.entries(expect.columns ?? {});
  if (columns.length > 0) plans.push({ check: `${at}.columns`, what: columns.map(([name, type]) => `${name} ${type}`).join(', '), when: 'before-fetch', onViolation: whole });
  const rows = expect.rows;
  if (rows !== undefined) {
    const count = (n: number) => `${n} row${n === 1 ? '' : 's'}`;
    const what = rows.min !== undefined && rows.max !== undefined ? `${rows.min} to ${count(rows.max)}` : rows.min !== undefined ? `at least ${count(rows.min)}` : `at most ${count(rows.max!)}`;
    // The service counts the rows of a result, not those a filter keeps.
    plans.push({ check: `${at}.rows`, what, when: job.result?.filters === undefined ? 'before-fetch' : 'end', onViolation: whole });
  }
  for (const [name, check] of Object.entries(expect.checks ?? {})) {
    const on = check.on_violation ?? expect.on_violation ?? 'fail';
    plans.push({ check: `${at}.checks.${name}`, what: describeCheck(check), when: 'stream', onViolation: on, ...(on === 'quarantine' ? { quarantine: guarded.map(quarantinePath) } : {}) });
  }
  return plans;
}

function describeCheck(check: ColumnCheck): string {
  const parts: string[] = [];
  if (check.not_null === true) parts.push('not_null');
  if (check.unique === true) parts.push('unique');
  if (check.accepted_values !== undefined) parts.push(`accepted_values ${JSON.stringify(check.accepted_values)}`);
  if (check.min !== undefined) parts.push(`min ${check.min}`);
  if (check.max !== undefined) parts.push(`max ${check.max}`);
  if (check.predicate !== undefined) parts.push(`predicate "${check.predicate}"`);
  return parts.join(', ');
}
