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

export interface ClientStats {
  /** HTTP attempts started. */
  requests: number;
  /** Attempts that were retries of an earlier failed attempt. */
  retries: number;
}
