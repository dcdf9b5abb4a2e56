import { previewValue } from './json.ts';

/**
 * A value from the service does not fit its column's declared type: a string in a bigint
 * column, a 79-digit uint256, a bad date. Never retried: the same page gives the same value.
 */
export class ValueDecodeError extends Error {
  override name = 'ValueDecodeError';
  readonly code = 'VALUE_DECODE';
  readonly retryable = false;
  /** Column name. */
  readonly column: string;
  /** The column's type string as the service reported it. */
  readonly type: string;
  /** Offset of the row in the whole result (0-based). */
  readonly rowOffset: number;
  /** Where inside a nested value (`[2].b`), empty at the top. */
  readonly path: string;
  /** The offending (innermost) value as received. */
  readonly value: unknown;

  constructor(args: { column: string; type: string; rowOffset: number; path: string; value: unknown; reason: string }) {
    super(
      `column "${args.column}" (${args.type}), row ${args.rowOffset}${args.path ? `, at ${args.path}` : ''}: ` +
        `${previewValue(args.value)} ${args.reason}`,
    );
    this.column = args.column;
    this.type = args.type;
    this.rowOffset = args.rowOffset;
    this.path = args.path;
    this.value = args.value;
  }
}

/**
 * A JS row value does not fit the Arrow column it is appended to (a decimal with too many
 * digits, an int256 beyond Decimal256(76, 0), a value of the wrong JS type).
 */
export class ArrowValueError extends Error {
  override name = 'ArrowValueError';
  readonly code = 'ARROW_VALUE';
  readonly retryable = false;
  readonly column: string;
  readonly type: string;
  /** Rows appended to the builder before this one, over all batches. */
  readonly rowOffset: number;
  readonly path: string;
  readonly value: unknown;

  constructor(args: { column: string; type: string; rowOffset: number; path: string; value: unknown; reason: string }) {
    super(
      `Arrow column "${args.column}" (${args.type}), row ${args.rowOffset}${args.path ? `, at ${args.path}` : ''}: ` +
        `${previewValue(args.value)} ${args.reason}`,
    );
    this.column = args.column;
    this.type = args.type;
    this.rowOffset = args.rowOffset;
    this.path = args.path;
    this.value = args.value;
  }
}

/**
 * Internal: thrown by a per-type decoder or column builder, which knows the value and the
 * reason but not the column or row; the row-level code wraps it once into a public error.
 */
export class Misfit extends Error {
  readonly value: unknown;
  path: string;
  constructor(value: unknown, reason: string, path = '') {
    super(reason);
    this.value = value;
    this.path = path;
  }
}

/** Prefix the nested location (`[3]`, `.name`, `{key}`) of a misfit raised further down. */
export function atPath(error: unknown, step: string): unknown {
  if (error instanceof Misfit) error.path = step + error.path;
  return error;
}
