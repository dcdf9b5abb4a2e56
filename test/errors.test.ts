import { describe, expect, it } from 'vitest';
import * as library from '../src/index.ts';
import * as clientErrors from '../src/client/errors.ts';
import * as configModule from '../src/config/index.ts';
import * as jobErrors from '../src/jobs/errors.ts';
import { BackfillChunkError } from '../src/jobs/backfill/backfillChunks.ts';
import * as kitErrors from '../src/kit/errors.ts';
import * as exportErrors from '../src/export/errors.ts';
import * as icebergErrors from '../src/export/iceberg/errors.ts';
import * as typeErrors from '../src/types/errors.ts';
import { UsageError } from '../src/cli/usageError.ts';
import { EXIT, exitCodeOf, type ExitCode } from '../src/cli/exitCodes.ts';
import { ConfigError, SluiceError } from '../src/errors.ts';
import { SettingsError } from '../src/service/settings.ts';
import { policyOf } from '../src/jobs/run/errorPolicy.ts';
import { statusError } from '../src/client/statusErrors.ts';
import { PageSequenceError } from '../src/pipeline/fetchOrdered.ts';
import { PolarsMissingError } from '../src/pipeline/dataFrame.ts';

const c = clientErrors;
const column = { column: 'amount', type: 'decimal(10, 2)', rowOffset: 7, path: '[1]', value: 'x', reason: 'is not a decimal(10, 2)' };

/** One instance of every error class sluice throws, with the exit code the CLI gives it. */
const SAMPLES: readonly (readonly [Error, ExitCode])[] = [
  [new c.ServiceError('unexpected status 302', { status: 302 }), EXIT.other],
  [new ConfigError('the API key is missing'), EXIT.config],
  [new c.InvalidArgumentError('limit must be positive'), EXIT.config],
  [new c.BadRequestError('400 bad sql', { status: 400 }), EXIT.config],
  [new c.InvalidApiKeyError('401 invalid key', { status: 401 }), EXIT.auth],
  [new c.PaymentRequiredError('402 no credits', { status: 402 }), EXIT.payment],
  [new c.PaymentChallengeError('402 pay', { status: 402, challenge: 'Payment realm="api"' }), EXIT.paymentChallenge],
  [new c.ForbiddenError('403 scope', { status: 403 }), EXIT.auth],
  // An archived query is a 403 too, but not an authentication problem.
  [new c.QueryArchivedError('403 query 7 is archived', { status: 403 }), EXIT.config],
  [new c.NotFoundError('404', { status: 404 }), EXIT.config],
  [new c.ConflictError('409', { status: 409 }), EXIT.other],
  [new c.RateLimitedError('429', { status: 429, retryAfterMs: 1000 }), EXIT.other],
  [new c.ServerError('503', { status: 503, retryAfterMs: undefined }), EXIT.other],
  [new c.NetworkError('connection refused', { phase: 'connect' }), EXIT.other],
  [new c.SubmissionOutcomeUnknownError('reset after the request was written', { phase: 'response-headers' }), EXIT.other],
  [new c.ContentEncodingError('gzip body could not be decoded', { phase: 'response-body' }), EXIT.other],
  [new c.TimeoutError('no answer within 10 ms', { retryable: true }), EXIT.other],
  [new c.AbortedError('aborted by the caller', {}), EXIT.interrupted],
  [new c.InvalidResponseError('body does not match the schema'), EXIT.other],
  [new c.ExecutionFailedError('syntax error', { line: 1, column: 8 }), EXIT.execution],
  [new c.ExecutionCanceledError('canceled elsewhere'), EXIT.execution],
  [new c.ExecutionExpiredError('expired'), EXIT.execution],
  [new c.PartialResultError('truncated', { status: 400 }), EXIT.execution],
  [new PolarsMissingError('nodejs-polars is not installed', { method: 'toDataFrame' }), EXIT.other],
  [new PageSequenceError(100, 100), EXIT.other],
  [new typeErrors.ValueDecodeError(column), EXIT.other],
  [new typeErrors.ArrowValueError(column), EXIT.other],
  [new kitErrors.KitError('SOME_FAILURE', 'something failed'), EXIT.other],
  [new SettingsError('settings.yaml: teams: required'), EXIT.config],
  [new kitErrors.DestinationError('file:///out', 'writing', new Error('EACCES')), EXIT.io],
  [new kitErrors.DestinationCheckError('s3://bucket/x', 'the bucket bucket does not exist'), EXIT.io],
  [new kitErrors.FormatError('parquet', 'cannot start the writer'), EXIT.other],
  [new kitErrors.PreconditionFailedError('s3://b/p', '_manifest.json', 'changed since it was read'), EXIT.io],
  [new exportErrors.RowCountMismatchError('01EXEC', 10, 9), EXIT.other],
  [new exportErrors.ManifestInvalidError('file:///out', 'not JSON'), EXIT.other],
  [new exportErrors.AppendConflictError('file:///out', 'it was written by job "a", not job "b"'), EXIT.config],
  [new exportErrors.SchemaDriftError('file:///out', 'amount', 'was bigint and is varchar'), EXIT.config],
  [new jobErrors.CursorError('sync', 'incremental.cursor', 'ts', 'is NULL in row 3'), EXIT.config],
  [new icebergErrors.IcebergNotATableError('file:///lake/t', 'part-0.parquet'), EXIT.io],
  [new icebergErrors.IcebergMetadataError('file:///lake/t', 'metadata/v2.metadata.json', 'not JSON'), EXIT.io],
  [new icebergErrors.IcebergSchemaConflictError('file:///lake/t', 'metadata/v1.metadata.json', 'amount', 'long', 'string'), EXIT.config],
  [new icebergErrors.IcebergPartitionError('file:///lake/t', 'partition_by differs'), EXIT.config],
  [new icebergErrors.IcebergUnsupportedDestinationError('stdout:', ['list', 'put']), EXIT.config],
  [new icebergErrors.IcebergCommitConflictError('file:///lake/t', 'metadata/v3.metadata.json', 4), EXIT.other],
  [new icebergErrors.IcebergCatalogError('CATALOG_AUTH_REFUSED', 'https://catalog.example', 'GET /v1/config was refused (HTTP 401)'), EXIT.io],
  [new configModule.JobFileError('jobs.yaml', [{ path: 'jobs[0].name', line: 2, col: 3, message: 'required' }]), EXIT.config],
  [new jobErrors.BudgetExceededError('daily', 'max_credits', 'over budget'), EXIT.payment],
  [new jobErrors.JobBusyError('daily', 'process 12 holds the lock'), EXIT.other],
  [new jobErrors.ContractViolationError('daily', { check: 'expect.checks.amount.not_null', column: 'amount', row: 3, value: null, problem: 'row 3 of the result: amount is NULL' }), EXIT.other],
  [new BackfillChunkError('job weeks: backfill chunk [2026-02-09, 2026-02-10) came back truncated (COMPLETED_PARTIAL) (execution 01ABC) and cannot be halved above min_chunk "1d"'), EXIT.config],
  [new jobErrors.ShardMismatchError('the plan was made for 2 shards, this shard was started for 3'), EXIT.config],
  [new jobErrors.ShardCommittedError('the export is committed already'), EXIT.config],
  [new UsageError('unknown option --x', 'run'), EXIT.config],
];

function isErrorClass(value: unknown): value is abstract new (...args: never[]) => Error {
  return typeof value === 'function' && value.prototype instanceof Error;
}

/** Every error class the public modules export, by name. */
function exportedErrorClasses(): Map<string, Function> {
  const classes = new Map<string, Function>();
  const modules = [library, clientErrors, configModule, jobErrors, kitErrors, exportErrors, typeErrors, { UsageError, PageSequenceError, PolarsMissingError }];
  for (const mod of modules) {
    for (const [name, value] of Object.entries(mod)) if (isErrorClass(value)) classes.set(name, value);
  }
  // Internal: a decoder's misfit is always wrapped into a ValueDecodeError/ArrowValueError before it leaves src/types.
  classes.delete('Misfit');
  return classes;
}

describe('SluiceError hierarchy', () => {
  it('has a sample for every exported error class (a new class must be added here and to the exit-code table)', () => {
    const sampled = new Set(SAMPLES.map(([error]) => error.constructor));
    const missing = [...exportedErrorClasses()].filter(([, cls]) => !sampled.has(cls) && cls !== SluiceError).map(([name]) => name);
    // ColumnValueError is the abstract parent of ValueDecodeError and ArrowValueError, sampled through them.
    expect(missing.filter((name) => name !== 'ColumnValueError')).toEqual([]);
    expect(library.SluiceError).toBe(SluiceError);
  });

  it.each(SAMPLES.map(([error]) => [error.constructor.name, error] as const))('%s is a SluiceError with a string code and a boolean retryable', (_name, error) => {
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toBeInstanceOf(Error);
    const e = error as SluiceError;
    expect(typeof e.code).toBe('string');
    expect(e.code.length).toBeGreaterThan(0);
    expect(typeof e.retryable).toBe('boolean');
    expect(e.status === undefined || typeof e.status === 'number').toBe(true);
    // The name is the class's own (AbortedError keeps `AbortError` for platform-style checks).
    expect(e.name).toBe(error instanceof c.AbortedError ? 'AbortError' : error.constructor.name);
    expect(e.stack).toContain(e.message.split('\n')[0]);
  });

  it('keeps the codes, statuses and retryability callers branch on', () => {
    const byClass = new Map(SAMPLES.map(([error]) => [error.constructor, error as SluiceError]));
    const codeOf = (cls: Function) => byClass.get(cls)?.code;
    const retryableOf = (cls: Function) => byClass.get(cls)?.retryable;
    expect(codeOf(c.ServiceError)).toBe('SERVICE_ERROR');
    expect(codeOf(c.RateLimitedError)).toBe('RATE_LIMITED');
    expect(codeOf(PageSequenceError)).toBe('PAGE_SEQUENCE');
    expect(codeOf(typeErrors.ValueDecodeError)).toBe('VALUE_DECODE');
    expect(codeOf(typeErrors.ArrowValueError)).toBe('ARROW_VALUE');
    expect(codeOf(ConfigError)).toBe('CONFIG_INVALID');
    expect(codeOf(kitErrors.DestinationError)).toBe('DESTINATION_FAILED');
    expect(codeOf(c.QueryArchivedError)).toBe('QUERY_ARCHIVED');
    expect(codeOf(exportErrors.RowCountMismatchError)).toBe('ROW_COUNT_MISMATCH');
    expect(codeOf(configModule.JobFileError)).toBe('JOB_FILE_INVALID');
    expect(codeOf(jobErrors.BudgetExceededError)).toBe('BUDGET_EXCEEDED');
    expect(codeOf(UsageError)).toBe('USAGE');
    expect(codeOf(jobErrors.ShardMismatchError)).toBe('SHARD_MISMATCH');
    expect(codeOf(jobErrors.ShardCommittedError)).toBe('SHARD_COMMITTED');
    expect(retryableOf(c.RateLimitedError)).toBe(true);
    expect(retryableOf(c.ServerError)).toBe(true);
    expect(retryableOf(c.NetworkError)).toBe(true);
    expect(retryableOf(c.SubmissionOutcomeUnknownError)).toBe(false);
    expect(retryableOf(c.TimeoutError)).toBe(true);
    expect(new c.TimeoutError('deadline', { retryable: false }).retryable).toBe(false);
    expect(retryableOf(c.BadRequestError)).toBe(false);
    expect(new kitErrors.DestinationError('s3://b/k', 'uploading', new Error('503'), true).retryable).toBe(true);
    expect(byClass.get(c.PaymentRequiredError)?.status).toBe(402);
    expect(byClass.get(UsageError)?.status).toBeUndefined();
  });

  it('instanceof follows the hierarchy', () => {
    const outcomeUnknown = new c.SubmissionOutcomeUnknownError('lost', { phase: 'response-body' });
    expect(outcomeUnknown).toBeInstanceOf(c.NetworkError);
    expect(outcomeUnknown).toBeInstanceOf(c.ServiceError);
    expect(outcomeUnknown).toBeInstanceOf(SluiceError);
    expect(new PolarsMissingError('x', {})).toBeInstanceOf(c.ServiceError);
    expect(new exportErrors.ManifestInvalidError('file:///o', 'bad')).toBeInstanceOf(kitErrors.KitError);
    expect(new typeErrors.ValueDecodeError(column)).toBeInstanceOf(typeErrors.ColumnValueError);
    expect(new typeErrors.ValueDecodeError(column)).not.toBeInstanceOf(typeErrors.ArrowValueError);
    expect(new UsageError('x')).not.toBeInstanceOf(c.ServiceError);
    expect(new kitErrors.KitError('k', 'x')).not.toBeInstanceOf(c.ServiceError);
    expect(new Error('plain')).not.toBeInstanceOf(SluiceError);
  });

  it('keeps the cause as the standard ES2022 property, and sets none when there is none', () => {
    const cause = Object.assign(new Error('disk full'), { code: 'ENOSPC' });
    const errors: SluiceError[] = [
      new c.NetworkError('down', { phase: 'connect', cause }),
      new kitErrors.KitError('x', 'failed', { cause }),
      new kitErrors.DestinationError('file:///out', 'writing', cause),
      new kitErrors.FormatError('csv', 'cannot encode', cause),
      new configModule.JobFileError('jobs.yaml', [{ path: '', message: 'cannot read the job file' }], { cause }),
    ];
    for (const error of errors) {
      expect(error.cause).toBe(cause);
      expect(Object.getOwnPropertyDescriptor(error, 'cause')?.enumerable).toBe(false);
    }
    expect('cause' in new c.NotFoundError('404')).toBe(false);
    expect('cause' in new jobErrors.JobBusyError('j', 'held')).toBe(false);
  });

  it('keeps the messages that name the method, URL and execution id', () => {
    const error = new c.ExecutionFailedError('syntax error', { method: 'wait', url: 'GET http://127.0.0.1/api/v1/execution/01X/status', executionId: '01X' });
    // The engine's words first (what the reader acts on), then where they came from.
    expect(error.message).toBe('syntax error\n(wait GET http://127.0.0.1/api/v1/execution/01X/status, execution 01X)');
    const pointed = new c.ExecutionFailedError('syntax error', { method: 'wait', executionId: '01X', excerpt: '1 | SELEC 1\n  | ^' });
    expect(pointed.message).toBe('syntax error\n1 | SELEC 1\n  | ^\n(wait, execution 01X)');
    expect(new typeErrors.ValueDecodeError(column).message).toBe('column "amount" (decimal(10, 2)), row 7, at [1]: "x" is not a decimal(10, 2)');
    expect(new typeErrors.ArrowValueError({ ...column, path: '' }).message).toBe('Arrow column "amount" (decimal(10, 2)), row 7: "x" is not a decimal(10, 2)');
    expect(new UsageError('unknown option --x', 'run').command).toBe('run');
  });
});

describe('exit codes over the hierarchy', () => {
  it.each(SAMPLES.map(([error, code]) => [error.constructor.name, error, code] as const))('%s exits with its documented code', (_name, error, code) => {
    expect(exitCodeOf(error)).toBe(code);
  });

  it('gives a subclass its nearest listed ancestor code, and a SluiceError does not defer to its cause', () => {
    class FlakyExecutionError extends c.ExecutionFailedError {}
    expect(exitCodeOf(new FlakyExecutionError('failed', {}))).toBe(EXIT.execution);
    // A SluiceError is already the one wrap; an inner I/O failure does not override what it says.
    expect(exitCodeOf(new c.NetworkError('socket closed', { phase: 'response-body', cause: Object.assign(new Error('x'), { code: 'EPIPE' }) }))).toBe(EXIT.other);
  });

  it('classifies foreign errors by their marks, or by their cause, and anything else as 1', () => {
    expect(exitCodeOf(new Error('plain'))).toBe(EXIT.other);
    expect(exitCodeOf(new TypeError('a bug'))).toBe(EXIT.other);
    expect(exitCodeOf('a string')).toBe(EXIT.other);
    expect(exitCodeOf(Object.create(null))).toBe(EXIT.other);
    expect(exitCodeOf(undefined)).toBe(EXIT.other);
    expect(exitCodeOf(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toBe(EXIT.io);
    expect(exitCodeOf(new DOMException('aborted', 'AbortError'))).toBe(EXIT.interrupted);
    expect(exitCodeOf(new Error('outer', { cause: new UsageError('bad') }))).toBe(EXIT.config);
    expect(exitCodeOf(new AggregateError([new jobErrors.BudgetExceededError('j', 'max_bytes', 'big')]))).toBe(EXIT.payment);
    expect(exitCodeOf(new c.NotFoundError('404'), true)).toBe(EXIT.interrupted);
  });
});

describe('one error classification', () => {
  it('spells every code the same way (UPPER_SNAKE_CASE)', () => {
    for (const [error] of SAMPLES) expect((error as SluiceError).code, error.constructor.name).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
  });

  it('has one ConfigError: the client, the kit and the package root export the same class, and every configuration mistake is one', () => {
    expect(c.ConfigError).toBe(ConfigError);
    expect(kitErrors.ConfigError).toBe(ConfigError);
    expect(library.ConfigError).toBe(ConfigError);
    for (const error of [new UsageError('x'), new configModule.JobFileError('j.yaml', [{ path: '', message: 'x' }]), new SettingsError('x')]) expect(error).toBeInstanceOf(ConfigError);
    // The kit's form lists each issue with the value given.
    expect(new ConfigError('output', [{ path: 'format', message: 'expected parquet', value: 'parqet' }]).message).toBe('invalid output:\n  format: expected parquet (got "parqet")');
  });

  it("exports the kit's errors from the package root", () => {
    expect(library.KitError).toBe(kitErrors.KitError);
    expect(library.DestinationError).toBe(kitErrors.DestinationError);
    expect(library.DestinationCheckError).toBe(kitErrors.DestinationCheckError);
    expect(library.FormatError).toBe(kitErrors.FormatError);
  });

  it('gives each class its exit code, job retry and run state from the one table', () => {
    const expected: [Error, { exit: number; retryJob: boolean; keepRunState: boolean }][] = [
      [new c.NetworkError('down', { phase: 'connect' }), { exit: EXIT.other, retryJob: true, keepRunState: true }],
      [new c.RateLimitedError('429', { retryAfterMs: undefined }), { exit: EXIT.other, retryJob: true, keepRunState: true }],
      [new c.ExecutionFailedError('failed', {}), { exit: EXIT.execution, retryJob: true, keepRunState: false }],
      [new c.PartialResultError('truncated'), { exit: EXIT.execution, retryJob: false, keepRunState: false }],
      [new c.InvalidApiKeyError('401'), { exit: EXIT.auth, retryJob: false, keepRunState: false }],
      [new c.QueryArchivedError('403 archived'), { exit: EXIT.config, retryJob: false, keepRunState: false }],
      [new ConfigError('no S3 credentials'), { exit: EXIT.config, retryJob: false, keepRunState: false }],
      [new kitErrors.DestinationError('s3://b/p', 'uploading', new Error('503')), { exit: EXIT.io, retryJob: true, keepRunState: false }],
      [new kitErrors.DestinationCheckError('s3://b/p', 'no bucket'), { exit: EXIT.io, retryJob: false, keepRunState: false }],
      [new jobErrors.JobBusyError('j', 'held'), { exit: EXIT.other, retryJob: false, keepRunState: true }],
      [new icebergErrors.IcebergSchemaConflictError('file:///t', 'metadata/v1.metadata.json', 'a', 'long', 'string'), { exit: EXIT.config, retryJob: false, keepRunState: false }],
      [new icebergErrors.IcebergNotATableError('s3://b/t', 'x.csv'), { exit: EXIT.io, retryJob: false, keepRunState: false }],
      [new icebergErrors.IcebergCommitConflictError('s3://b/t', 'metadata/v2.metadata.json', 4), { exit: EXIT.other, retryJob: true, keepRunState: false }],
      [new c.AbortedError('stop', {}), { exit: EXIT.interrupted, retryJob: false, keepRunState: true }],
      [Object.assign(new Error('disk full'), { code: 'ENOSPC' }), { exit: EXIT.io, retryJob: true, keepRunState: false }],
    ];
    for (const [error, policy] of expected) expect(policyOf(error), error.constructor.name).toEqual(policy);
    for (const [error, code] of SAMPLES) expect(policyOf(error).exit, error.constructor.name).toBe(code);
  });

  it('tells an archived query (403) from a key without the scope (403)', () => {
    expect(statusError(403, 'Not allowed: query 7 is archived; unarchive it to execute it', undefined, {})).toBeInstanceOf(c.QueryArchivedError);
    expect(statusError(403, 'Not allowed: this API key lacks the Read/Write scope', undefined, {})).toBeInstanceOf(c.ForbiddenError);
  });
});
