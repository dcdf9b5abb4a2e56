import {
  AbortedError,
  BadRequestError,
  ExecutionCanceledError,
  ExecutionExpiredError,
  ExecutionFailedError,
  ForbiddenError,
  InvalidApiKeyError,
  InvalidArgumentError,
  NotFoundError,
  PartialResultError,
  PaymentChallengeError,
  PaymentRequiredError,
  QueryArchivedError,
  ServiceError,
} from '../../client/errors.ts';
import { ConfigError, SluiceError } from '../../errors.ts';
import { BudgetExceededError, ContractViolationError, JobBusyError } from '../errors.ts';
import { DestinationCheckError, DestinationError, FormatError, KitError } from '../../kit/errors.ts';
import { ArrowValueError, ValueDecodeError } from '../../types/errors.ts';
import { AppendConflictError, SchemaDriftError } from '../../export/errors.ts';
import { IcebergCatalogError } from '../../export/iceberg/catalog/catalogErrors.ts';
import { IcebergMetadataError, IcebergNotATableError, IcebergPartitionError, IcebergSchemaConflictError, IcebergUnsupportedDestinationError } from '../../export/iceberg/errors.ts';

/**
 * The exit codes of every command. `sluice --help` prints them (src/cli/exitCodes.ts has the
 * words), and a test checks that the table of docs/cli.md says exactly the same.
 */
export const EXIT = {
  ok: 0,
  other: 1,
  config: 2,
  auth: 3,
  payment: 4,
  execution: 5,
  io: 6,
  paymentChallenge: 7,
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What a failure means for the CLI and for a job. */
export interface ErrorPolicy {
  /** The exit code of a command that ends with it. */
  readonly exit: ExitCode;
  /**
   * Whether a job tries its run again (`retries`). Not `SluiceError.retryable`, on purpose: that
   * flag answers "would the same request succeed if sent again" (the client's retry layer) and says
   * no for a failed execution or a write error. A job retry starts a new execution and a new staging
   * area, so it is worth it exactly when the cause is not in the job, the account or the data.
   */
  readonly retryJob: boolean;
  /**
   * Whether the next run may resume this run's execution after the run failed with it. Resume is
   * for runs that were interrupted or hit something passing (the network, a busy service); after a
   * failure that comes from the job, the account, the destination or the data, the next run starts
   * a new execution, so it never exports an old result after the user fixed something.
   */
  readonly keepRunState: boolean;
}

const row = (exit: ExitCode, retryJob: boolean, keepRunState: boolean): ErrorPolicy => Object.freeze({ exit, retryJob, keepRunState });
const PASSING = row(EXIT.other, true, true);
const MISTAKE = row(EXIT.config, false, false);

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Error class -> policy, the one table. An error takes the row of its nearest class here, walking
 * up its prototype chain, so the order of the rows does not matter and a new subclass inherits its
 * parent's row (UsageError, JobFileError and SettingsError are ConfigErrors). test/errors.test.ts
 * has one instance of every exported class with the row it must get.
 */
const POLICY: ReadonlyMap<ErrorClass, ErrorPolicy> = new Map<ErrorClass, ErrorPolicy>([
  // Something this run could not do that another attempt may (a page that came back wrong, a bug's symptom).
  [SluiceError, PASSING],
  // The service said "not now", or the network failed: retried, and the execution is still good.
  [ServiceError, PASSING],
  [AbortedError, row(EXIT.interrupted, false, true)],
  [ConfigError, MISTAKE],
  [InvalidArgumentError, MISTAKE],
  [BadRequestError, MISTAKE],
  [NotFoundError, MISTAKE],
  [QueryArchivedError, MISTAKE],
  [InvalidApiKeyError, row(EXIT.auth, false, false)],
  [ForbiddenError, row(EXIT.auth, false, false)],
  [PaymentRequiredError, row(EXIT.payment, false, false)],
  [BudgetExceededError, row(EXIT.payment, false, false)],
  // The service asks to be paid per request: nothing sluice can do but say so.
  [PaymentChallengeError, row(EXIT.paymentChallenge, false, false)],
  // A new execution may succeed (an engine hiccup, a result that expired); this one cannot be resumed.
  [ExecutionFailedError, row(EXIT.execution, true, false)],
  [ExecutionCanceledError, row(EXIT.execution, true, false)],
  [ExecutionExpiredError, row(EXIT.execution, true, false)],
  // Truncated again by a new execution of the same query over the same data.
  [PartialResultError, row(EXIT.execution, false, false)],
  // Exports: a write may succeed next time (disk space, S3 hiccup), but the next run starts afresh.
  [KitError, row(EXIT.other, true, false)],
  [DestinationError, row(EXIT.io, true, false)],
  [DestinationCheckError, row(EXIT.io, false, false)],
  // An Iceberg output that cannot take this result as it stands: the job or the table must change first.
  [IcebergNotATableError, row(EXIT.io, false, false)],
  [IcebergMetadataError, row(EXIT.io, false, false)],
  [IcebergSchemaConflictError, MISTAKE],
  [IcebergPartitionError, MISTAKE],
  [IcebergUnsupportedDestinationError, MISTAKE],
  // A catalog that cannot be reached, refuses the credentials or the commit: the message says what to fix; a new execution would meet the same catalog.
  [IcebergCatalogError, row(EXIT.io, false, false)],
  // The same data gives the same value the encoder or decoder cannot take.
  [FormatError, row(EXIT.other, false, false)],
  [ValueDecodeError, row(EXIT.other, false, false)],
  [ArrowValueError, row(EXIT.other, false, false)],
  // A result that breaks the job's contract breaks it again from a new execution over the same data.
  [ContractViolationError, row(EXIT.other, false, false)],
  // An append the committed output cannot take (another job's, another layout, a changed column): the user decides.
  [AppendConflictError, MISTAKE],
  [SchemaDriftError, MISTAKE],
  // Another run of the job holds its lock: its run state is not this run's to drop.
  [JobBusyError, row(EXIT.other, false, true)],
]);

const IO_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'ENOSPC', 'EISDIR', 'ENOTDIR', 'EROFS', 'EPIPE', 'EEXIST', 'EMFILE', 'EDQUOT']);
const FOREIGN_IO = row(EXIT.io, true, false);
const FOREIGN_ABORT = row(EXIT.interrupted, false, true);
/** An error nothing here knows (a plain Error, a bug): one more attempt is cheap; the next run starts afresh. */
const UNKNOWN = row(EXIT.other, true, false);

/** The table's row for `error`'s nearest listed class; for errors from outside (Node, the platform), their well-known marks. */
function ownPolicy(error: unknown): ErrorPolicy | undefined {
  for (let proto: unknown = Object.getPrototypeOf(error); proto !== null && proto !== undefined; proto = Object.getPrototypeOf(proto)) {
    const policy = POLICY.get((proto as { constructor: ErrorClass }).constructor);
    if (policy !== undefined) return policy;
  }
  if (!(error instanceof Error)) return undefined;
  // `AbortSignal.abort()` rejects with a DOMException named AbortError.
  if (error.name === 'AbortError') return FOREIGN_ABORT;
  const errno = (error as NodeJS.ErrnoException).code;
  if (typeof errno === 'string' && IO_CODES.has(errno)) return FOREIGN_IO;
  return undefined;
}

/**
 * The policy for an error. A SluiceError decides by its class (errors are wrapped once, so its
 * cause is not consulted); a foreign error that says nothing (a plain Error, an AggregateError)
 * defers to its cause, or to its first error.
 */
export function policyOf(error: unknown): ErrorPolicy {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current !== undefined && current !== null && !seen.has(current)) {
    seen.add(current);
    const policy = ownPolicy(current);
    if (policy !== undefined) return policy;
    if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
    else current = current instanceof Error ? current.cause : undefined;
  }
  return UNKNOWN;
}
