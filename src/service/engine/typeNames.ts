// DuckDB result types -> the column_types names of protocol.md section 5.
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';
import { customUnionTag } from './customTypes.ts';

export function protocolTypeName(type: DuckDBType): string {
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN: return 'boolean';
    case DuckDBTypeId.TINYINT: return 'tinyint';
    case DuckDBTypeId.SMALLINT: return 'smallint';
    case DuckDBTypeId.INTEGER: return 'integer';
    case DuckDBTypeId.BIGINT: return 'bigint';
    // Unsigned types widen to the next signed size; UBIGINT has none, so it is an exact decimal.
    case DuckDBTypeId.UTINYINT: return 'smallint';
    case DuckDBTypeId.USMALLINT: return 'integer';
    case DuckDBTypeId.UINTEGER: return 'bigint';
    case DuckDBTypeId.UBIGINT: return 'decimal(20, 0)';
    // 128-bit integers fit the 256-bit types (decimal(38, 0) would not hold 39 digits).
    case DuckDBTypeId.HUGEINT: return 'int256';
    case DuckDBTypeId.UHUGEINT: return 'uint256';
    case DuckDBTypeId.BIGNUM: return 'int256';
    case DuckDBTypeId.FLOAT: return 'real';
    case DuckDBTypeId.DOUBLE: return 'double';
    case DuckDBTypeId.DECIMAL: return `decimal(${type.width}, ${type.scale})`;
    case DuckDBTypeId.VARCHAR: return type.alias?.toUpperCase() === 'JSON' ? 'json' : 'varchar';
    case DuckDBTypeId.ENUM: return 'varchar';
    case DuckDBTypeId.BLOB: return 'varbinary';
    case DuckDBTypeId.DATE: return 'date';
    case DuckDBTypeId.TIME: return 'time(6)';
    case DuckDBTypeId.TIME_NS: return 'time(9)';
    case DuckDBTypeId.TIME_TZ: return 'time(6) with time zone';
    case DuckDBTypeId.TIMESTAMP_S: return 'timestamp(0)';
    case DuckDBTypeId.TIMESTAMP_MS: return 'timestamp(3)';
    case DuckDBTypeId.TIMESTAMP: return 'timestamp(6)';
    case DuckDBTypeId.TIMESTAMP_NS: return 'timestamp(9)';
    case DuckDBTypeId.TIMESTAMP_TZ: return 'timestamp(6) with time zone';
    case DuckDBTypeId.INTERVAL: return 'interval day to second';
    case DuckDBTypeId.UUID: return 'uuid';
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
