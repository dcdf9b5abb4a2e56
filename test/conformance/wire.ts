// Raw-wire helpers for the conformance audit: undici request() only (never our client), every JSON
// body scanned for `null` outside result rows (protocol.md section 1: optional fields are omitted,
// never null), every error body checked for the `{"error": "<message>"}` shape.
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WireResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface WireOptions {
  key?: string;
  query?: Record<string, string | number>;
  body?: string;
  headers?: Record<string, string>;
}

/** Every place a JSON body held `null` outside `result.rows`, as `METHOD url: path`. */
export const nullViolations: string[] = [];
/** Every error (4xx/5xx) whose body was not exactly `{"error": string}` JSON. */
export const errorShapeViolations: string[] = [];

export function findNulls(value: unknown, path: string, out: string[]): void {
  if (value === null) {
    out.push(path);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => findNulls(v, `${path}[${i}]`, out));
    return;
  }
  if (typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      // Row values may be SQL NULL (protocol.md section 5): the only place null belongs.
      if (path === '$.result' && k === 'rows') continue;
      findNulls(v, `${path}.${k}`, out);
    }
  }
}

/** A raw request to `base + path` (or an absolute URL). */
export async function wire(base: string, method: string, path: string, opts: WireOptions = {}): Promise<WireResponse> {
  const url = new URL(path.startsWith('http') ? path : `${base}${path}`);
  for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-service-api-key'] = opts.key;
  const res = await request(url, { method: method as 'GET', headers, ...(opts.body === undefined ? {} : { body: opts.body }) });
  const text = await res.body.text();
  let json: unknown;
  const type = String(res.headers['content-type'] ?? '');
  if (type.startsWith('application/json') && method !== 'HEAD') {
    json = JSON.parse(text);
    const found: string[] = [];
    findNulls(json, '$', found);
    for (const f of found) nullViolations.push(`${method} ${url.pathname}: ${f}`);
  }
  if (res.statusCode >= 400 && method !== 'HEAD') {
    const ok =
      type.startsWith('application/json') &&
      json !== null &&
      typeof json === 'object' &&
      !Array.isArray(json) &&
      Object.keys(json).length === 1 &&
      typeof (json as { error?: unknown }).error === 'string';
    if (!ok) errorShapeViolations.push(`${method} ${url.pathname} -> ${res.statusCode} ${type}: ${text.slice(0, 120)}`);
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export function expectOk(r: WireResponse, what: string): WireResponse {
  if (r.status !== 200) throw new Error(`${what}: expected 200, got ${r.status} ${r.text}`);
  return r;
}

/** Polls status until `until` holds. */
export async function pollStatus(base: string, key: string, id: string, until: (s: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = expectOk(await wire(base, 'GET', `/v1/execution/${id}/status`, { key }), `status ${id}`);
    if (until(r.json)) return r.json;
    if (Date.now() > deadline) throw new Error(`execution ${id} still ${r.json.state} after ${timeoutMs} ms`);
    await sleep(10);
  }
}

export async function submitSql(base: string, key: string, sql: string): Promise<string> {
  const r = expectOk(await wire(base, 'POST', '/v1/sql/execute', { key, body: JSON.stringify({ sql }) }), `execute ${sql}`);
  return r.json.execution_id as string;
}

/** Submits and waits for a terminal state; returns the id and the final status. */
export async function runToEnd(base: string, key: string, sql: string): Promise<{ id: string; status: any }> {
  const id = await submitSql(base, key, sql);
  const status = await pollStatus(base, key, id, (s) => s.is_execution_finished === true);
  return { id, status };
}

/** RFC 4180 parser (fields may hold quoted commas, quotes and line breaks). */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  let quoted = false;
  let sawField = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"') {
      if (field !== '') throw new Error(`quote inside an unquoted field at ${i}`);
      quoted = true;
      sawField = true;
      i++;
    } else if (c === ',') {
      record.push(field);
      field = '';
      sawField = false;
      i++;
    } else if (c === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      sawField = false;
      i++;
    } else if (c === '\r') {
      throw new Error(`bare CR outside a quoted field at ${i}: line ends must be \\n`);
    } else {
      field += c;
      sawField = true;
      i++;
    }
  }
  if (quoted) throw new Error('unterminated quoted field');
  if (sawField || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

export const ULID = /^01[0-9A-HJKMNP-TV-Z]{24}$/;
export const RFC3339_UTC_FRACTION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}Z$/;
export const TIMESTAMP_FIELDS = ['submitted_at', 'execution_started_at', 'execution_ended_at', 'cancelled_at', 'expires_at'] as const;
