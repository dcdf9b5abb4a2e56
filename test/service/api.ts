// A tiny raw HTTP client for the service's black-box tests: no retries, no parsing beyond JSON,
// so every status code and header the service sends is visible to the assertions.
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestService } from '../helpers/service.ts';

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body as JSON (undefined when it is not JSON). */
  json: any;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent verbatim (no JSON encoding). */
  rawBody?: string | Buffer;
  query?: Record<string, string | number>;
  headers?: Record<string, string>;
}

export async function call(svc: { url: string }, method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse> {
  const url = new URL(`${svc.url}${path}`);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined && opts.key !== null) headers['x-service-api-key'] = opts.key;
  const body = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const res = await request(url, { method: method as 'GET', headers, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** Submits raw SQL and returns the execution id (asserting 200). */
export async function executeSql(svc: TestService, sql: string, key = svc.keys.demo.write, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql, ...extra } });
  if (res.status !== 200) throw new Error(`execute failed: ${res.status} ${res.text}`);
  return res.json.execution_id as string;
}

export async function status(svc: TestService, id: string, key = svc.keys.demo.read): Promise<any> {
  const res = await call(svc, 'GET', `/v1/execution/${id}/status`, { key });
  if (res.status !== 200) throw new Error(`status failed: ${res.status} ${res.text}`);
  return res.json;
}

/** Polls until the execution is finished (or `until` holds) and returns the last status. */
export async function waitFor(svc: TestService, id: string, until: (s: any) => boolean = (s) => s.is_execution_finished, key = svc.keys.demo.read, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await status(svc, id, key);
    if (until(s)) return s;
    if (Date.now() > deadline) throw new Error(`execution ${id} still ${s.state} after ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Runs SQL to completion and returns the id. */
export async function runSql(svc: TestService, sql: string, key = svc.keys.demo.write): Promise<string> {
  const id = await executeSql(svc, sql, key);
  const s = await waitFor(svc, id, undefined, key);
  if (s.state !== 'QUERY_STATE_COMPLETED' && s.state !== 'QUERY_STATE_COMPLETED_PARTIAL') throw new Error(`execution ${id} ended ${s.state}: ${JSON.stringify(s.error)}`);
  return id;
}

/** A query that runs for many seconds unless interrupted. */
export const LONG_SQL = 'SELECT sum(hash(a.i * b.i)) FROM range(200000) a(i), range(200000) b(i)';

/** Waits until the execution is EXECUTING (or already finished). */
export async function waitRunning(svc: TestService, id: string, key = svc.keys.demo.read): Promise<any> {
  return waitFor(svc, id, (st) => st.state === 'QUERY_STATE_EXECUTING' || st.is_execution_finished, key);
}
