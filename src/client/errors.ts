/**
 * Every failure the client reports is a `ServiceError` (a `SluiceError`), one subclass per failure mode.
 * Besides the shared `code`, `status`, `retryable` and `cause`, each carries the context a reader
 * needs: the client method, the URL (the API key is never part of it) and the execution id when one
 * is involved.
 *
 * Errors are created once, at the layer that understands the failure, and passed up unchanged
 * ("wrap once, never re-wrap"): the retry layer and the high-level calls rethrow them as they are.
 */

import { SluiceError } from '../errors.ts';

export interface ErrorContext {
  /** Client method that failed, e.g. `getStatus`. */
  method?: string;
  /** `GET http://host/api/v1/...` style target, key stripped. */
  url?: string;
  executionId?: string;
  status?: number;
  /** The service's own words (`{"error": ...}`), for callers that branch on them. */
  serverMessage?: string;
  cause?: unknown;
}

export class ServiceError extends SluiceError {
  readonly code: string = 'SERVICE_ERROR';
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly executionId: string | undefined;
  readonly serverMessage: string | undefined;

  constructor(detail: string, ctx: ErrorContext & { retryable?: boolean } = {}, layout: MessageLayout = 'context-first') {
    super(layout === 'context-first' ? formatMessage(detail, ctx) : detailFirst(detail, ctx), ctx);
    this.method = ctx.method;
    this.url = ctx.url;
    this.executionId = ctx.executionId;
    this.serverMessage = ctx.serverMessage;
  }
}

/**
 * Where a message names its context: before the detail (`getStatus GET http://... : 404 ...`), or
 * after it on a line of its own, for a detail that is what the reader acts on (an engine's message
 * and a caret under the SQL).
 */
export type MessageLayout = 'context-first' | 'detail-first';

function detailFirst(detail: string, ctx: ErrorContext): string {
  const where = [[ctx.method, ctx.url].filter(Boolean).join(' '), ctx.executionId ? `execution ${ctx.executionId}` : ''].filter(Boolean).join(', ');
  return where ? `${detail}\n(${where})` : detail;
}

function formatMessage(detail: string, ctx: ErrorContext): string {
  const where = [ctx.method, ctx.url].filter(Boolean).join(' ');
  const exec = ctx.executionId ? ` (execution ${ctx.executionId})` : '';
  return where || exec ? `${where}${exec}: ${detail}` : detail;
}

// ---- configuration and arguments (raised before any request is sent) ----

/** The project's one ConfigError (src/errors.ts): a client option or setting that cannot work. */
export { ConfigError } from '../errors.ts';

export class InvalidArgumentError extends ServiceError {
  override readonly code = 'INVALID_ARGUMENT';
}

// ---- HTTP statuses ----

export class BadRequestError extends ServiceError {
  override readonly code = 'BAD_REQUEST';
}

export class InvalidApiKeyError extends ServiceError {
  override readonly code = 'INVALID_API_KEY';
}

/** 402 for the billing cycle: the team's credits would be exceeded. */
export class PaymentRequiredError extends ServiceError {
  override readonly code = 'PAYMENT_REQUIRED';
}

/**
 * 402 with `WWW-Authenticate: Payment`: the service asks to be paid for this one request (the
 * real service may answer a request without a key so), unlike the billing cycle's 402. Never
 * retried: this client does not pay; `challenge` is what the service asked for.
 */
export class PaymentChallengeError extends ServiceError {
  override readonly code = 'PAYMENT_CHALLENGE';
  readonly challenge: string;

  constructor(detail: string, ctx: ErrorContext & { challenge: string }) {
    super(detail, ctx);
    this.challenge = ctx.challenge;
  }
}

export class ForbiddenError extends ServiceError {
  override readonly code = 'FORBIDDEN';
}

/**
 * A saved query that is archived cannot be executed (the service answers 403, as it does for a
 * key without the scope; the message tells them apart). Not an authentication problem: unarchive
 * the query or name another one.
 */
export class QueryArchivedError extends ServiceError {
  override readonly code = 'QUERY_ARCHIVED';
}

export class NotFoundError extends ServiceError {
  override readonly code = 'NOT_FOUND';
}

export class ConflictError extends ServiceError {
  override readonly code = 'CONFLICT';
}

/**
 * An answer that says "not now" (429, 5xx): retryable, and it may say when with `Retry-After`.
 * Not exported, so the public classes stay the ones a caller branches on; `saysRetryLater` tests for it.
 */
abstract class RetryLaterError extends ServiceError {
  override readonly retryable = true;
  /** From `Retry-After` (seconds or an HTTP date), when the service (or a proxy in front of it) sent one. */
  readonly retryAfterMs: number | undefined;
  constructor(detail: string, ctx: ErrorContext & { retryAfterMs?: number | undefined }) {
    super(detail, ctx);
    this.retryAfterMs = ctx.retryAfterMs;
  }
}

/** A 429 or 5xx answer: the two statuses the retry layer honours `Retry-After` on. */
export function saysRetryLater(error: unknown): error is RateLimitedError | ServerError {
  return error instanceof RetryLaterError;
}

export class RateLimitedError extends RetryLaterError {
  override readonly code = 'RATE_LIMITED';
}

export class ServerError extends RetryLaterError {
  override readonly code = 'SERVER_ERROR';
}

// ---- transport ----

/** Where a connection failure happened; decides whether a non-idempotent request may be resent. */
export type NetworkPhase = 'connect' | 'response-headers' | 'response-body';

export class NetworkError extends ServiceError {
  override readonly code: string = 'NETWORK';
  override readonly retryable: boolean = true;
  readonly phase: NetworkPhase;
  constructor(detail: string, ctx: ErrorContext & { phase: NetworkPhase }) {
    super(detail, ctx);
    this.phase = ctx.phase;
  }
  /** False only when the connection failed before the request could be written. */
  get requestSent(): boolean {
    return this.phase !== 'connect';
  }
}

/**
 * An answer whose body the client could not decode: a content coding it does not know, or a body
 * that is not valid in its coding (corrupt, or cut short). Retried as a connection lost mid-body.
 */
export class ContentEncodingError extends NetworkError {
  override readonly code = 'CONTENT_ENCODING';
}

/**
 * A submission (execute, refresh, create) whose request reached the service but whose answer was lost.
 * The service may have accepted it; resending could start a second execution, so the client does not.
 */
export class SubmissionOutcomeUnknownError extends NetworkError {
  override readonly code = 'SUBMISSION_OUTCOME_UNKNOWN';
  override readonly retryable = false;
}

export class TimeoutError extends ServiceError {
  override readonly code = 'TIMEOUT';
  // Retryable or not depends on the call (a resubmission may not be resent), so the caller says.
  constructor(detail: string, ctx: ErrorContext & { retryable: boolean }) {
    super(detail, ctx);
  }
}

/** The caller's `AbortSignal` fired. Named `AbortError` so `err.name === 'AbortError'` checks work. */
export class AbortedError extends ServiceError {
  override readonly code = 'ABORTED';
  constructor(detail: string, ctx: ErrorContext) {
    super(detail, ctx);
    this.name = 'AbortError';
  }
}

export class InvalidResponseError extends ServiceError {
  override readonly code = 'INVALID_RESPONSE';
}

// ---- execution outcomes ----

export interface SqlPosition {
  line?: number | undefined;
  column?: number | undefined;
}

export class ExecutionFailedError extends ServiceError {
  override readonly code = 'EXECUTION_FAILED';
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** The service's error type, e.g. `FAILED_TYPE_EXECUTION_FAILED`. */
  readonly errorType: string | undefined;
  /** The offending line of SQL with a caret under the column, when the SQL text is known. */
  readonly excerpt: string | undefined;
  constructor(detail: string, ctx: ErrorContext & SqlPosition & { errorType?: string; excerpt?: string | undefined }) {
    super(ctx.excerpt ? `${detail}\n${ctx.excerpt}` : detail, ctx, 'detail-first');
    this.line = ctx.line;
    this.column = ctx.column;
    this.errorType = ctx.errorType;
    this.excerpt = ctx.excerpt;
  }
}

export class ExecutionCanceledError extends ServiceError {
  override readonly code = 'EXECUTION_CANCELED';
}

export class ExecutionExpiredError extends ServiceError {
  override readonly code = 'EXECUTION_EXPIRED';
}

/** A COMPLETED_PARTIAL (truncated) result read without `allowPartialResults`. */
export class PartialResultError extends ServiceError {
  override readonly code = 'PARTIAL_RESULT';
}
