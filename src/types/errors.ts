import { SluiceError } from '../errors.ts';
import { previewValue } from './json.ts';

/** Where a value that does not fit its column was found, and why it does not fit. */
export interface ColumnValueDetail {
  column: string;
  type: string;
  rowOffset: number;
  path: string;
  value: unknown;
  reason: string;
}

/**
 * A value does not fit its column's type. Never retryable: the same data gives the same value.
 * The two concrete classes differ in direction (wire -> JS, JS -> Arrow) and in their message prefix.
 */
export abstract class ColumnValueError extends SluiceError {
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
  /** Why it does not fit. */
  readonly reason: string;

  constructor(prefix: string, args: ColumnValueDetail) {
    super(
      `${prefix}"${args.column}" (${args.type}), row ${args.rowOffset}${args.path ? `, at ${args.path}` : ''}: ` +
        `${previewValue(args.value)} ${args.reason}`,
    );
    this.column = args.column;
    this.type = args.type;
    this.rowOffset = args.rowOffset;
    this.path = args.path;
    this.value = args.value;
    this.reason = args.reason;
  }
}

/**
 * A value from the service does not fit its column's declared type: a string in a bigint
 * column, a 79-digit uint256, a bad date.
 */
export class ValueDecodeError extends ColumnValueError {
  readonly code = 'VALUE_DECODE';
  constructor(args: ColumnValueDetail) {
    super('column ', args);
  }
}

/**
 * A JS row value does not fit the Arrow column it is appended to (a decimal with too many
 * digits, an int256 beyond Decimal256(76, 0), a value of the wrong JS type). `rowOffset` counts
 * the rows appended to the builder before this one, over all batches, from the builder's
 * `firstRowOffset` (the stream passes its `startOffset`, so it is the row's offset in the result).
 */
export class ArrowValueError extends ColumnValueError {
  readonly code = 'ARROW_VALUE';
  constructor(args: ColumnValueDetail) {
    super('Arrow column ', args);
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
