import { ErrorBodySchema, MESSAGES } from '../protocol/index.ts';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InvalidApiKeyError,
  NotFoundError,
  PartialResultError,
  PaymentChallengeError,
  PaymentRequiredError,
  QueryArchivedError,
  RateLimitedError,
  ServerError,
  ServiceError,
  type ErrorContext,
} from './errors.ts';
import { parseRetryAfter } from './retry-policy.ts';

/** The `{"error": ...}` text of an error body, or a short excerpt of whatever came instead. */
export function errorText(body: string): string {
  try {
    const parsed = ErrorBodySchema.safeParse(JSON.parse(body));
    if (parsed.success) return parsed.data.error;
  } catch {
    // not JSON: fall through to the excerpt
  }
  const excerpt = body.trim().slice(0, 200);
  return excerpt ? `(no JSON error body) ${excerpt}` : '(empty body)';
}

/** The `Payment` challenge of a WWW-Authenticate header (RFC 9110 section 11.6.1), at most 300 characters; undefined when none. */
export function paymentChallenge(header: string | string[] | undefined): string | undefined {
  for (const value of typeof header === 'string' ? [header] : (header ?? [])) {
    const at = value.search(/(^|,\s*)Payment(\s|$)/i);
    if (at < 0) continue;
    const text = value.slice(at).replace(/^,\s*/, '').trim();
    return text.length > 300 ? `${text.slice(0, 300)}...` : text;
  }
  return undefined;
}

/**
 * Maps a non-2xx answer to its error class; 400 carrying the partial-result message is its own class.
 * `keyFrom` says where the API key came from (`the environment variable MY_KEY`), for a 401 to name.
 */
export function statusError(
  status: number,
  message: string,
  retryAfter: string | string[] | undefined,
  ctx: ErrorContext,
  keyFrom = 'the API key',
  authenticate?: string | string[],
): ServiceError {
  const c = { ...ctx, status, serverMessage: message };
  const detail = `${status} ${message}`;
  switch (status) {
    case 400:
      return message === MESSAGES.partialResult
        ? new PartialResultError(`${detail} (the result was truncated; pass allowPartialResults: true to read it)`, c)
        : new BadRequestError(detail, c);
    case 401:
      return new InvalidApiKeyError(`${detail} (check ${keyFrom})`, c);
    case 402: {
      const challenge = paymentChallenge(authenticate);
      return challenge === undefined
        ? new PaymentRequiredError(detail, c)
        : new PaymentChallengeError(
            `${detail} (a payment challenge, not the billing cycle's limit: the service asks to be paid for this request with WWW-Authenticate: ${challenge}; sluice does not pay: send an API key with credits, or pay through a client that can)`,
            { ...c, challenge },
          );
    }
    case 403:
      return /\barchived\b/i.test(message) ? new QueryArchivedError(detail, c) : new ForbiddenError(detail, c);
    case 404:
      return new NotFoundError(`${detail}${apiPrefixHint(message, ctx.url)}`, c);
    case 409:
      return new ConflictError(detail, c);
    case 429:
      return new RateLimitedError(detail, { ...c, retryAfterMs: parseRetryAfter(retryAfter) });
  }
  if (status >= 500) return new ServerError(detail, { ...c, retryAfterMs: parseRetryAfter(retryAfter) });
  if (status >= 400) return new BadRequestError(detail, c);
  return new ServiceError(`unexpected status ${detail}`, c);
}

/**
 * A 404 for an operation the service does not know at all, on a URL whose path lacks the API
 * prefix, is nearly always a base URL given without `/api`: say so instead of a bare 404.
 */
function apiPrefixHint(message: string, url: string | undefined): string {
  if (url === undefined || !/no operation at/i.test(message)) return '';
  const target = url.replace(/^[A-Z]+ /, '');
  let parsed: URL;
  try {
    parsed = new URL(target);
  } catch {
    return '';
  }
  const at = parsed.pathname.indexOf('/v1/');
  if (at < 0 || parsed.pathname.slice(0, at).endsWith('/api')) return '';
  return ` (did you mean ${parsed.origin}${parsed.pathname.slice(0, at)}/api as the base URL? the service's operations are under /api/v1/...)`;
}
