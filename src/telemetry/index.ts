import type { IncomingMessage } from 'node:http';
import type { RetryEvent } from '../client/hooks.ts';
import type { RunEvents } from '../jobs/run/runJob.ts';
import { otelWanted } from './env.ts';

// OpenTelemetry for runs, loaded only when the environment asks (an OTLP endpoint is set): this
// file imports nothing of OpenTelemetry, so `sluice --help`, `import 'sluice'` and every run
// without OTEL_* load none of it (test/telemetry/lazy.test.ts).

export interface Telemetry {
  /**
   * Runs one job run inside its span (`sluice.job.run`): `fn` gets the run's events, wrapped so
   * that its execution, page fetches, outputs and retries become child spans, and its record the
   * run metrics. Requests made inside carry the span in `traceparent`.
   */
  run<T>(job: string, events: RunEvents | undefined, fn: (events: RunEvents) => Promise<T>): Promise<T>;
  /** The client hooks: `traceparent` on every request, request retries and rate-limit waits as spans. */
  readonly client: { requestHeaders(): Record<string, string>; onRetry(event: RetryEvent): void };
  /** Sends what is buffered now (after each scheduled run), within the exporter's timeout; never throws. */
  flush(): Promise<void>;
  /** Flushes and stops, within the exporter's timeout; never throws. */
  shutdown(): Promise<void>;
}

/** A server span for one request to the local service, continuing the caller's `traceparent`; `end` takes the status. */
export type RequestSpan = (req: IncomingMessage) => ((status: number) => void) | undefined;

let started: Promise<Telemetry | undefined> | undefined;
let current: Telemetry | undefined;
let requestSpan: RequestSpan | undefined;

/**
 * Starts OpenTelemetry for this process (or thread) when `env` asks for it, once; undefined when
 * it does not. `role` names the spans' origin: the CLI's runs, or the local service.
 * `warn` hears about settings that cannot work (an unsupported protocol).
 */
export function startTelemetry(env: Record<string, string | undefined>, role: 'cli' | 'service', warn: (message: string) => void = () => undefined): Promise<Telemetry | undefined> {
  const wanted = otelWanted(env);
  if (!wanted.traces && !wanted.metrics) return Promise.resolve(undefined);
  started ??= import('./sdk.ts').then(async ({ startSdk }) => {
    const sdk = await startSdk(env, wanted, warn);
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

/** The local service's hook: a span per request while telemetry runs in this thread, else nothing (no OpenTelemetry loaded). */
export function serviceRequestSpan(req: IncomingMessage): ((status: number) => void) | undefined {
  return requestSpan?.(req);
}
