import { z } from 'zod';
import { TimestampSchema } from './common.ts';
import { CSV_NEXT_OFFSET_HEADER, CSV_NEXT_URI_HEADER } from './messages.ts';
import { ExecutionStateSchema, isTerminal, type ExecutionState } from './states.ts';

/**
 * Result pages as Arrow over HTTP (an extension of protocol.md section 4; the official service does
 * not offer it). A results request with `Accept: application/vnd.apache.arrow.stream` is answered,
 * when the page has a result, with an Arrow IPC stream of that page's rows (one or more record
 * batches: read them all); the metadata a JSON page
 * carries in its body travels in the headers below. Any other answer (no result yet, failed, an
 * error) is the JSON the same request gets without that Accept, so a client dispatches on the
 * response content-type and falls back to JSON pages on 406 or on a JSON answer.
 */
export const ARROW_STREAM_MEDIA_TYPE = 'application/vnd.apache.arrow.stream';

/** Header names of an Arrow page. The paging pair is the one CSV pages already use. */
export const ARROW_PAGE_HEADERS = {
  nextOffset: CSV_NEXT_OFFSET_HEADER,
  nextUri: CSV_NEXT_URI_HEADER,
  state: 'x-sluice-state',
  executionId: 'x-sluice-execution-id',
  queryId: 'x-sluice-query-id',
  rowCount: 'x-sluice-row-count',
  totalRowCount: 'x-sluice-total-row-count',
  resultSetBytes: 'x-sluice-result-set-bytes',
  totalResultSetBytes: 'x-sluice-total-result-set-bytes',
  datapointCount: 'x-sluice-datapoint-count',
  columnNames: 'x-sluice-column-names',
  columnTypes: 'x-sluice-column-types',
  submittedAt: 'x-sluice-submitted-at',
  executionStartedAt: 'x-sluice-execution-started-at',
  executionEndedAt: 'x-sluice-execution-ended-at',
  expiresAt: 'x-sluice-expires-at',
} as const;

const count = z.coerce.number().int().nonnegative();
const jsonStringArray = z.string().transform((text, ctx): string[] => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not a JSON array' });
    return z.NEVER;
  }
  const arr = z.array(z.string()).safeParse(parsed);
  if (!arr.success) {
    ctx.addIssue({ code: 'custom', message: 'not a JSON array of strings' });
    return z.NEVER;
  }
  return arr.data;
});

/** The headers as read from the wire, keyed by their (lower-case) names. */
const ArrowPageHeadersSchema = z.object({
  [ARROW_PAGE_HEADERS.state]: ExecutionStateSchema,
  [ARROW_PAGE_HEADERS.executionId]: z.string().min(1),
  [ARROW_PAGE_HEADERS.queryId]: z.coerce.number().int().optional(),
  [ARROW_PAGE_HEADERS.rowCount]: count,
  [ARROW_PAGE_HEADERS.totalRowCount]: count,
  [ARROW_PAGE_HEADERS.resultSetBytes]: count,
  [ARROW_PAGE_HEADERS.totalResultSetBytes]: count,
  [ARROW_PAGE_HEADERS.datapointCount]: count,
  [ARROW_PAGE_HEADERS.columnNames]: jsonStringArray,
  [ARROW_PAGE_HEADERS.columnTypes]: jsonStringArray,
  [ARROW_PAGE_HEADERS.submittedAt]: TimestampSchema.optional(),
  [ARROW_PAGE_HEADERS.executionStartedAt]: TimestampSchema.optional(),
  [ARROW_PAGE_HEADERS.executionEndedAt]: TimestampSchema.optional(),
  [ARROW_PAGE_HEADERS.expiresAt]: TimestampSchema.optional(),
  [ARROW_PAGE_HEADERS.nextOffset]: count.optional(),
  [ARROW_PAGE_HEADERS.nextUri]: z.string().min(1).optional(),
});

/**
 * The page metadata of an Arrow page, shaped as the JSON page's fields (snake_case, `metadata` as
 * `result.metadata`) so that a client handles both kinds of page with one code path.
 */
export interface ArrowPageMeta {
  execution_id: string;
  query_id?: number;
  state: ExecutionState;
  is_execution_finished: boolean;
  submitted_at?: string;
  execution_started_at?: string;
  execution_ended_at?: string;
  expires_at?: string;
  metadata: {
    column_names: string[];
    column_types: string[];
    row_count: number;
    result_set_bytes: number;
    total_row_count: number;
    total_result_set_bytes: number;
    datapoint_count: number;
  };
  next_offset?: number;
  next_uri?: string;
}

/** What the service puts in an Arrow page's headers (`is_execution_finished` follows from the state). */
export type ArrowPageMetaOut = Omit<ArrowPageMeta, 'is_execution_finished'>;

/** JSON text with every non-ASCII character escaped as \uXXXX: header values must be ASCII. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The response headers of an Arrow page (content-type excluded). */
export function arrowPageHeaders(meta: ArrowPageMetaOut): Record<string, string> {
  const h = ARROW_PAGE_HEADERS;
  const m = meta.metadata;
  const out: Record<string, string> = {
    [h.state]: meta.state,
    [h.executionId]: meta.execution_id,
    [h.rowCount]: String(m.row_count),
    [h.totalRowCount]: String(m.total_row_count),
    [h.resultSetBytes]: String(m.result_set_bytes),
    [h.totalResultSetBytes]: String(m.total_result_set_bytes),
    [h.datapointCount]: String(m.datapoint_count),
    [h.columnNames]: asciiJson(m.column_names),
    [h.columnTypes]: asciiJson(m.column_types),
  };
  if (meta.query_id !== undefined) out[h.queryId] = String(meta.query_id);
  if (meta.submitted_at !== undefined) out[h.submittedAt] = meta.submitted_at;
  if (meta.execution_started_at !== undefined) out[h.executionStartedAt] = meta.execution_started_at;
  if (meta.execution_ended_at !== undefined) out[h.executionEndedAt] = meta.execution_ended_at;
  if (meta.expires_at !== undefined) out[h.expiresAt] = meta.expires_at;
  if (meta.next_offset !== undefined) out[h.nextOffset] = String(meta.next_offset);
  if (meta.next_uri !== undefined) out[h.nextUri] = meta.next_uri;
  return out;
}

/** Response headers as the common HTTP clients hand them over: a fetch `Headers`, or undici's record. */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

function headerGetter(headers: HeaderSource): (name: string) => string | undefined {
  if (typeof headers.get === 'function') {
    const h = headers as { get(name: string): string | null };
    return (name) => h.get(name) ?? undefined;
  }
  const rec = headers as Record<string, string | string[] | undefined>;
  const lower = new Map(Object.entries(rec).map(([k, v]) => [k.toLowerCase(), v]));
  return (name) => {
    const v = lower.get(name);
    return Array.isArray(v) ? v.join(', ') : v;
  };
}

/** A response's content-type names an Arrow stream (parameters ignored). */
export function isArrowStreamContentType(contentType: string | null | undefined): boolean {
  if (contentType === null || contentType === undefined) return false;
  return contentType.split(';')[0]!.trim().toLowerCase() === ARROW_STREAM_MEDIA_TYPE;
}

export class ArrowPageHeaderError extends Error {
  override readonly name = 'ArrowPageHeaderError';
}

/**
 * The page metadata of an Arrow page, read from its response headers and validated. Throws
 * `ArrowPageHeaderError` naming each missing or malformed header.
 */
export function parseArrowPageHeaders(headers: HeaderSource): ArrowPageMeta {
  const get = headerGetter(headers);
  const raw: Record<string, string> = {};
  for (const name of Object.values(ARROW_PAGE_HEADERS)) {
    const v = get(name);
    if (v !== undefined) raw[name] = v;
  }
  const parsed = ArrowPageHeadersSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ArrowPageHeaderError(`Arrow page headers are invalid: ${problems}`);
  }
  const p = parsed.data;
  const h = ARROW_PAGE_HEADERS;
  const meta: ArrowPageMeta = {
    execution_id: p[h.executionId],
    state: p[h.state],
    is_execution_finished: isTerminal(p[h.state]),
    metadata: {
      column_names: p[h.columnNames],
      column_types: p[h.columnTypes],
      row_count: p[h.rowCount],
      result_set_bytes: p[h.resultSetBytes],
      total_row_count: p[h.totalRowCount],
      total_result_set_bytes: p[h.totalResultSetBytes],
      datapoint_count: p[h.datapointCount],
    },
  };
  if (meta.metadata.column_names.length !== meta.metadata.column_types.length) {
    throw new ArrowPageHeaderError(
      `Arrow page headers are invalid: ${h.columnNames} has ${meta.metadata.column_names.length} names but ${h.columnTypes} has ${meta.metadata.column_types.length} types`,
    );
  }
  if (p[h.queryId] !== undefined) meta.query_id = p[h.queryId];
  if (p[h.submittedAt] !== undefined) meta.submitted_at = p[h.submittedAt];
  if (p[h.executionStartedAt] !== undefined) meta.execution_started_at = p[h.executionStartedAt];
  if (p[h.executionEndedAt] !== undefined) meta.execution_ended_at = p[h.executionEndedAt];
  if (p[h.expiresAt] !== undefined) meta.expires_at = p[h.expiresAt];
  if (p[h.nextOffset] !== undefined) meta.next_offset = p[h.nextOffset];
  if (p[h.nextUri] !== undefined) meta.next_uri = p[h.nextUri];
  return meta;
}
