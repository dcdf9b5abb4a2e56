/**
 * The root of every error sluice throws on purpose. Each failure mode is its own subclass with a
 * stable `code`, so callers branch with `instanceof` or on `code` and the CLI maps classes to exit
 * codes in one table (src/cli/exit-codes.ts). An error is created once, where the failure is
 * understood, and passed up unchanged; the original failure stays reachable as `cause`.
 */

export interface SluiceErrorOptions {
  /** The failure this one explains (ES2022 `cause`), kept unchanged. */
  cause?: unknown;
  /** Whether the same call could succeed if tried again. A class may fix it instead. */
  retryable?: boolean;
  /** The HTTP status of the answer that carried the failure, when there was one. */
  status?: number | undefined;
}

export abstract class SluiceError extends Error {
  /** Stable machine-readable name of the failure mode, e.g. `RATE_LIMITED` or `config_invalid`. */
  abstract readonly code: string;
  readonly retryable: boolean;
  readonly status?: number;

  constructor(message: string, options: SluiceErrorOptions = {}) {
    // No `cause` key at all when there is none, so `'cause' in error` stays meaningful.
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retryable = options.retryable ?? false;
    this.status = options.status;
  }
}
