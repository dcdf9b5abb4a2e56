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
import { SluiceError } from '../errors.ts';
import { BudgetExceededError } from '../jobs/errors.ts';
import { ConfigError as KitConfigError, DestinationError } from '../kit/errors.ts';
import { SettingsError } from '../service/settings.ts';
import { UsageError } from './usage-error.ts';

/**
 * The exit codes of every command, in one table: `sluice --help` prints it, and a test checks
 * that the README's table says exactly the same (test/cli/help.test.ts).
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
  { code: EXIT.ok, meaning: 'success (also `schedule` stopped cleanly by SIGTERM/SIGINT)' },
  { code: EXIT.other, meaning: 'any other failure (network, service error, a bug; `schedule` when a run had to be abandoned)' },
  { code: EXIT.config, meaning: 'configuration or usage error: bad job file, unknown option, missing environment variable or key, invalid request (400)' },
  { code: EXIT.auth, meaning: 'authentication: invalid API key (401) or a key without the needed scope (403)' },
  { code: EXIT.payment, meaning: 'payment required (402), or the job budget (`max_credits`, `max_bytes`) would be exceeded' },
  { code: EXIT.execution, meaning: 'the execution failed, was cancelled elsewhere, expired, or is a partial result' },
  { code: EXIT.io, meaning: 'I/O: writing the output (disk, S3, stdout) or reading an input file failed' },
  { code: EXIT.interrupted, meaning: 'interrupted by SIGINT or SIGTERM (`run`, `query`, ...: executions this command started are cancelled)' },
];

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Error class -> exit code. An error takes the code of its nearest class in this table, walking up
 * its prototype chain, so the order of the rows does not matter and a new subclass inherits its
 * parent's code. A SluiceError already says what failed (errors are wrapped once), so one with no
 * closer row is `other` and its cause is not consulted.
 */
const EXIT_BY_CLASS: ReadonlyMap<ErrorClass, ExitCode> = new Map<ErrorClass, ExitCode>([
  [SluiceError, EXIT.other],
  [AbortedError, EXIT.interrupted],
  [UsageError, EXIT.config],
  [JobFileError, EXIT.config],
  [ClientConfigError, EXIT.config],
  [InvalidArgumentError, EXIT.config],
  [BadRequestError, EXIT.config],
  [KitConfigError, EXIT.config],
  // The local service's settings file: its errors belong to the service, not to the SluiceError tree.
  [SettingsError, EXIT.config],
  [InvalidApiKeyError, EXIT.auth],
  [ForbiddenError, EXIT.auth],
  [PaymentRequiredError, EXIT.payment],
  [BudgetExceededError, EXIT.payment],
  [ExecutionFailedError, EXIT.execution],
  [ExecutionCanceledError, EXIT.execution],
  [ExecutionExpiredError, EXIT.execution],
  [PartialResultError, EXIT.execution],
  [DestinationError, EXIT.io],
]);

const IO_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'ENOSPC', 'EISDIR', 'ENOTDIR', 'EROFS', 'EPIPE', 'EEXIST', 'EMFILE', 'EDQUOT']);

/** The table's code for `error`'s nearest listed class; for errors from outside (Node, the platform), their well-known marks. */
function ownExitCode(error: unknown): ExitCode | undefined {
  for (let proto: unknown = Object.getPrototypeOf(error); proto !== null && proto !== undefined; proto = Object.getPrototypeOf(proto)) {
    const code = EXIT_BY_CLASS.get((proto as { constructor: ErrorClass }).constructor);
    if (code !== undefined) return code;
  }
  if (!(error instanceof Error)) return undefined;
  // `AbortSignal.abort()` rejects with a DOMException named AbortError.
  if (error.name === 'AbortError') return EXIT.interrupted;
  const errno = (error as NodeJS.ErrnoException).code;
  if (typeof errno === 'string' && IO_CODES.has(errno)) return EXIT.io;
  return undefined;
}

/**
 * The exit code for an error. A SluiceError decides by its class; a foreign error that says
 * nothing (a plain Error, an AggregateError) defers to its cause, or to its first error.
 */
export function exitCodeOf(error: unknown, interrupted = false): ExitCode {
  if (interrupted) return EXIT.interrupted;
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    const code = ownExitCode(current);
    if (code !== undefined) return code;
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    else current = current instanceof Error ? current.cause : undefined;
  }
  return EXIT.other;
}
