import type { OutputStream } from './io.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly format: LogFormat;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger whose lines all carry `fields` (e.g. the job name). */
  child(fields: LogFields): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  readonly format: LogFormat;
  readonly level?: LogLevel;
  readonly now?: () => Date;
  /** Called before a text line is written (the progress bar clears its line). */
  readonly beforeWrite?: () => void;
}

/**
 * Logs go to stderr so stdout stays data (`sluice query ... > rows.csv`). In JSON format every
 * line is one object: `{"time","level","msg",...fields}`, which log collectors parse without
 * configuration; bigints are written as exact numbers in strings.
 */
export function createLogger(stream: OutputStream, options: LoggerOptions, base: LogFields = {}): Logger {
  const min = ORDER[options.level ?? 'info'];
  const now = options.now ?? (() => new Date());
  const emit = (level: LogLevel, message: string, fields: LogFields = {}): void => {
    if (ORDER[level] < min) return;
    const all = { ...base, ...fields };
    // A multi-line message (an SQL error with its caret excerpt) keeps its first line as the
    // message; the others stay lines: an array in JSON, indented lines under it in text.
    const [first = '', ...detail] = message.split('\n');
    if (options.format === 'json') {
      stream.write(`${JSON.stringify({ time: now().toISOString(), level, msg: first, ...(detail.length > 0 ? { detail } : {}), ...all }, jsonSafe)}\n`);
      return;
    }
    options.beforeWrite?.();
    const prefix = level === 'info' ? '' : `${level}: `;
    const extras = Object.entries(all)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v, jsonSafe)}`);
    const rest = detail.map((line) => `  ${line}\n`).join('');
    stream.write(`${prefix}${first}${extras.length > 0 ? `  ${extras.join(' ')}` : ''}\n${rest}`);
  };
  return {
    format: options.format,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(stream, options, { ...base, ...fields }),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return value.message;
  return value;
}

/** `auto`: JSON when stderr is not a terminal (containers, CI, pipes), text on a terminal. */
export function resolveLogFormat(option: string | undefined, stderr: OutputStream): LogFormat {
  if (option === 'json' || option === 'text') return option;
  return stderr.isTTY ? 'text' : 'json';
}
