import { type Context, context, createContextKey, propagation, type Span, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { RetryEvent, ThrottleEvent } from '../client/hooks.ts';
import type { RunEvents } from '../jobs/run/runJob.ts';
import type { SpanEnd, Telemetry } from './index.ts';
import type { RunInstruments } from './instruments.ts';

const JOB = createContextKey('sluice.job');
/** The run's phases, for the requests made under it: a page fetch belongs to `sluice.pages` while that span is open. */
const PHASES = createContextKey('sluice.phases');
/** The client operations that read a result's pages. */
const PAGE_READ = /^get(?:Latest)?Result/;

/** An error as an attribute may show it: its code or class, never its message (which may quote a URL or a value). */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'Error';
}

function failed(span: Span, type: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  span.setAttribute('error.type', type);
}

/**
 * A run as spans: `sluice.job.run`, with children `sluice.execution` (id, state, credits, rows),
 * `sluice.pages` (every page fetch of the run, aggregated: pages, rows, bytes; the requests that
 * fetch them are its children), one `sluice.output` per output (its write: url, format, rows,
 * files, bytes) with its commit as a child (`sluice.output.commit`, see outputSpans.ts),
 * `sluice.retry` for a retried run, and the client's request retries and rate-limit waits.
 * `base` is the parent of a span started where none is active: the environment's `TRACEPARENT`
 * for `sluice run` (a shard process continues its launcher's trace), else a new trace.
 */
export function runTelemetry(tracer: Tracer, instruments: RunInstruments, base: Context): Pick<Telemetry, 'run' | 'inSpan' | 'environment' | 'client'> {
  const parent = (): Context => (trace.getSpan(context.active()) === undefined ? base : context.active());
  // Requests under the run's `sluice.pages` while the pages are read, else under the active span.
  const requestContext = (operation?: string): Context => {
    const active = context.active();
    const pages = (active.getValue(PHASES) as RunPhases | undefined)?.requestParent(operation);
    return pages === undefined ? active : trace.setSpan(active, pages);
  };
  const inSpan: Telemetry['inSpan'] = async (name, attributes, fn) => {
    const from = parent();
    const span = tracer.startSpan(name, { attributes }, from);
    const end: SpanEnd = { set: (a) => span.setAttributes(a), failed: (type) => failed(span, type) };
    try {
      return await context.with(trace.setSpan(from, span), () => fn(end));
    } catch (error) {
      failed(span, errorType(error));
      throw error;
    } finally {
      span.end();
    }
  };
  return {
    inSpan,
    async run(job, events, fn) {
      const from = parent();
      const span = tracer.startSpan('sluice.job.run', { attributes: { 'sluice.job': job } }, from);
      const ctx = trace.setSpan(from, span).setValue(JOB, job);
      const phases = new RunPhases(tracer, ctx, span, instruments);
      try {
        return await context.with(ctx.setValue(PHASES, phases), () => fn(phases.wrap(events)));
      } catch (error) {
        failed(span, errorType(error));
        throw error;
      } finally {
        phases.end();
        span.end();
      }
    },
    environment() {
      const carrier: Record<string, string> = {};
      propagation.inject(parent(), carrier);
      return { ...(carrier.traceparent ? { TRACEPARENT: carrier.traceparent } : {}), ...(carrier.tracestate ? { TRACESTATE: carrier.tracestate } : {}) };
    },
    client: {
      requestHeaders(operation) {
        const carrier: Record<string, string> = {};
        propagation.inject(requestContext(operation), carrier);
        return carrier;
      },
      onRetry(event: RetryEvent) {
        const rateLimited = event.error.status === 429;
        instruments.retried(context.active().getValue(JOB) as string | undefined, 'request', rateLimited);
        // The wait itself as the span: from now until the retry is sent.
        const start = Date.now();
        const span = tracer.startSpan(rateLimited ? 'sluice.rate_limit.wait' : 'sluice.request.retry', {
          startTime: start,
          attributes: { 'sluice.operation': event.operation, 'sluice.retry.attempt': event.attempt, 'sluice.retry.delay_ms': event.delayMs, 'error.type': errorType(event.error), ...(event.error.status === undefined ? {} : { 'http.response.status_code': event.error.status }) },
        }, requestContext(event.operation));
        span.end(start + event.delayMs);
      },
      onThrottle(event: ThrottleEvent) {
        // Many short waits when a run is paced to its key's rate: added up, not a span each.
        (context.active().getValue(PHASES) as RunPhases | undefined)?.throttled(event.waitedMs);
      },
    },
  };
}

/** The spans of one run's phases, opened and closed by its events. */
class RunPhases {
  #execution: Span | undefined;
  #pages: Span | undefined;
  /** The pages are read (an output has ended): a later request is not a page fetch of this attempt. */
  #read = false;
  #progressed = false;
  #last: { pages: number; rows: number; bytes: number } | undefined;
  #throttled = { waits: 0, ms: 0 };

  private readonly tracer: Tracer;
  private readonly ctx: Context;
  private readonly run: Span;
  private readonly instruments: RunInstruments;

  constructor(tracer: Tracer, ctx: Context, run: Span, instruments: RunInstruments) {
    this.tracer = tracer;
    this.ctx = ctx;
    this.run = run;
    this.instruments = instruments;
  }

  wrap(base: RunEvents | undefined): RunEvents {
    return {
      ...base,
      onExecution: (e) => {
        this.#execution?.end();
        this.#execution = this.tracer.startSpan('sluice.execution', { attributes: { 'sluice.execution_id': e.executionId, 'sluice.execution.started': e.started, 'sluice.execution.resumed': e.resumed } }, this.ctx);
        this.run.setAttribute('sluice.execution_id', e.executionId);
        base?.onExecution?.(e);
      },
      onProgress: (p) => {
        if (!this.#progressed) {
          this.#progressed = true;
          if (p.totalRows !== undefined) this.#execution?.setAttribute('sluice.rows', p.totalRows);
          this.#execution?.setAttribute('sluice.execution.state', 'completed');
        }
        this.#openPages();
        this.#last = { pages: p.pages, rows: p.rows, bytes: p.bytes };
        base?.onProgress?.(p);
      },
      onOutput: (o) => {
        // A written output's span is its write (outputSpans.ts), told once every output is written;
        // one committed already by an earlier run is told before any page is read, and is a span here.
        if (o.skipped) {
          const attributes = { 'sluice.output.url': o.url, 'sluice.output.format': o.format, 'sluice.rows': o.rows, 'sluice.files': o.files, 'sluice.bytes': o.bytes, 'sluice.output.skipped': true };
          this.tracer.startSpan('sluice.output', { attributes: { ...attributes, ...(o.snapshot ? { 'sluice.output.snapshot': o.snapshot } : {}) } }, this.ctx).end();
        } else {
          this.#endPages();
          this.#read = true;
        }
        base?.onOutput?.(o);
      },
      onRetry: (e) => {
        this.instruments.retried(this.ctx.getValue(JOB) as string, 'run', false);
        this.#endPages();
        this.#read = false;
        this.#progressed = false;
        this.#execution?.end();
        this.#execution = undefined;
        const start = Date.now();
        this.tracer.startSpan('sluice.retry', { startTime: start, attributes: { 'sluice.retry.attempt': e.attempt, 'sluice.retry.delay_ms': e.delayMs, 'error.type': errorType(e.error) } }, this.ctx).end(start + e.delayMs);
        base?.onRetry?.(e);
      },
      onRecorded: (r) => {
        this.instruments.recorded(r);
        this.run.setAttributes({ 'sluice.outcome': r.outcome, 'sluice.rows': r.rows, 'sluice.bytes': r.bytes, 'sluice.files': r.files, 'sluice.credits': r.credits, 'sluice.attempts': r.attempts });
        this.#execution?.setAttribute('sluice.credits', r.credits);
        if (r.outcome !== 'succeeded') this.#execution?.setAttribute('sluice.execution.state', r.outcome);
        base?.onRecorded?.(r);
      },
    };
  }

  /**
   * The span a request of the run belongs under: `sluice.pages` while the pages are read, opened
   * by the first result read (before its answer, which is when the progress is first told).
   */
  requestParent(operation: string | undefined): Span | undefined {
    if (operation !== undefined && PAGE_READ.test(operation) && !this.#read) this.#openPages();
    return this.#pages;
  }

  /** A request of the run waited for the key's rate governor. */
  throttled(ms: number): void {
    this.#throttled.waits += 1;
    this.#throttled.ms += ms;
  }

  #openPages(): void {
    if (this.#pages !== undefined || this.#read) return;
    const parent = this.#execution === undefined ? this.ctx : trace.setSpan(this.ctx, this.#execution);
    this.#pages = this.tracer.startSpan('sluice.pages', {}, parent);
  }

  #endPages(): void {
    if (this.#pages === undefined) return;
    if (this.#last) this.#pages.setAttributes({ 'sluice.pages': this.#last.pages, 'sluice.rows': this.#last.rows, 'sluice.page_bytes': this.#last.bytes });
    this.#pages.end();
    this.#pages = undefined;
    this.#last = undefined;
  }

  end(): void {
    if (this.#throttled.waits > 0) this.run.setAttributes({ 'sluice.rate_limit.waits': this.#throttled.waits, 'sluice.rate_limit.wait_ms': Math.round(this.#throttled.ms) });
    this.#endPages();
    this.#execution?.end();
  }
}
