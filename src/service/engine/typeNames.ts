// DuckDB result types -> the column_types names of protocol.md section 5.
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { customUnionTag } from './customTypes.ts';

/** The types named by their id alone. */
const SCALAR_NAMES: ReadonlyMap<DuckDBTypeId, string> = new Map([
  [DuckDBTypeId.BOOLEAN, 'boolean'],
  [DuckDBTypeId.TINYINT, 'tinyint'],
  [DuckDBTypeId.SMALLINT, 'smallint'],
  [DuckDBTypeId.INTEGER, 'integer'],
  [DuckDBTypeId.BIGINT, 'bigint'],
  // Unsigned types widen to the next signed size; UBIGINT has none, so it is an exact decimal.
  [DuckDBTypeId.UTINYINT, 'smallint'],
  [DuckDBTypeId.USMALLINT, 'integer'],
  [DuckDBTypeId.UINTEGER, 'bigint'],
  [DuckDBTypeId.UBIGINT, 'decimal(20, 0)'],
  // 128-bit integers fit the 256-bit types (decimal(38, 0) would not hold 39 digits).
  [DuckDBTypeId.HUGEINT, 'int256'],
  [DuckDBTypeId.UHUGEINT, 'uint256'],
  [DuckDBTypeId.BIGNUM, 'int256'],
  [DuckDBTypeId.FLOAT, 'real'],
  [DuckDBTypeId.DOUBLE, 'double'],
  [DuckDBTypeId.ENUM, 'varchar'],
  [DuckDBTypeId.BLOB, 'varbinary'],
  [DuckDBTypeId.DATE, 'date'],
  [DuckDBTypeId.TIME, 'time(6)'],
  [DuckDBTypeId.TIME_NS, 'time(9)'],
  [DuckDBTypeId.TIME_TZ, 'time(6) with time zone'],
  [DuckDBTypeId.TIMESTAMP_S, 'timestamp(0)'],
  [DuckDBTypeId.TIMESTAMP_MS, 'timestamp(3)'],
  [DuckDBTypeId.TIMESTAMP, 'timestamp(6)'],
  [DuckDBTypeId.TIMESTAMP_NS, 'timestamp(9)'],
  [DuckDBTypeId.TIMESTAMP_TZ, 'timestamp(6) with time zone'],
  [DuckDBTypeId.INTERVAL, 'interval day to second'],
  [DuckDBTypeId.UUID, 'uuid'],
]);

export function protocolTypeName(type: DuckDBType): string {
  const scalar = SCALAR_NAMES.get(type.typeId);
  if (scalar !== undefined) return scalar;
  switch (type.typeId) {
    case DuckDBTypeId.DECIMAL: return `decimal(${type.width}, ${type.scale})`;
    case DuckDBTypeId.VARCHAR: return type.alias?.toUpperCase() === 'JSON' ? 'json' : 'varchar';
    case DuckDBTypeId.LIST:
    case DuckDBTypeId.ARRAY:
      return `array(${protocolTypeName(type.valueType)})`;
    case DuckDBTypeId.MAP:
      return `map(${protocolTypeName(type.keyType)}, ${protocolTypeName(type.valueType)})`;
    case DuckDBTypeId.STRUCT:
      return `row(${type.entryNames
        .map((name, i) => `${rowFieldName(name)} ${protocolTypeName(type.entryTypes[i]!)}`)
        .join(', ')})`;
    case DuckDBTypeId.UNION: {
      const tag = customUnionTag(type);
      if (tag === 'uint256' || tag === 'int256') return tag;
      if (tag === 'interval_year_to_month') return 'interval year to month';
      return `union(${type.memberTags
        .map((name, i) => `${rowFieldName(name)} ${protocolTypeName(type.memberTypes[i]!)}`)
        .join(', ')})`;
    }
    default:
      return type.toString().toLowerCase();
  }
}

/** Row field names are written bare when they are plain identifiers, else double-quoted. */
export function rowFieldName(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
