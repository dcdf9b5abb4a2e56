/**
 * A column type as the service reports it in `column_types`, parsed.
 * Discriminated on `kind`; see `parseType` and `formatType`.
 */
export type SqlType =
  | { kind: 'boolean' }
  | { kind: 'tinyint' }
  | { kind: 'smallint' }
  | { kind: 'integer' }
  | { kind: 'bigint' }
  | { kind: 'uint256' }
  | { kind: 'int256' }
  | { kind: 'real' }
  | { kind: 'double' }
  /** `decimal` alone is `decimal(38, 0)`, `decimal(p)` is `decimal(p, 0)`. 1 <= p <= 76, 0 <= s <= p. */
  | { kind: 'decimal'; precision: number; scale: number }
  /** `length` absent for unbounded `varchar`. */
  | { kind: 'varchar'; length?: number }
  | { kind: 'char'; length: number }
  | { kind: 'varbinary' }
  | { kind: 'json' }
  | { kind: 'date' }
  /** Fractional second digits, 0..12; `time` alone is `time(3)`. */
  | { kind: 'time'; precision: number }
  /** Fractional second digits, 0..12; `timestamp` alone is `timestamp(3)`. */
  | { kind: 'timestamp'; precision: number; withTimeZone: boolean }
  | { kind: 'interval_day_to_second' }
  | { kind: 'interval_year_to_month' }
  | { kind: 'array'; element: SqlType }
  | { kind: 'map'; key: SqlType; value: SqlType }
  | { kind: 'row'; fields: RowField[] }
  | { kind: 'uuid' }
  | { kind: 'ipaddress' }
  /** Anything not recognised, kept verbatim (trimmed): its values are carried as text. */
  | { kind: 'unknown'; text: string };

/**
 * A field of a `row(...)` type. Names keep their case and spelling because they key the JSON
 * objects of row values; an anonymous field (`row(bigint)`) is named `_col<i>`.
 */
export interface RowField {
  name: string;
  type: SqlType;
}

export type SqlKind = SqlType['kind'];

/** The member of {@link SqlType} of one kind: `SqlOf<'map'>` has `key` and `value`. */
export type SqlOf<K extends SqlKind> = Extract<SqlType, { kind: K }>;

/**
 * The canonical spelling of a type: lowercase keywords, `, ` between parameters,
 * `timestamp(p)` always with its precision. Unknown types print their original text.
 */
export function formatType(t: SqlType): string {
  switch (t.kind) {
    case 'decimal':
      return `decimal(${t.precision}, ${t.scale})`;
    case 'varchar':
      return t.length === undefined ? 'varchar' : `varchar(${t.length})`;
    case 'char':
      return `char(${t.length})`;
    case 'time':
      return `time(${t.precision})`;
    case 'timestamp':
      return `timestamp(${t.precision})${t.withTimeZone ? ' with time zone' : ''}`;
    case 'interval_day_to_second':
      return 'interval day to second';
    case 'interval_year_to_month':
      return 'interval year to month';
    case 'array':
      return `array(${formatType(t.element)})`;
    case 'map':
      return `map(${formatType(t.key)}, ${formatType(t.value)})`;
    case 'row':
      return `row(${t.fields.map((f) => `${formatFieldName(f.name)} ${formatType(f.type)}`).join(', ')})`;
    case 'unknown':
      return t.text;
    default:
      return t.kind;
  }
}

const BARE_NAME = /^[a-z_][a-z0-9_]*$/;

function formatFieldName(name: string): string {
  return BARE_NAME.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
