import { z } from 'zod';

/**
 * The states our service emits (service-interface.md section 3), the cancelled one spelled
 * `QUERY_STATE_CANCELLED` as the real service sends it and every official client waits for it.
 */
export const EXECUTION_STATES = [
  'QUERY_STATE_PENDING',
  'QUERY_STATE_EXECUTING',
  'QUERY_STATE_FAILED',
  'QUERY_STATE_COMPLETED',
  'QUERY_STATE_CANCELLED',
  'QUERY_STATE_EXPIRED',
  'QUERY_STATE_COMPLETED_PARTIAL',
] as const;

export type ExecutionState = (typeof EXECUTION_STATES)[number];

/**
 * A state as read from the wire. Some documentation of the real service (and this service before)
 * spells the cancelled state `QUERY_STATE_CANCELED`; both spellings parse to
 * `QUERY_STATE_CANCELLED`, so callers compare against one value only.
 */
export const ExecutionStateSchema = z
  .enum([...EXECUTION_STATES, 'QUERY_STATE_CANCELED'])
  .transform((s): ExecutionState => (s === 'QUERY_STATE_CANCELED' ? 'QUERY_STATE_CANCELLED' : s));

export const TERMINAL_STATES: ReadonlySet<ExecutionState> = new Set<ExecutionState>([
  'QUERY_STATE_COMPLETED',
  'QUERY_STATE_COMPLETED_PARTIAL',
  'QUERY_STATE_FAILED',
  'QUERY_STATE_CANCELLED',
  'QUERY_STATE_EXPIRED',
]);

export function isTerminal(state: ExecutionState): boolean {
  return TERMINAL_STATES.has(state);
}

/** The states whose execution holds a result (the partial one is read only with `allow_partial_results=true`). */
export type ResultState = 'QUERY_STATE_COMPLETED' | 'QUERY_STATE_COMPLETED_PARTIAL';

/**
 * Whether an execution (a record, a status, a page: anything with a `state`) holds a readable result.
 * Narrows a union on `state` to its members with a result.
 */
export function holdsResult<T extends { state: ExecutionState }>(x: T): x is T & { state: ResultState } {
  return x.state === 'QUERY_STATE_COMPLETED' || x.state === 'QUERY_STATE_COMPLETED_PARTIAL';
}
