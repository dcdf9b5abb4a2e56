import { EXIT, policyOf, type ExitCode } from '../jobs/run/errorPolicy.ts';

export { EXIT, type ExitCode };

/** What each exit code means, for `sluice --help` and docs/cli.md (a test keeps them equal). */
export const EXIT_CODE_DOCS: readonly { code: ExitCode; meaning: string }[] = [
  { code: EXIT.ok, meaning: 'success (also `schedule` stopped cleanly by SIGTERM/SIGINT)' },
  { code: EXIT.other, meaning: 'any other failure (network, service error, a bug; `schedule` when a run had to be abandoned)' },
  { code: EXIT.config, meaning: 'configuration or usage error: bad job file, unknown option, missing environment variable, key or credentials, invalid request (400), unknown or archived query, execution or view (404, 403 archived)' },
  { code: EXIT.auth, meaning: 'authentication: invalid API key (401) or a key without the needed scope (403)' },
  { code: EXIT.payment, meaning: 'payment required (402), or the job budget (`max_credits`, `max_bytes`) would be exceeded' },
  { code: EXIT.execution, meaning: 'the execution failed, was cancelled elsewhere, expired, or is a partial result' },
  { code: EXIT.io, meaning: 'I/O: the output (disk, S3, stdout) cannot be written (checked before the query runs where possible), or reading an input file failed' },
  { code: EXIT.paymentChallenge, meaning: 'a payment challenge (402 with `WWW-Authenticate: Payment`): the service asks to be paid for the request itself; never retried' },
  { code: EXIT.interrupted, meaning: 'interrupted by SIGINT or SIGTERM (`query` cancels the execution it started; `run` keeps its execution for the next run to resume)' },
];

/**
 * The exit code for an error: its row in the one error table (src/jobs/run/errorPolicy.ts), which the job
 * runner and its retry policy read too.
 */
export function exitCodeOf(error: unknown, interrupted = false): ExitCode {
  return interrupted ? EXIT.interrupted : policyOf(error).exit;
}
