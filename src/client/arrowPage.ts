import type { IncomingHttpHeaders } from 'node:http';
import { ARROW_STREAM_MEDIA_TYPE, parseArrowPageHeaders, type ResultPage } from '../protocol/index.ts';
import { InvalidResponseError, type ErrorContext } from './errors.ts';

/**
 * What the client sends when it wants Arrow: the service answers Arrow when it can, and JSON
 * (the same answer as without this header) when the page has no result or on an error.
 */
export const ACCEPT_ARROW = `${ARROW_STREAM_MEDIA_TYPE}, application/json;q=0.5`;

/**
 * The envelope of an Arrow page, rebuilt from its headers as the JSON page carries it (rows empty:
 * they are in the body), so the pipeline checks pages of both wires with one code path.
 */
export function arrowPageEnvelope(headers: IncomingHttpHeaders, ctx: ErrorContext): ResultPage {
  let meta;
  try {
    meta = parseArrowPageHeaders(headers);
  } catch (error) {
    throw new InvalidResponseError((error as Error).message, { ...ctx, cause: error });
  }
  const { metadata, ...envelope } = meta;
  return { ...envelope, result: { rows: [], metadata } };
}
