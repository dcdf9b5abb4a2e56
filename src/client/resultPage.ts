import { ResultPageSchema, type ResultPage } from '../protocol/index.ts';
import { parseJsonLossless } from '../types/json.ts';
import type { TextRead } from '../types/textRows.ts';
import { InvalidResponseError, type ErrorContext } from './errors.ts';
import { describeIssues } from './http.ts';

type Row = Record<string, unknown>;

/**
 * Parses a JSON result page losslessly and validates it. The envelope goes through
 * `ResultPageSchema`; the rows, which the schema types as "objects of unknown values", are checked
 * to be exactly that by a plain loop and kept as parsed: running zod over 32,000 row records cost
 * about 3x the parse itself (measured: 5 MB page, parse ~20 ms, zod on the rows ~60 ms) and copied them.
 */
export function parseResultPage(res: { readonly text: string }, ctx: ErrorContext): ResultPage {
  let value: unknown;
  try {
    value = parseJsonLossless(res.text);
  } catch (err) {
    throw new InvalidResponseError(`response is not JSON (${(err as Error).message}); body starts ${JSON.stringify(res.text.slice(0, 80))}`, { ...ctx, cause: err });
  }
  const result = isRecord(value) && isRecord(value['result']) ? value['result'] : undefined;
  const rows = result !== undefined && Array.isArray(result['rows']) ? result['rows'] : undefined;
  const envelope = isRecord(value) && result !== undefined && rows !== undefined ? { ...value, result: { ...result, rows: [] } } : value;
  const page = validEnvelope(envelope, ctx);
  if (page.result && rows !== undefined) {
    if (!isRowArray(rows)) {
      throw new InvalidResponseError(`response does not match the protocol: result.rows.${firstNonRecord(rows)}: expected an object`, ctx);
    }
    page.result.rows = rows;
    checkRowCount(rows.length, page.result.metadata.row_count, ctx);
  }
  return page;
}

/**
 * A JSON result page whose rows `read` takes straight from the text (`compileTextRows`,
 * `compileTextBatchReader`), or locates there to read later (`compileTextRowReader`: no `count`):
 * the envelope, with `result.rows` empty, is validated as {@link parseResultPage} validates it and
 * raises the same errors. Undefined when `read` gave up or the array it read is not `result.rows`:
 * the caller then parses the page with `parseResultPage`.
 */
export function parseResultPageText<T>(res: { readonly text: string }, ctx: ErrorContext, read: (text: string) => TextRead<T> | undefined): { page: ResultPage; value: T } | undefined {
  const text = res.text;
  const got = read(text);
  if (got === undefined) return undefined;
  let value: unknown;
  try {
    // A marker where the array was (an escape, which the page read from its text has none of):
    // the page is taken only when the marker is what the envelope holds as result.rows, so the
    // array read was that one (not a "rows" key elsewhere, nor one a later duplicate key overrides).
    value = parseJsonLossless(`${text.slice(0, got.start)}${ROWS_MARKER_JSON}${text.slice(got.end)}`);
  } catch {
    return undefined;
  }
  const result = isRecord(value) && isRecord(value['result']) ? value['result'] : undefined;
  if (result?.['rows'] !== ROWS_MARKER) return undefined;
  result['rows'] = [];
  let page: ResultPage;
  if (got.count === undefined) {
    // Rows read later, as they are used: the array's end is where the reader located it, not yet
    // where a read of the rows found it; an envelope off the protocol is the general path's to
    // raise, from the page as it parses it (the same text, raising the same error).
    const parsed = ResultPageSchema.safeParse(value);
    if (!parsed.success) return undefined;
    page = parsed.data;
  } else {
    page = validEnvelope(value, ctx);
  }
  if (page.result === undefined) return undefined;
  if (got.count !== undefined) checkRowCount(got.count, page.result.metadata.row_count, ctx);
  return { page, value: got.value };
}

const ROWS_MARKER = '\u0001rows read from the text';
const ROWS_MARKER_JSON = JSON.stringify(ROWS_MARKER);

function validEnvelope(envelope: unknown, ctx: ErrorContext): ResultPage {
  const parsed = ResultPageSchema.safeParse(envelope);
  if (!parsed.success) {
    throw new InvalidResponseError(`response does not match the protocol: ${describeIssues(parsed.error)}`, { ...ctx, cause: parsed.error });
  }
  return parsed.data;
}

function checkRowCount(rows: number, rowCount: number, ctx: ErrorContext): void {
  if (rows !== rowCount) throw new InvalidResponseError(`result.rows holds ${rows} rows but result.metadata.row_count says ${rowCount}`, ctx);
}

function isRecord(v: unknown): v is Row {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function firstNonRecord(rows: unknown[]): number {
  for (let i = 0; i < rows.length; i++) if (!isRecord(rows[i])) return i;
  return -1;
}

function isRowArray(rows: unknown[]): rows is Row[] {
  return firstNonRecord(rows) < 0;
}
