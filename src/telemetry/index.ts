import type { IncomingMessage } from 'node:http';
import type { RetryEvent, ThrottleEvent } from '../client/hooks.ts';
import type { RunEvents } from '../jobs/run/runJob.ts';
import { otelWanted } from './env.ts';

// OpenTelemetry for runs, loaded only when the environment asks (an OTLP endpoint is set): this
// file imports nothing of OpenTelemetry, so `sluice --help`, `import 'sluice'` and every run
// without OTEL_* load none of it (test/cli/startup.test.ts).

export interface Telemetry {
  /**
   * Runs one job run inside its span (`sluice.job.run`): `fn` gets the run's events, wrapped so
   * that its execution, page fetches, outputs and retries become child spans, and its record the
   * run metrics. Requests made inside carry the span in `traceparent`.
   */
  run<T>(job: string, events: RunEvents | undefined, fn: (events: RunEvents) => Promise<T>): Promise<T>;
  /** Runs `fn` in a child span of the active one (or of the environment's `TRACEPARENT` when none is active). */
  inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanEnd) => Promise<T>): Promise<T>;
  /** The active trace context as environment variables (`TRACEPARENT`, `TRACESTATE`), for a process started now. */
  environment(): Record<string, string>;
  /**
   * The client hooks: `traceparent` on every request, request retries and rate-limit waits as
   * spans, the waits of the key's rate governor added up on the run's span.
   */
  readonly client: { requestHeaders(operation: string): Record<string, string>; onRetry(event: RetryEvent): void; onThrottle(event: ThrottleEvent): void };
  /** Sends what is buffered now (after each scheduled run), within the exporter's timeout; never throws. */
  flush(): Promise<void>;
  /** Flushes and stops, within the exporter's timeout; never throws. */
  shutdown(): Promise<void>;
}

export type SpanAttributes = Record<string, string | number | boolean>;

/** What the work inside a span (`inSpan`) can add as it ends: attributes known only then, a failure told by its exit code. */
export interface SpanEnd {
  set(attributes: SpanAttributes): void;
  /** Marks the span failed, `type` (an error code, never a message) as its `error.type`. */
  failed(type: string): void;
}

const NO_SPAN: SpanEnd = { set: () => undefined, failed: () => undefined };

/** A server span for one request to the local service, continuing the caller's `traceparent`; `end` takes the status. */
export type RequestSpan = (req: IncomingMessage) => ((status: number) => void) | undefined;

let started: Promise<Telemetry | undefined> | undefined;
let current: Telemetry | undefined;
let requestSpan: RequestSpan | undefined;

/**
 * Who starts telemetry: `sluice run` (its spans continue the trace of a `TRACEPARENT` in its
 * environment, as the shard processes of a run do), `sluice schedule` (a trace per run, whatever
 * started it), or the local service (a span per request, continuing the request's `traceparent`).
 */
export type Role = 'run' | 'schedule' | 'service';

/**
 * Starts OpenTelemetry for this process (or thread) when `env` asks for it, once; undefined when
 * it does not.
 * `warn` hears about settings that cannot work (an unsupported protocol).
 */
export function startTelemetry(env: Record<string, string | undefined>, role: Role, warn: (message: string) => void = () => undefined): Promise<Telemetry | undefined> {
  const wanted = otelWanted(env);
  if (!wanted.traces && !wanted.metrics) return Promise.resolve(undefined);
  started ??= import('./sdk.ts').then(async ({ startSdk }) => {
    const sdk = await startSdk(env, wanted, role, warn);
    if (sdk !== undefined && role === 'service') requestSpan = sdk.requestSpan;
    current = sdk?.telemetry;
    return current;
  });
  return started;
}

/** The telemetry this process started, if any (the clients a command makes take its hooks). */
export function currentTelemetry(): Telemetry | undefined {
  return current;
}

/** Runs one job run in its span when telemetry runs in this process; else just runs it. */
export function withRunTelemetry<T>(job: string, events: RunEvents, fn: (events: RunEvents) => Promise<T>): Promise<T> {
  return current === undefined ? fn(events) : current.run(job, events, fn);
}

/** Runs `fn` in a child span of the active one when telemetry runs in this process; else just runs it. */
export function inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanEnd) => Promise<T>): Promise<T> {
  return current === undefined ? fn(NO_SPAN) : current.inSpan(name, attributes, fn);
}

/** The environment that makes a process started now continue this trace (`TRACEPARENT`); empty when telemetry is off. */
export function traceEnvironment(): Record<string, string> {
  return current?.environment() ?? {};
}

/** The local service's hook: a span per request while telemetry runs in this thread, else nothing (no OpenTelemetry loaded). */
export function serviceRequestSpan(req: IncomingMessage): ((status: number) => void) | undefined {
  return requestSpan?.(req);
}
