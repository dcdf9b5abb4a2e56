import { createHash } from 'node:crypto';
import { describeOutput, type ResolvedOutput } from '../../export/outputConfig.ts';

/**
 * The staging id of one output of one job exporting one execution: the same on every run that
 * does exactly that (so a killed run's staged parts are found again), different as soon as the
 * job, the execution or anything in the output's configuration differs (then the old staging
 * area is another attempt's, and the sink removes it).
 */
export function resumeAttemptId(job: string, executionId: string, output: ResolvedOutput): string {
  const basis = JSON.stringify({ job, executionId, output: describeOutput(output) });
  return `r${createHash('sha256').update(basis).digest('hex').slice(0, 24)}`;
}
