// sample.events' generator on its own, free of imports, so benchmarks can submit the same SELECT
// without loading DuckDB into their process (sampleDataset.ts builds the table from it).

/**
 * The version of the generator, kept as the table's comment: a table an older one made is rebuilt
 * (2: `day` is the UTC date of `ts`; before, it spread the rows over the year whatever `ts` said).
 */
export const SAMPLE_EVENTS_VERSION = 2;

/**
 * The SELECT that generates sample.events' rows (deterministic in `rows`; no ORDER BY): an event
 * every 1.234567 s from 2026-01-01 (1,000,000 rows: two weeks), `day` the UTC date of `ts`. Exported
 * so benchmarks can submit the same columns for any row count without building the table.
 */
export function sampleEventsSelect(rows: number): string {
  return `SELECT
  i AS id,
  TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_microseconds(i * 1234567) AS ts,
  'event_' || (i % 1000)::VARCHAR AS name,
  ((i * 7919) % 100000) / 100.0 AS value,
  (((i * 104729) % 100000000) / 10000.0)::DECIMAL(18, 4) AS amount,
  (i % 1000)::INTEGER AS quantity,
  i % 3 = 0 AS flag,
  (TIMESTAMP '2026-01-01 00:00:00' + to_microseconds(i * 1234567))::DATE AS day
FROM range(${Math.max(0, Math.trunc(rows))}) t(i)`;
}

/** sample.events' columns with the types the service reports for them (`column_types`). */
export const SAMPLE_EVENTS_COLUMNS: readonly { readonly name: string; readonly type: string }[] = [
  { name: 'id', type: 'bigint' },
  { name: 'ts', type: 'timestamp(6) with time zone' },
  { name: 'name', type: 'varchar' },
  { name: 'value', type: 'double' },
  { name: 'amount', type: 'decimal(18, 4)' },
  { name: 'quantity', type: 'integer' },
  { name: 'flag', type: 'boolean' },
  { name: 'day', type: 'date' },
];
