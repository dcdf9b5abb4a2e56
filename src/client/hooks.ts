import type { ServiceError } from './errors.ts';

export interface RequestEvent {
  /** Client method, e.g. `getStatus`. */
  operation: string;
  httpMethod: string;
  /** Key-free URL. */
  url: string;
  /** 1 for the first attempt. */
  attempt: number;
}

export interface RetryEvent {
  operation: string;
  /** The attempt that failed (1-based); the next one is `attempt + 1`. */
  attempt: number;
  delayMs: number;
  error: ServiceError;
}

/** A request the key's rate governor held back before sending it (its token not yet due, or a 429's pause). */
export interface ThrottleEvent {
  operation: string;
  waitedMs: number;
}

export interface ClientStats {
  /** HTTP attempts started. */
  requests: number;
  /** Attempts that were retries of an earlier failed attempt. */
  retries: number;
}
