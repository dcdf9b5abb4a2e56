import { SluiceError, type SluiceErrorOptions } from './sluiceError.ts';

// Failures of formats, destinations and exports. Connectors throw these (they import only src/kit),
// and callers branch on the class or on `code` without knowing every connector.

export type KitErrorOptions = Pick<SluiceErrorOptions, 'cause' | 'retryable'>;

export class KitError extends SluiceError {
  /** UPPER_SNAKE_CASE, like every error code of the project (`DESTINATION_FAILED`). */
  readonly code: string;

  constructor(code: string, message: string, options: KitErrorOptions = {}) {
    super(message, options);
    this.code = code;
  }
}

// One ConfigError for the whole project: the kit re-exports it so connectors keep importing only src/kit.
export { ConfigError, type ConfigIssue } from './sluiceError.ts';

/** A destination (disk, S3, stdout) failed to store or publish bytes. */
export class DestinationError extends KitError {
  readonly url: string;

  constructor(url: string, action: string, cause: unknown, retryable = false) {
    super('DESTINATION_FAILED', `${action} ${url} failed: ${messageOf(cause)}`, { cause, retryable });
    this.url = url;
  }
}

/**
 * A conditional publish found the object changed (or present, for a create-only publish): another
 * writer committed first. Not retryable as is: the caller must read the new state and decide.
 */
export class PreconditionFailedError extends DestinationError {
  override readonly code: string = 'PRECONDITION_FAILED';
  readonly object: string;

  constructor(url: string, object: string, detail: string, cause?: unknown) {
    super(url, `publishing ${object} to`, cause ?? new Error(detail));
    this.object = object;
  }
}

/**
 * A destination checked before an export starts (folder writable, bucket there) that cannot work:
 * found before anything was spent, and not worth retrying.
 */
export class DestinationCheckError extends DestinationError {
  override readonly code: string = 'DESTINATION_CHECK_FAILED';
  constructor(url: string, why: string, cause?: unknown) {
    super(url, 'checking', new Error(why, cause === undefined ? undefined : { cause }));
  }
}

/** An encoder could not turn a batch into bytes (bad value for the type, wasm failure). */
export class FormatError extends KitError {
  constructor(format: string, message: string, cause?: unknown) {
    super('FORMAT_FAILED', `${format}: ${message}${cause === undefined ? '' : `: ${messageOf(cause)}`}`, { cause });
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
