import { redact } from './redact.ts';

/**
 * The root of every error sluice throws on purpose. Each failure mode is its own subclass with a
 * stable `code`, so callers branch with `instanceof` or on `code` and the CLI maps classes to exit
 * codes in one table (src/cli/exitCodes.ts). An error is created once, where the failure is
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
  /** Stable machine-readable name of the failure mode in UPPER_SNAKE_CASE, e.g. `RATE_LIMITED` or `CONFIG_INVALID`. */
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

export interface ConfigIssue {
  /** Dotted path of the offending field, e.g. `s3.storage_class` or `format_options.compression`. */
  path: string;
  message: string;
  /** The value that was given (undefined when the field is missing); credentials are redacted. */
  value?: unknown;
}

export interface ConfigErrorOptions {
  cause?: unknown;
  issues?: readonly ConfigIssue[];
}

/**
 * Settings that cannot work: a job file, an output's options, a client option, a command line, a
 * missing key or credential. The one class for every configuration mistake (subclasses add where
 * it was found); retrying does not help, the user has to change something. Exit code 2.
 *
 * `new ConfigError(subject, issues)` lists each issue under "invalid <subject>:" (the form
 * connectors use); `new ConfigError(message, { cause, issues })` takes the message as given.
 */
export class ConfigError extends SluiceError {
  readonly code: string = 'CONFIG_INVALID';
  readonly issues: readonly ConfigIssue[];

  constructor(subject: string, issues: readonly ConfigIssue[]);
  constructor(message: string, options?: ConfigErrorOptions);
  constructor(text: string, second: readonly ConfigIssue[] | ConfigErrorOptions = {}) {
    // Redacted once, here: the message, `issues` and anything that serializes the error echo only this.
    const given = Array.isArray(second) ? second : ((second as ConfigErrorOptions).issues ?? []);
    const issues = given.map((i) => ({ ...i, value: redact(i.value, i.path) }));
    const message = Array.isArray(second) ? `invalid ${text}:\n${issues.map((i) => `  ${i.path || '(root)'}: ${i.message}${describeValue(i.value)}`).join('\n')}` : text;
    super(message, Array.isArray(second) ? {} : { cause: (second as ConfigErrorOptions).cause });
    this.issues = issues;
  }
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
