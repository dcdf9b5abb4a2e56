/**
 * The sluice client library: a typed, validated, resilient client of the query service (protocol.md).
 *
 * ```ts
 * const client = new ServiceClient();                       // SERVICE_API_KEY, SERVICE_BASE_URL (origin + /api)
 * const rows = await client.run('SELECT * FROM sample.events LIMIT 10');
 * const exec = await client.execute({ queryId: 7, parameters: { day: '2026-11-20' } }, { performance: 'large' });
 * await exec.wait({ deadlineMs: 60_000, signal });           // polls 50 ms, doubling to 2 s
 * for await (const row of exec.rows({ columns: ['id'] })) ...  // typed rows (as stream()), every page
 * for await (const page of exec.csvPages()) ...               // CSV text pages, each with its header
 * const latest = await client.getLatestResult(7, { maxAgeHours: 24 });  // stored result, or a fresh run
 * await client.close();
 * ```
 *
 * Layers: `Transport` (one undici `request()` on a keep-alive Agent) -> `withRetry` -> `Http`
 * (parse + zod validation) -> `ServiceClient` methods -> `Execution` handles.
 *
 * Retries (`DEFAULT_RETRY`: 5 attempts, full-jitter backoff from 200 ms to 10 s, 60 s in all):
 * on 429 (honouring Retry-After), 5xx, connection failures and per-request timeouts; never on other 4xx.
 *
 * `uploadCsv` is resent like a read: the service builds the table aside and swaps it in whole
 * (`POST /v1/uploads/csv` creates or replaces `dataset_<table_name>`), so a resend of an upload
 * whose answer was lost leaves the same table, not a second copy of the rows.
 *
 * Resubmission rule (no second execution where the first was accepted), see `mayRetry`: requests that
 * create something (executeSql, executeQuery, refreshView, upsertView, createQuery) are resent only when
 * the first attempt provably created nothing: an answer of 429, 500, 502 or 503 (the service rejects
 * with these before acting), or a connection that failed before the request was written (refused,
 * unreachable, DNS, connect timeout). When the request was written and the answer was lost (reset,
 * timeout), the execution id is salvaged from a cut-off 200 body when it arrived whole; otherwise the
 * call fails with `SubmissionOutcomeUnknownError` (not retryable) and nothing is resent.
 *
 * Errors: every failure is a `ServiceError` subclass with `code`, `status`, `retryable`, `cause`, and a
 * message naming the method, the URL (never the API key) and the execution id.
 */
export { ServiceClient, type CallOptions, type CsvPage, type ExecuteOptions, type ExecuteQueryOptions, type LatestResultPageOptions, type ResultCallOptions, type Row } from './service-client.ts';
export { Execution, DEFAULT_WAIT, type ExecuteInput, type LatestResultOptions, type RowsOptions, type RowTyping, type RunOptions, type WaitOptions } from './execution.ts';
export { API_KEY_ENV, BASE_URL_ENV, DEFAULT_TIMEOUT_MS, MAX_PAGE_CONCURRENCY, type ClientOptions } from './config.ts';
export { DEFAULT_RETRY, mayRetry, backoffDelay, parseRetryAfter, type Idempotency, type RetryPolicy } from './retry-policy.ts';
export type { ClientStats, RequestEvent, RetryEvent } from './hooks.ts';
export { sqlExcerpt } from './sql-excerpt.ts';
export { redactUrl } from './redact.ts';
export * from './errors.ts';
export { Catalog, type CatalogCallOptions, type DatasetListOptions, type ListOptions } from './catalog.ts';
export { RateGovernor, RATE_PLANS, type RateClass, type RateLimit, type RatePlan } from './governor.ts';
