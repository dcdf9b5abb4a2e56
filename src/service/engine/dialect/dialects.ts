// The SQL dialects the service reads, on their own (no imports) for the settings schema and the
// engine's seam: dunesql (the real service's, translated) and duckdb (DuckDB's, as written).
export const SQL_DIALECTS = ['dunesql', 'duckdb'] as const;
export type SqlDialect = (typeof SQL_DIALECTS)[number];
