// The `sample` dataset: sample.all_types holds every column type of protocol.md section 5
// (extremes, nesting, NULLs), sample.events is a generated table of `rows` rows for paging and
// benchmarks. Both live in the engine's main database, so they survive restarts; loading is
// idempotent (events is regenerated only when its row count differs, or an older generator made it).
import type { DuckDBConnection } from '@duckdb/node-api';
import { INT256_MAX, INT256_MIN, UINT256_MAX } from '../customTypes.ts';
import { SAMPLE_EVENTS_VERSION, sampleEventsSelect } from './sampleEvents.ts';

export { sampleEventsSelect };

export const SAMPLE_ALL_TYPES_SQL = `
CREATE OR REPLACE TABLE sample.all_types AS
SELECT * FROM (VALUES
  (1, true, 1::TINYINT, 1::SMALLINT, 1, 9007199254740993::BIGINT,
   uint256('12345678901234567890'), int256('-5'), 1.5::REAL, 0.1::DOUBLE,
   '12345678901234567890123456.0123456789'::DECIMAL(38, 10), 'héllo, "world"' || chr(10) || 'line 2',
   '\\xDE\\xAD\\xBE\\xEF'::BLOB, '{"a": [1, 2], "b": null}'::JSON, DATE '2026-11-20', TIME '10:15:30.123456',
   TIMESTAMP '2026-11-20 10:15:30.123456', TIMESTAMPTZ '2026-11-20 10:15:30.123456+00',
   TIMESTAMP_MS '2026-11-20 10:15:30.123', TIMESTAMP_NS '2026-11-20 10:15:30.123456789',
   INTERVAL '1 day 02:03:04.567', interval_year_to_month(INTERVAL '1 year 2 months'),
   [1, 2, NULL]::BIGINT[], [{'a': 1, 'b': 'x'}]::STRUCT(a BIGINT, b VARCHAR)[],
   MAP {'k1': 1, 'k2': NULL}::MAP(VARCHAR, BIGINT),
   {'x': 1, 'nested': {'y': 'deep', 'z': [1.5, 2.5]}}::STRUCT(x INTEGER, nested STRUCT(y VARCHAR, z DOUBLE[])),
   '0f8fad5b-d9cb-469f-a165-70867728950e'::UUID, 170141183460469231731687303715884105727::HUGEINT),
  (2, false, 127::TINYINT, 32767::SMALLINT, 2147483647, 9223372036854775807::BIGINT,
   uint256('${UINT256_MAX}'), int256('${INT256_MAX}'), 'NaN'::REAL, 'Infinity'::DOUBLE,
   '9999999999999999999999999999.9999999999'::DECIMAL(38, 10), '',
   ''::BLOB, '[]'::JSON, DATE '1970-01-01', TIME '00:00:00',
   TIMESTAMP '1970-01-01 00:00:00', TIMESTAMPTZ '1970-01-01 00:00:00+00',
   TIMESTAMP_MS '1970-01-01 00:00:00', TIMESTAMP_NS '1970-01-01 00:00:00',
   INTERVAL '0 seconds', interval_year_to_month(INTERVAL '0 months'),
   []::BIGINT[], []::STRUCT(a BIGINT, b VARCHAR)[], MAP {}::MAP(VARCHAR, BIGINT),
   {'x': NULL, 'nested': NULL}::STRUCT(x INTEGER, nested STRUCT(y VARCHAR, z DOUBLE[])),
   '00000000-0000-0000-0000-000000000000'::UUID, 0::HUGEINT),
  (3, NULL, (-128)::TINYINT, (-32768)::SMALLINT, -2147483648, (-9223372036854775808)::BIGINT,
   uint256('0'), int256('${INT256_MIN}'), '-Infinity'::REAL, (-1.0e308)::DOUBLE,
   '-0.0000000001'::DECIMAL(38, 10), '😀 ünïcode',
   '\\x00\\xFF'::BLOB, '"text"'::JSON, DATE '0001-01-01', TIME '23:59:59.999999',
   TIMESTAMP '2000-02-29 23:59:59.999999', TIMESTAMPTZ '2000-02-29 23:59:59.999999+00',
   TIMESTAMP_MS '2000-02-29 23:59:59.999', TIMESTAMP_NS '2000-02-29 23:59:59.999999999',
   INTERVAL '-1 day -02:03:04.567', interval_year_to_month(INTERVAL '-3 months'),
   [NULL]::BIGINT[], [NULL, {'a': NULL, 'b': NULL}]::STRUCT(a BIGINT, b VARCHAR)[],
   MAP {'': -1}::MAP(VARCHAR, BIGINT),
   {'x': -1, 'nested': {'y': NULL, 'z': []}}::STRUCT(x INTEGER, nested STRUCT(y VARCHAR, z DOUBLE[])),
   'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID, (-170141183460469231731687303715884105728)::HUGEINT),
  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
) AS t(id, c_boolean, c_tinyint, c_smallint, c_integer, c_bigint, c_uint256, c_int256, c_real,
       c_double, c_decimal, c_varchar, c_varbinary, c_json, c_date, c_time, c_timestamp,
       c_timestamptz, c_timestamp_ms, c_timestamp_ns, c_interval, c_interval_ym, c_array,
       c_array_rows, c_map, c_row, c_uuid, c_hugeint)
ORDER BY id`;

/**
 * The rows are stored in id order without a sort: DuckDB keeps the order of range()'s rows in a
 * CREATE TABLE AS while preserve_insertion_order is on (its default, never turned off here).
 * An ORDER BY sorted them again, which took generating 5M rows from ~220 to ~460 MB.
 */
export function sampleEventsSql(rows: number): string {
  return `
CREATE OR REPLACE TABLE sample.events AS
${sampleEventsSelect(rows)}`;
}

/**
 * Creates the sample tables that are missing, sample.events with `rows` rows (the default when
 * unset). An existing sample.events is kept whatever its size unless `rows` asks for another
 * count, or an older generator made it (its size is kept): starting without a count never
 * replaces a table made with one. Returns what was made, for the service's log, or undefined.
 */
export async function loadSampleDataset(conn: DuckDBConnection, rows: number | undefined, defaultRows: number): Promise<string | undefined> {
  await conn.run('CREATE SCHEMA IF NOT EXISTS sample');
  const existing = await conn.runAndReadAll(
    "SELECT table_name, comment FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'sample'",
  );
  const tables = new Map(existing.getRowObjectsJson().map((r) => [String(r['table_name']), r['comment'] === null ? '' : String(r['comment'])]));
  if (!tables.has('all_types')) await conn.run(SAMPLE_ALL_TYPES_SQL);
  const comment = tables.get('events');
  const held = comment === undefined ? undefined : Number((await conn.runAndReadAll('SELECT count(*)::BIGINT AS n FROM sample.events')).getRowObjectsJson()[0]?.['n']);
  const current = comment === VERSION_COMMENT;
  if (held !== undefined && current && (rows === undefined || rows === held)) return undefined;
  const count = rows ?? held ?? defaultRows;
  await conn.run(sampleEventsSql(count));
  await conn.run(`COMMENT ON TABLE sample.events IS '${VERSION_COMMENT}'`);
  const made = `sample.events ${held === undefined ? 'generated' : 'rebuilt'} with ${count.toLocaleString('en-US')} rows`;
  if (held === undefined) return made;
  return current ? `${made} (it held ${held.toLocaleString('en-US')}; the job or command asked for ${count.toLocaleString('en-US')})` : `${made}: an older version of sluice made it (its day column was not the date of ts)`;
}

const VERSION_COMMENT = `sluice sample.events v${SAMPLE_EVENTS_VERSION}`;
