import type { IncomingHttpHeaders } from 'node:http';
import { CSV_NEXT_OFFSET_HEADER, CSV_NEXT_URI_HEADER, ResultPageSchema, type ResultPage } from '../protocol/index.ts';
import { InvalidResponseError, type ErrorContext } from './errors.ts';
import { describeIssues } from './http.ts';

/** The media type of a result page as an Arrow IPC stream (schema, batches, end of stream). */
export const ARROW_STREAM_TYPE = 'application/vnd.apache.arrow.stream';

/**
 * What the client sends when it wants Arrow: the service answers Arrow when it can, and JSON
 * (the same answer as without this header) when the page has no result or on an error.
 */
export const ACCEPT_ARROW = `${ARROW_STREAM_TYPE}, application/json;q=0.5`;

/** Page metadata of an Arrow page travels in these headers (the JSON envelope's fields, one each). */
const H = {
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
  startedAt: 'x-sluice-execution-started-at',
  endedAt: 'x-sluice-execution-ended-at',
  expiresAt: 'x-sluice-expires-at',
} as const;

/**
 * The envelope of an Arrow page, rebuilt from its headers as the JSON page would carry it (rows
 * empty: they are in the body) and validated by the same schema, so the pipeline checks both wires
 * the same way.
 */
export function arrowPageEnvelope(headers: IncomingHttpHeaders, ctx: ErrorContext): ResultPage {
  const get = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const int = (name: string): number | undefined => {
    const v = get(name);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new InvalidResponseError(`header ${name} is not a non-negative integer: ${JSON.stringify(v)}`, ctx);
    return Number(v);
  };
  const list = (name: string): unknown => {
    const v = get(name);
    if (v === undefined) return undefined;
    try {
      return JSON.parse(v);
    } catch {
      throw new InvalidResponseError(`header ${name} is not a JSON array: ${JSON.stringify(v.slice(0, 80))}`, ctx);
    }
  };
  const envelope = {
    execution_id: get(H.executionId),
    query_id: int(H.queryId),
    state: get(H.state),
    is_execution_finished: true,
    submitted_at: get(H.submittedAt),
    execution_started_at: get(H.startedAt),
    execution_ended_at: get(H.endedAt),
    expires_at: get(H.expiresAt),
    next_offset: int(CSV_NEXT_OFFSET_HEADER),
    next_uri: get(CSV_NEXT_URI_HEADER),
    result: {
      rows: [],
      metadata: {
        column_names: list(H.columnNames),
        column_types: list(H.columnTypes),
        row_count: int(H.rowCount),
        result_set_bytes: int(H.resultSetBytes),
        total_row_count: int(H.totalRowCount),
        total_result_set_bytes: int(H.totalResultSetBytes),
        datapoint_count: int(H.datapointCount),
      },
    },
  };
  const parsed = ResultPageSchema.safeParse(JSON.parse(JSON.stringify(envelope)));
  if (!parsed.success) {
    throw new InvalidResponseError(`Arrow page headers do not match the protocol: ${describeIssues(parsed.error)}`, { ...ctx, cause: parsed.error });
  }
  return parsed.data;
}
