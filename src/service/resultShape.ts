import { ResultParamsSchema, type ResultParams } from '../protocol/index.ts';
import { describeIssues } from './http/body.ts';
import { HttpError } from './http/errors.ts';
import type { ServiceSettings } from './settings.ts';

/** The shaping parameters of a results request (protocol.md section 4), parsed and checked. */
export interface ResultShape {
  /** As sent (kept for next_uri); the effective limit is computed per page. */
  params: ResultParams;
  offset: number;
  columns?: string[];
  allowPartial: boolean;
  /** `params.<name>` values of the latest-result operation. */
  queryParams: Record<string, string>;
}

const KNOWN = Object.keys(ResultParamsSchema.shape);
/**
 * Whole-number parameters and their least value. Checked on the text before the schema's
 * coercion, which reads `limit=` as 0 ("Too small: expected number to be >0") and accepts
 * `0x10`, `1e3` or ` 5`.
 */
const WHOLE_NUMBERS = [
  ['limit', 1],
  ['offset', 0],
  ['sample_count', 1],
] as const;

/**
 * Reads the URL's parameters. `api_key` is auth, not shaping; `params.*` only where the
 * operation takes them. Anything else is refused, so a misspelt parameter never silently
 * returns an unshaped result.
 */
export function parseResultShape(url: URL, allowQueryParams: boolean): ResultShape {
  const raw: Record<string, string> = {};
  const queryParams: Record<string, string> = {};
  const unknown: string[] = [];
  for (const [k, v] of url.searchParams) {
    if (k === 'api_key') continue;
    if (allowQueryParams && k.startsWith('params.') && k.length > 'params.'.length) queryParams[k.slice('params.'.length)] = v;
    else if (KNOWN.includes(k)) raw[k] = v;
    else unknown.push(k);
  }
  if (unknown.length > 0) {
    throw new HttpError(400, `Bad Request: unknown result parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')} (known: ${KNOWN.join(', ')}${allowQueryParams ? ', params.<name>' : ''})`);
  }
  for (const [name, min] of WHOLE_NUMBERS) {
    const v = raw[name];
    if (v !== undefined && !(/^[0-9]{1,15}$/.test(v) && Number(v) >= min)) {
      throw new HttpError(400, `Bad Request: ${name} must be a whole number of at least ${min} (digits only), got ${JSON.stringify(v)}`);
    }
  }
  const parsed = ResultParamsSchema.safeParse(raw);
  if (!parsed.success) throw new HttpError(400, `Bad Request: ${describeIssues(parsed.error.issues)}`);
  const params = parsed.data;
  if (params.sample_count !== undefined && (params.limit !== undefined || params.offset !== undefined || params.filters !== undefined)) {
    throw new HttpError(400, 'Bad Request: sample_count cannot be combined with limit, offset or filters');
  }
  const shape: ResultShape = { params, offset: params.offset ?? 0, allowPartial: params.allow_partial_results === 'true', queryParams };
  if (params.columns !== undefined) shape.columns = parseColumns(params.columns);
  return shape;
}

/**
 * `a, b,"c,d","e""f","g\"h"` -> ['a', 'b', 'c,d', 'e"f', 'g"h']. Inside double quotes a quote is
 * doubled (SQL) or backslash-escaped (as the official TypeScript client writes it); `\\` is one
 * backslash, and a backslash before anything else is itself.
 */
export function parseColumns(text: string): string[] {
  const out: string[] = [];
  const seen = new Map<string, string>();
  let i = 0;
  const fail = (why: string) => new HttpError(400, `Bad Request: columns: ${why} in ${JSON.stringify(text)}`);
  while (i <= text.length) {
    while (text[i] === ' ') i++;
    let name = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw fail('unterminated double quote');
        if (text[i] === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
          name += text[i + 1];
          i += 2;
          continue;
        }
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            name += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        name += text[i++];
      }
      while (text[i] === ' ') i++;
      if (i < text.length && text[i] !== ',') throw fail(`unexpected text after the quoted name "${name}"`);
    } else {
      const end = text.indexOf(',', i);
      name = (end < 0 ? text.slice(i) : text.slice(i, end)).trim();
      i = end < 0 ? text.length : end;
    }
    if (name === '') throw fail('empty column name');
    // Result column names are unique ignoring case (engine/columnNames.ts), so "a" and "A" are
    // the same column: twice would be one JSON key twice.
    const twice = seen.get(name.toLowerCase());
    if (twice !== undefined) throw new HttpError(400, `Bad Request: columns: "${name}" is named twice${twice === name ? '' : ` (as "${twice}" too)`}; name each column once`);
    seen.set(name.toLowerCase(), name);
    out.push(name);
    i++; // the comma (or past the end)
  }
  return out;
}

/** The page's row count: the asked limit lowered to the page cap and to the datapoint cap. */
export function effectiveLimit(shape: ResultShape, settings: ServiceSettings, columnCount: number): number {
  let limit = Math.min(shape.params.limit ?? settings.limits.page_rows, settings.limits.page_rows);
  if (shape.params.ignore_max_datapoints_per_request !== 'true') {
    limit = Math.min(limit, Math.max(1, Math.floor(settings.limits.datapoints_per_request / Math.max(1, columnCount))));
  }
  return limit;
}

/** Rows of a page asked for without `limit` (or with a larger one): what clients page by. */
export function defaultPageRows(settings: ServiceSettings, columnCount: number): number {
  return Math.min(settings.limits.page_rows, Math.max(1, Math.floor(settings.limits.datapoints_per_request / Math.max(1, columnCount))));
}

/** Absolute next page URI on the caller's origin, repeating every shaping parameter. */
export function nextUri(origin: string, apiPath: string, shape: ResultShape, nextOffset: number): string {
  const q = new URLSearchParams();
  const p = shape.params;
  if (p.limit !== undefined) q.set('limit', String(p.limit));
  q.set('offset', String(nextOffset));
  if (p.columns !== undefined) q.set('columns', p.columns);
  if (p.filters !== undefined) q.set('filters', p.filters);
  if (p.sort_by !== undefined) q.set('sort_by', p.sort_by);
  if (p.allow_partial_results !== undefined) q.set('allow_partial_results', p.allow_partial_results);
  if (p.ignore_max_datapoints_per_request !== undefined) q.set('ignore_max_datapoints_per_request', p.ignore_max_datapoints_per_request);
  // URLSearchParams writes spaces as '+'; %20 reads the same everywhere and survives naive decoders.
  return `${origin}/api${apiPath}?${q.toString().replaceAll('+', '%20')}`;
}
