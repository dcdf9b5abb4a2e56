import { InvalidResponseError, type ErrorContext } from '../../client/errors.ts';
import { describeIssues } from '../../client/http.ts';
import { ResultPageSchema, type ResultPage } from '../../protocol/index.ts';
import { parseJsonLossless, stringifyLossless } from '../../types/json.ts';

/** A JSON page's rows as the bytes of a JSON array (what DuckDB's `read_json(format = 'array')` reads), and its envelope. */
export interface PageRows {
  readonly page: ResultPage;
  /** `[{...},{...}]`: the page's `result.rows`, a view into the body when it could be cut out. */
  readonly rows: Uint8Array;
}

const ROWS_KEY = Buffer.from('"rows":[');
const AFTER_ROWS = Buffer.from('],"metadata":');
const MARKER = '\u0001rows cut from the body';

/**
 * Cuts `result.rows` out of a JSON page body without parsing the rows: the array runs from the
 * first `"rows":[` to the last `],"metadata":` (a quote inside a JSON string is escaped, so
 * neither can come from a value but as keys; the envelope's `result` comes before any row, its
 * `metadata` after every row). The envelope with a marker in the array's place is then parsed and
 * validated, and must hold the marker as `result.rows`: the cut was that array, or the page is
 * parsed whole, losslessly, and its rows written back as JSON text.
 */
export function pageRows(body: Buffer, ctx: ErrorContext): PageRows {
  const start = body.indexOf(ROWS_KEY);
  const end = start < 0 ? -1 : body.lastIndexOf(AFTER_ROWS);
  if (start >= 0 && end > start) {
    const from = start + ROWS_KEY.length - 1;
    const envelope = `${body.toString('utf8', 0, from)}${JSON.stringify(MARKER)}${body.toString('utf8', end + 1)}`;
    const page = cutEnvelope(envelope, ctx);
    if (page !== undefined) return { page, rows: body.subarray(from, end + 1) };
  }
  return wholePage(body, ctx);
}

function cutEnvelope(text: string, ctx: ErrorContext): ResultPage | undefined {
  let value: unknown;
  try {
    value = parseJsonLossless(text);
  } catch {
    return undefined;
  }
  const result = isRecord(value) && isRecord(value['result']) ? value['result'] : undefined;
  if (result?.['rows'] !== MARKER) return undefined;
  result['rows'] = [];
  return validEnvelope(value, ctx);
}

function wholePage(body: Buffer, ctx: ErrorContext): PageRows {
  let value: unknown;
  try {
    value = parseJsonLossless(body.toString('utf8'));
  } catch (error) {
    throw new InvalidResponseError(`response is not JSON (${(error as Error).message})`, { ...ctx, cause: error });
  }
  const result = isRecord(value) && isRecord(value['result']) ? value['result'] : undefined;
  const rows = result?.['rows'];
  if (!Array.isArray(rows)) throw new InvalidResponseError('response does not match the protocol: result.rows: expected an array', ctx);
  result!['rows'] = [];
  const page = validEnvelope(value, ctx);
  return { page, rows: Buffer.from(stringifyLossless(rows)) };
}

function validEnvelope(value: unknown, ctx: ErrorContext): ResultPage {
  const parsed = ResultPageSchema.safeParse(value);
  if (!parsed.success) throw new InvalidResponseError(`response does not match the protocol: ${describeIssues(parsed.error)}`, { ...ctx, cause: parsed.error });
  return parsed.data;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
