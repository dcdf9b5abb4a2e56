import { type Context, context, createContextKey, propagation, type Span, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { RetryEvent } from '../client/hooks.ts';
import type { RunEvents } from '../jobs/run/runJob.ts';
import type { Telemetry } from './index.ts';
import type { RunInstruments } from './instruments.ts';

const JOB = createContextKey('sluice.job');

/** An error as an attribute may show it: its code or class, never its message (which may quote a URL or a value). */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'Error';
}

/**
 * A run as spans: `sluice.job.run`, with children `sluice.execution` (id, state, credits, rows),
 * `sluice.pages` (every page fetch of the run, aggregated: pages, rows, bytes), one `sluice.output`
 * per output (its write and commit: url, format, rows, files, bytes), `sluice.retry` for a retried
 * run, and the client's request retries and rate-limit waits.
 */
export function runTelemetry(tracer: Tracer, instruments: RunInstruments): Pick<Telemetry, 'run' | 'client'> {
  return {
    async run(job, events, fn) {
      const span = tracer.startSpan('sluice.job.run', { attributes: { 'sluice.job': job } });
      const ctx = trace.setSpan(context.active(), span).setValue(JOB, job);
      const phases = new RunPhases(tracer, ctx, span, instruments);
      try {
        return await context.with(ctx, () => fn(phases.wrap(events)));
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorType(error) });
        span.setAttribute('error.type', errorType(error));
        throw error;
      } finally {
        phases.end();
        span.end();
      }
    },
    client: {
      requestHeaders() {
        const carrier: Record<string, string> = {};
        propagation.inject(context.active(), carrier);
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
        });
        span.end(start + event.delayMs);
      },
    },
  };
}

/** The spans of one run's phases, opened and closed by its events. */
class RunPhases {
  #execution: Span | undefined;
  #pages: Span | undefined;
  #pagesStarted: number | undefined;
  #last: { pages: number; rows: number; bytes: number } | undefined;

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
        if (this.#pages === undefined) {
          this.#pagesStarted = Date.now();
          const parent = this.#execution === undefined ? this.ctx : trace.setSpan(this.ctx, this.#execution);
          this.#pages = this.tracer.startSpan('sluice.pages', {}, parent);
          if (p.totalRows !== undefined) this.#execution?.setAttribute('sluice.rows', p.totalRows);
          this.#execution?.setAttribute('sluice.execution.state', 'completed');
        }
        this.#last = { pages: p.pages, rows: p.rows, bytes: p.bytes };
        base?.onProgress?.(p);
      },
      onOutput: (o) => {
        this.#endPages();
        const span = this.tracer.startSpan('sluice.output', {
          startTime: this.#pagesStarted ?? Date.now(),
          attributes: { 'sluice.output.url': o.url, 'sluice.output.format': o.format, 'sluice.rows': o.rows, 'sluice.files': o.files, 'sluice.bytes': o.bytes, 'sluice.output.skipped': o.skipped, 'sluice.output.resumed_files': o.resumedFiles, ...(o.snapshot ? { 'sluice.output.snapshot': o.snapshot } : {}) },
        }, this.ctx);
        span.end();
        base?.onOutput?.(o);
      },
      onRetry: (e) => {
        this.instruments.retried(this.ctx.getValue(JOB) as string, 'run', false);
        this.#endPages();
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

  #endPages(): void {
    if (this.#pages === undefined) return;
    if (this.#last) this.#pages.setAttributes({ 'sluice.pages': this.#last.pages, 'sluice.rows': this.#last.rows, 'sluice.page_bytes': this.#last.bytes });
    this.#pages.end();
    this.#pages = undefined;
  }

  end(): void {
    this.#endPages();
    this.#execution?.end();
  }
}
