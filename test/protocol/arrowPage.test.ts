import { describe, expect, it } from 'vitest';
import {
  ARROW_PAGE_HEADERS,
  ArrowPageHeaderError,
  arrowPageHeaders,
  isArrowStreamContentType,
  parseArrowPageHeaders,
  type ArrowPageMetaOut,
} from '../../src/protocol/index.ts';

const meta: ArrowPageMetaOut = {
  execution_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
  query_id: 7,
  state: 'QUERY_STATE_COMPLETED',
  submitted_at: '2026-01-01T00:00:00.000Z',
  execution_started_at: '2026-01-01T00:00:00.100Z',
  execution_ended_at: '2026-01-01T00:00:01.000Z',
  expires_at: '2026-04-01T00:00:01.000Z',
  metadata: {
    column_names: ['id', 'naïve "name"', '日本'],
    column_types: ['integer', 'varchar', 'double'],
    row_count: 10,
    result_set_bytes: 123,
    total_row_count: 25,
    total_result_set_bytes: 400,
    datapoint_count: 30,
  },
  next_offset: 10,
  next_uri: 'http://127.0.0.1:1/api/v1/execution/x/results?offset=10&limit=10',
};

describe('Arrow page headers', () => {
  it('round-trip through the parser, with column names kept exactly and header values ASCII only', () => {
    const headers = arrowPageHeaders(meta);
    for (const v of Object.values(headers)) expect(v).toMatch(/^[\x20-\x7e]*$/);
    expect(parseArrowPageHeaders(headers)).toEqual({ ...meta, is_execution_finished: true });
    expect(parseArrowPageHeaders(new Headers(headers))).toEqual({ ...meta, is_execution_finished: true });
  });

  it('leave out what does not apply (last page, no query id), and so does the parser', () => {
    const { next_offset: _o, next_uri: _u, query_id: _q, ...last } = meta;
    const headers = arrowPageHeaders(last);
    expect(headers[ARROW_PAGE_HEADERS.nextOffset]).toBeUndefined();
    expect(headers[ARROW_PAGE_HEADERS.nextUri]).toBeUndefined();
    const parsed = parseArrowPageHeaders(headers);
    expect(parsed.next_offset).toBeUndefined();
    expect(parsed.query_id).toBeUndefined();
  });

  it('reject missing or malformed headers, naming them', () => {
    const headers = arrowPageHeaders(meta);
    const { [ARROW_PAGE_HEADERS.rowCount]: _r, ...noRowCount } = headers;
    expect(() => parseArrowPageHeaders(noRowCount)).toThrow(ArrowPageHeaderError);
    expect(() => parseArrowPageHeaders(noRowCount)).toThrow(/x-sluice-row-count/);
    expect(() => parseArrowPageHeaders({ ...headers, [ARROW_PAGE_HEADERS.columnTypes]: '["a"' })).toThrow(/x-sluice-column-types/);
    expect(() => parseArrowPageHeaders({ ...headers, [ARROW_PAGE_HEADERS.columnTypes]: '["a"]' })).toThrow(/3 names but/);
    expect(() => parseArrowPageHeaders({ ...headers, [ARROW_PAGE_HEADERS.totalRowCount]: '-1' })).toThrow(/total-row-count/);
    expect(() => parseArrowPageHeaders({ ...headers, [ARROW_PAGE_HEADERS.state]: 'DONE' })).toThrow(/x-sluice-state/);
  });

  it('recognise the Arrow stream content-type with or without parameters', () => {
    expect(isArrowStreamContentType('application/vnd.apache.arrow.stream')).toBe(true);
    expect(isArrowStreamContentType('Application/Vnd.Apache.Arrow.Stream; charset=binary')).toBe(true);
    expect(isArrowStreamContentType('application/json')).toBe(false);
    expect(isArrowStreamContentType(undefined)).toBe(false);
  });
});
