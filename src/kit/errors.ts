import { SluiceError, type SluiceErrorOptions } from '../errors.ts';
import { redact } from './redact.ts';

// Failures of formats, destinations and exports. Connectors throw these (they import only src/kit),
// and callers branch on the class or on `code` without knowing every connector.

export type KitErrorOptions = Pick<SluiceErrorOptions, 'cause' | 'retryable'>;

export class KitError extends SluiceError {
  readonly code: string;

  constructor(code: string, message: string, options: KitErrorOptions = {}) {
    super(message, options);
    this.code = code;
  }
}

export interface ConfigIssue {
  /** Dotted path of the offending field, e.g. `s3.storage_class` or `format_options.compression`. */
  path: string;
  message: string;
  /** The value that was given (undefined when the field is missing); credentials are redacted. */
  value: unknown;
}

/** A configuration object did not validate; every issue names the field and the value given. */
export class ConfigError extends KitError {
  readonly issues: readonly ConfigIssue[];

  constructor(subject: string, issues: readonly ConfigIssue[]) {
    // Redacted once, here: the message, `issues` and anything that serializes the error echo only this.
    const safe = issues.map((i) => ({ ...i, value: redact(i.value, i.path) }));
    const lines = safe.map((i) => `  ${i.path || '(root)'}: ${i.message}${describeValue(i.value)}`);
    super('config_invalid', `invalid ${subject}:\n${lines.join('\n')}`);
    this.issues = safe;
  }
}

/** A destination (disk, S3, stdout) failed to store or publish bytes. */
export class DestinationError extends KitError {
  readonly url: string;

  constructor(url: string, action: string, cause: unknown, retryable = false, code = 'destination_failed') {
    super(code, `${action} ${url} failed: ${messageOf(cause)}`, { cause, retryable });
    this.url = url;
  }
}

/**
 * A conditional publish found the object changed (or present, for a create-only publish): another
 * writer committed first. Not retryable as is: the caller must read the new state and decide.
 */
export class PreconditionFailedError extends DestinationError {
  readonly object: string;

  constructor(url: string, object: string, detail: string, cause?: unknown) {
    super(url, `publishing ${object} to`, cause ?? new Error(detail), false, 'precondition_failed');
    this.object = object;
  }
}

/** An encoder could not turn a batch into bytes (bad value for the type, wasm failure). */
export class FormatError extends KitError {
  constructor(format: string, message: string, cause?: unknown) {
    super('format_failed', `${format}: ${message}${cause === undefined ? '' : `: ${messageOf(cause)}`}`, { cause });
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describeValue(value: unknown): string {
  if (value === undefined) return '';
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    text = String(value);
  }
  if (text === undefined) text = String(value);
  return ` (got ${text.length > 120 ? `${text.slice(0, 117)}...` : text})`;
}
