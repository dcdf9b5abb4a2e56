import * as clientErrors from '../client/errors.ts';
import * as rootErrors from '../errors.ts';
import * as kitErrors from '../kit/errors.ts';
import * as typeErrors from '../types/errors.ts';

/**
 * An error as it crosses from a worker thread: its class name and own fields. A structured clone
 * keeps only `message` and `stack` of an Error, so typed errors would arrive as plain ones and lose
 * their row in the error table (exit code, retry); they are sent as this and rebuilt on the other side.
 */
export interface SentError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  /** Own enumerable fields (`code`, `status`, `retryable`, a value error's column and row...), cloneable ones only. */
  readonly fields: Record<string, unknown>;
  readonly cause: SentError | undefined;
}

type ErrorClass = abstract new (...args: never[]) => Error;

/** The error classes a module exports: what a receiver hands `reviveError` for its own errors. */
export function errorClasses(...modules: readonly Record<string, unknown>[]): ErrorClass[] {
  return modules.flatMap((m) => Object.values(m)).filter((v): v is ErrorClass => typeof v === 'function' && v.prototype instanceof Error);
}

/**
 * The error classes of the layers every thread stands on, by name: what `revive` rebuilds without
 * being told. Those of the layers that start threads (the export's, the service's) are handed in by
 * the receiver, so this room imports nothing of them.
 */
const CLASSES: ReadonlyMap<string, ErrorClass> = new Map(errorClasses(clientErrors, rootErrors, kitErrors, typeErrors).map((c) => [c.name, c]));

export function sendError(error: unknown, depth = 0): SentError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), stack: undefined, fields: {}, cause: undefined };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause' || typeof value === 'function') continue;
    try {
      structuredClone(value);
      fields[key] = value;
    } catch {
      fields[key] = String(value);
    }
  }
  const cause = depth < 4 && error.cause !== undefined ? sendError(error.cause, depth + 1) : undefined;
  return { name: error.name, message: error.message, stack: error.stack, fields, cause };
}

/**
 * The error `sent` describes, as an instance of its own class when sluice has one of that name (so
 * `instanceof`, `code` and the error table work as if it had been thrown here), else a plain Error.
 * Built without running a constructor: the fields are those of the original. `classes` adds the
 * receiver's own error classes (the service's, which the rest of sluice does not load).
 */
export function reviveError(sent: SentError, classes: readonly ErrorClass[] = []): Error {
  const known = classes.find((c) => c.name === sent.name) ?? CLASSES.get(sent.name);
  const error = known ? (Object.create(known.prototype) as Error) : new Error(sent.message);
  Object.defineProperty(error, 'message', { value: sent.message, writable: true, configurable: true });
  Object.defineProperty(error, 'name', { value: sent.name, writable: true, configurable: true });
  if (sent.stack !== undefined) Object.defineProperty(error, 'stack', { value: sent.stack, writable: true, configurable: true });
  Object.assign(error, sent.fields);
  if (sent.cause !== undefined) Object.defineProperty(error, 'cause', { value: reviveError(sent.cause, classes), writable: true, configurable: true });
  return error;
}
