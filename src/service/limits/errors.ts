import { MESSAGES } from '../../protocol/index.ts';
import { HttpError } from '../http/errors.ts';

/**
 * Refusals of the limits module. They are HttpErrors: the status and wire message travel with
 * them from wherever the limit is checked (executions, the scheduler, routes) to the response.
 */
export class LimitError extends HttpError {
}

/** 402: the team's credits of this billing cycle would be exceeded. */
export class CreditLimitError extends LimitError {
  readonly team: string;
  readonly needed: number;
  readonly available: number;

  constructor(team: string, needed: number, available: number) {
    super(402, MESSAGES.billingLimit);
    this.team = team;
    this.needed = needed;
    this.available = available;
  }
}

/** 429 with Retry-After in whole seconds. */
export class RateLimitError extends LimitError {
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number) {
    super(429, MESSAGES.tooManyRequests, { 'retry-after': String(retryAfterSeconds) });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
