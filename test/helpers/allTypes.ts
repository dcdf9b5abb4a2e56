/**
 * The column types of sample.all_types (src/service/engine/tables/sampleDataset.ts) as the service names
 * them, in column order: written down by hand, so tests of the wire and of the pipeline check
 * against the same expectation.
 */
export const ALL_TYPES_COLUMN_TYPES: Readonly<Record<string, string>> = {
  id: 'integer',
  c_boolean: 'boolean',
  c_tinyint: 'tinyint',
  c_smallint: 'smallint',
  c_integer: 'integer',
  c_bigint: 'bigint',
  c_uint256: 'uint256',
  c_int256: 'int256',
  c_real: 'real',
  c_double: 'double',
  c_decimal: 'decimal(38, 10)',
  c_varchar: 'varchar',
  c_varbinary: 'varbinary',
  c_json: 'json',
  c_date: 'date',
  c_time: 'time(6)',
  c_timestamp: 'timestamp(6)',
  c_timestamptz: 'timestamp(6) with time zone',
  c_timestamp_ms: 'timestamp(3)',
  c_timestamp_ns: 'timestamp(9)',
  c_interval: 'interval day to second',
  c_interval_ym: 'interval year to month',
  c_array: 'array(bigint)',
  c_array_rows: 'array(row(a bigint, b varchar))',
  c_map: 'map(varchar, bigint)',
  c_row: 'row(x integer, nested row(y varchar, z array(double)))',
  c_uuid: 'uuid',
  c_hugeint: 'int256',
};
