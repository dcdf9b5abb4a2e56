import { ConfigError, SluiceError } from '../errors.ts';

/** A run refused or stopped by its job's budget (exit code 4, like the service's 402). */
export class BudgetExceededError extends SluiceError {
  readonly code = 'BUDGET_EXCEEDED';
  readonly job: string;
  readonly limit: 'max_credits' | 'max_bytes';

  constructor(job: string, limit: 'max_credits' | 'max_bytes', message: string) {
    super(`job ${job}: ${message}`);
    this.job = job;
    this.limit = limit;
  }
}

/** A run that cannot start because another run of the same job holds its lock. */
export class JobBusyError extends SluiceError {
  readonly code = 'JOB_BUSY';
  constructor(job: string, detail: string) {
    super(`job ${job} is already running (${detail})`);
  }
}

/**
 * An incremental job that cannot work as declared: a cursor column missing from the result, holding
 * NULLs or of a type that cannot be ordered; a parameter the saved query does not have; an initial
 * value that does not parse as the cursor's type. Names the job, the field and the value. A mistake
 * in the job or the data: exit code 2, not retried.
 */
export class CursorError extends ConfigError {
  override readonly code: string = 'CURSOR_INVALID';
  readonly job: string;
  /** The field of the job's `incremental` block, e.g. `incremental.cursor`. */
  readonly field: string;
  readonly value: unknown;

  constructor(job: string, field: string, value: unknown, problem: string) {
    super(`job ${job}: ${field} ${JSON.stringify(value)}: ${problem}`, { issues: [{ path: field, message: problem, value }] });
    this.job = job;
    this.field = field;
    this.value = value;
  }
}

/**
 * Shards that cannot belong to one export: a plan made from another job file, for another number
 * of shards, or a shard index out of range. Nothing was written; the launcher must be fixed. Exit 2.
 */
export class ShardMismatchError extends ConfigError {
  override readonly code: string = 'SHARD_MISMATCH';
}

/** A shard of an export that is committed already: it has nothing left to do and writes nothing. Exit 2. */
export class ShardCommittedError extends ConfigError {
  override readonly code: string = 'SHARD_COMMITTED';
}

/**
 * A result that breaks its job's `expect` contract (with `on_violation: fail`): the columns or
 * their types, the row count, or a column check on a row. Names the check, the column, the row
 * (1-based, in the result) and the value; nothing was published. Not retried: the same query over
 * the same data breaks it again.
 */
export class ContractViolationError extends SluiceError {
  readonly code = 'CONTRACT_VIOLATED';
  readonly job: string;
  /** The contract field broken, e.g. `expect.columns`, `expect.rows.max`, `expect.checks.amount.not_null`. */
  readonly check: string;
  readonly column: string | undefined;
  /** The row of the result (1-based) that broke a column check. */
  readonly row: number | undefined;
  readonly value: unknown;

  constructor(job: string, violation: { check: string; column?: string | undefined; row?: number | undefined; value?: unknown; problem: string }) {
    super(`job ${job}: ${violation.check}: ${violation.problem}; nothing was published`);
    this.job = job;
    this.check = violation.check;
    this.column = violation.column;
    this.row = violation.row;
    this.value = violation.value;
  }
}
