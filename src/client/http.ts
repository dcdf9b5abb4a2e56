import type { z } from 'zod';
import { InvalidResponseError, RateLimitedError, type ErrorContext } from './errors.ts';
import { rateClassOf, type RateGovernor } from './governor.ts';
import type { ResolvedConfig } from './config.ts';
import type { ClientStats, RetryEvent, ThrottleEvent } from './hooks.ts';
import { withRetry } from './retry.ts';
import type { RawResponse, RequestSpec, Transport } from './transport.ts';

/**
 * The top of the HTTP stack: a call goes through the retry layer, then the key's rate governor
 * (every attempt, retries too, waits for its token), to the transport; its JSON body
 * is parsed and checked against the protocol schema. No network data leaves here unvalidated.
 */
export class Http {
  readonly #transport: Transport;
  readonly #config: ResolvedConfig;
  readonly #stats: ClientStats;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;
  readonly #governor: RateGovernor;
  readonly #onThrottle: ((event: ThrottleEvent) => void) | undefined;

  constructor(transport: Transport, governor: RateGovernor, config: ResolvedConfig, stats: ClientStats, onRetry?: (event: RetryEvent) => void, onThrottle?: (event: ThrottleEvent) => void) {
    this.#transport = transport;
    this.#governor = governor;
    this.#config = config;
    this.#stats = stats;
    this.#onRetry = onRetry;
    this.#onThrottle = onThrottle;
  }

  context(spec: RequestSpec): ErrorContext {
    return this.#transport.errorContext(spec);
  }

  call(spec: RequestSpec): Promise<RawResponse> {
    return this.#call(spec, this.context(spec));
  }

  /** Call, parse (`parse` defaults to `JSON.parse`; result pages pass the lossless parser) and validate. */
  async json<S extends z.ZodType>(spec: RequestSpec, schema: S, parse: (text: string) => unknown = JSON.parse): Promise<z.output<S>> {
    const ctx = this.context(spec);
    return validate(await this.#call(spec, ctx), schema, parse, ctx);
  }

  #call(spec: RequestSpec, errorContext: ErrorContext): Promise<RawResponse> {
    const cls = rateClassOf(spec.httpMethod, spec.operation);
    const governed = async (n: number): Promise<RawResponse> => {
      const asked = performance.now();
      await this.#governor.take(cls, spec.signal, errorContext);
      const waitedMs = performance.now() - asked;
      if (waitedMs >= 1) this.#onThrottle?.({ operation: spec.operation, waitedMs });
      try {
        return await this.#transport.send(spec, n);
      } catch (err) {
        if (err instanceof RateLimitedError) this.#governor.refused(cls, err.retryAfterMs);
        throw err;
      }
    };
    return withRetry(governed, {
      operation: spec.operation,
      idempotency: spec.idempotency,
      policy: this.#config.retry,
      signal: spec.signal,
      stats: this.#stats,
      onRetry: this.#onRetry,
      errorContext,
    });
  }
}

export function validate<S extends z.ZodType>(
  res: RawResponse,
  schema: S,
  parse: (text: string) => unknown,
  ctx: ErrorContext,
): z.output<S> {
  let value: unknown;
  try {
    value = parse(res.text);
  } catch (err) {
    const excerpt = res.text.slice(0, 80);
    throw new InvalidResponseError(`response is not JSON (${(err as Error).message}); body starts ${JSON.stringify(excerpt)}`, { ...ctx, cause: err });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new InvalidResponseError(`response does not match the protocol: ${describeIssues(parsed.error)}`, { ...ctx, cause: parsed.error });
  }
  return parsed.data;
}

/** `result.metadata.row_count: expected number, received string; ...` (the first few issues). */
export function describeIssues(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
  const more = error.issues.length > 3 ? `; and ${error.issues.length - 3} more` : '';
  return shown.join('; ') + more;
}
