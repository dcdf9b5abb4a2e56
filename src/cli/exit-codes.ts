import {
  AbortedError,
  BadRequestError,
  ConfigError as ClientConfigError,
  ExecutionCanceledError,
  ExecutionExpiredError,
  ExecutionFailedError,
  ForbiddenError,
  InvalidApiKeyError,
  InvalidArgumentError,
  PartialResultError,
  PaymentRequiredError,
} from '../client/errors.ts';
import { JobFileError } from '../config/errors.ts';
import { KitError } from '../kit/errors.ts';
import { BudgetExceededError } from '../jobs/errors.ts';
import { SettingsError } from '../service/settings.ts';
import { UsageError } from './usage-error.ts';

/**
 * The exit codes of every command, in one table (the README's table is generated from it by
 * `sluice --help exit-codes` and checked by a test).
 */
export const EXIT = {
  ok: 0,
  other: 1,
  config: 2,
  auth: 3,
  payment: 4,
  execution: 5,
  io: 6,
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODE_DOCS: readonly { code: ExitCode; meaning: string }[] = [
  { code: EXIT.ok, meaning: 'success' },
  { code: EXIT.other, meaning: 'any other failure (network, service error, a bug)' },
  { code: EXIT.config, meaning: 'configuration or usage error: bad job file, unknown option, missing environment variable, invalid request (400)' },
  { code: EXIT.auth, meaning: 'authentication: invalid API key (401) or a key without the needed scope (403)' },
  { code: EXIT.payment, meaning: 'payment required (402): the credit limit of the billing cycle, or the job budget, would be exceeded' },
  { code: EXIT.execution, meaning: 'the execution failed, was cancelled elsewhere, expired, or is a partial result' },
  { code: EXIT.io, meaning: 'I/O: writing the output (disk, S3, stdout) or reading an input file failed' },
  { code: EXIT.interrupted, meaning: 'interrupted by SIGINT or SIGTERM (in-flight executions were cancelled)' },
];

type Rule = readonly [predicate: (error: unknown) => boolean, code: ExitCode];

const is =
  (...classes: (abstract new (...args: never[]) => unknown)[]) =>
  (error: unknown): boolean =>
    classes.some((c) => error instanceof c);

const IO_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'ENOSPC', 'EISDIR', 'ENOTDIR', 'EROFS', 'EPIPE', 'EEXIST', 'EMFILE', 'EDQUOT']);

const RULES: readonly Rule[] = [
  [(e) => e instanceof AbortedError || (e instanceof Error && e.name === 'AbortError'), EXIT.interrupted],
  [is(JobFileError, UsageError, SettingsError, ClientConfigError, InvalidArgumentError, BadRequestError), EXIT.config],
  [(e) => e instanceof KitError && e.code === 'config_invalid', EXIT.config],
  [is(InvalidApiKeyError, ForbiddenError), EXIT.auth],
  [is(PaymentRequiredError, BudgetExceededError), EXIT.payment],
  [is(ExecutionFailedError, ExecutionCanceledError, ExecutionExpiredError, PartialResultError), EXIT.execution],
  [(e) => e instanceof KitError && e.code === 'destination_failed', EXIT.io],
  [(e) => e instanceof Error && typeof (e as NodeJS.ErrnoException).code === 'string' && IO_CODES.has((e as NodeJS.ErrnoException).code!), EXIT.io],
];

/**
 * The exit code for an error. Errors are wrapped once at most, so the error itself decides;
 * when nothing matches, the cause chain (and the first error of an AggregateError) is tried.
 */
export function exitCodeOf(error: unknown, interrupted = false): ExitCode {
  if (interrupted) return EXIT.interrupted;
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    for (const [predicate, code] of RULES) if (predicate(current)) return code;
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    else current = current instanceof Error ? current.cause : undefined;
  }
  return EXIT.other;
}
