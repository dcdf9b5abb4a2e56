import { readFileSync } from 'node:fs';
import { type Context, context, metrics, propagation, ROOT_CONTEXT, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, type Sampler, type SpanExporter, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { IncomingMessage } from 'node:http';
import { type OtelWanted, otlpProtocol, otlpTimeoutMs } from './env.ts';
import type { RequestSpan, Role, Telemetry } from './index.ts';
import { runInstruments } from './instruments.ts';
import { runTelemetry } from './runSpans.ts';

type Env = Record<string, string | undefined>;

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * The SDK as the environment configures it: OTLP/HTTP exporters (protobuf or JSON) for traces and
 * metrics, the resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name
 * `sluice` otherwise), the sampler from OTEL_TRACES_SAMPLER, W3C trace context, async context;
 * for `sluice run`, the trace context of TRACEPARENT / TRACESTATE in its environment.
 */
export async function startSdk(env: Env, wanted: OtelWanted, role: Role, warn: (message: string) => void): Promise<{ telemetry: Telemetry; requestSpan: RequestSpan } | undefined> {
  const resource = resourceFromAttributes({ 'service.name': 'sluice', 'service.version': VERSION }).merge(detectResources({ detectors: [envDetector] }));
  const timeoutMs = otlpTimeoutMs(env);
  const traceProtocol = otlpProtocol(env, 'TRACES');
  const metricProtocol = otlpProtocol(env, 'METRICS');
  for (const [signal, protocol] of [['TRACES', traceProtocol], ['METRICS', metricProtocol]] as const) {
    if (protocol === undefined) warn(`OpenTelemetry: OTEL_EXPORTER_OTLP_${signal}_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not offered): ${signal.toLowerCase()} are not exported`);
  }
  const exportTraces = wanted.traces && traceProtocol !== undefined;
  const exportMetrics = wanted.metrics && metricProtocol !== undefined;
  if (!exportTraces && !exportMetrics) return undefined;

  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const tracerProvider = exportTraces
    ? new TracerProvider({ resource, sampler: samplerFromEnv(env, warn), spanProcessors: [new BatchSpanProcessor({ exporter: await spanExporter(env, traceProtocol!), exportTimeoutMillis: timeoutMs })] })
    : undefined;
  if (tracerProvider) trace.setGlobalTracerProvider(tracerProvider);
  const meterProvider = exportMetrics
    ? new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter: await metricExporter(env, metricProtocol!), exportIntervalMillis: intervalMs(env), exportTimeoutMillis: timeoutMs })] })
    : undefined;
  if (meterProvider) metrics.setGlobalMeterProvider(meterProvider);

  const tracer = trace.getTracer('sluice', VERSION);
  const instruments = runInstruments(metrics.getMeter('sluice', VERSION));
  // A collector that is down costs at most the exporter's timeout, and never an error.
  const bounded = (work: () => Promise<unknown>) => Promise.race([work().catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs).unref())]).then(() => undefined);
  const telemetry: Telemetry = {
    ...runTelemetry(tracer, instruments, role === 'run' ? environmentContext(env, warn) : ROOT_CONTEXT),
    flush: () => bounded(() => Promise.all([tracerProvider?.forceFlush(), meterProvider?.forceFlush()])),
    shutdown: () => bounded(() => Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()])),
  };
  const requestSpan: RequestSpan = (req: IncomingMessage) => {
    const parent = propagation.extract(context.active(), req.headers);
    // The path only: a query may carry an API key (`?api_key=`), and attributes must never hold one.
    const path = (req.url ?? '/').split('?')[0]!;
    const span = tracer.startSpan(`service ${req.method} ${path.replace(/\/01[0-9A-Z]{24}(?=\/|$)/g, '/{id}')}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? '', 'url.path': path } }, parent);
    return (status) => {
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
  };
  return { telemetry, requestSpan };
}

/**
 * The trace a process continues when it was started inside one: TRACEPARENT and TRACESTATE, the
 * W3C trace context as environment variables (how a run hands its trace to its shard processes,
 * and how a launcher or workflow engine hands its own to sluice).
 */
function environmentContext(env: Env, warn: (message: string) => void): Context {
  const traceparent = env.TRACEPARENT?.trim();
  if (!traceparent) return ROOT_CONTEXT;
  const parent = propagation.extract(ROOT_CONTEXT, { traceparent, ...(env.TRACESTATE ? { tracestate: env.TRACESTATE } : {}) });
  if (trace.getSpanContext(parent) === undefined) warn(`OpenTelemetry: TRACEPARENT=${traceparent} is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): this run starts a trace of its own`);
  return parent;
}

/**
 * Where a signal goes and how long an export may take, from the environment given (which the
 * exporters, reading process.env, would not see): the signal's own endpoint as it is, else the
 * common one with `/v1/traces` or `/v1/metrics`. The exporters read _HEADERS and _COMPRESSION themselves.
 */
function exporterConfig(env: Env, signal: 'TRACES' | 'METRICS'): { url?: string; timeoutMillis?: number } {
  const own = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]?.trim();
  const common = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = own || (common ? `${common.replace(/\/+$/, '')}/v1/${signal.toLowerCase()}` : undefined);
  const timeout = Number(env[`OTEL_EXPORTER_OTLP_${signal}_TIMEOUT`] || env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return { ...(url === undefined ? {} : { url }), ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMillis: timeout } : {}) };
}

async function spanExporter(env: Env, protocol: 'http/protobuf' | 'http/json'): Promise<SpanExporter> {
  const config = exporterConfig(env, 'TRACES');
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(config);
}

async function metricExporter(env: Env, protocol: 'http/protobuf' | 'http/json'): Promise<PushMetricExporter> {
  const config = exporterConfig(env, 'METRICS');
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter(config);
  return new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter(config);
}

function intervalMs(env: Env): number {
  const ms = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return Number.isFinite(ms) && ms > 0 ? ms : 60_000;
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the specification defines them; default parentbased_always_on. */
export function samplerFromEnv(env: Env, warn: (message: string) => void): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim();
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 ? arg : 1;
  const samplers: Record<string, () => Sampler> = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(ratio),
    parentbased_always_on: () => new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    parentbased_always_off: () => new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    parentbased_traceidratio: () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
  };
  const make = samplers[name];
  if (make !== undefined) return make();
  warn(`OpenTelemetry: OTEL_TRACES_SAMPLER=${name} is not one of ${Object.keys(samplers).join(', ')}: sampling every trace`);
  return samplers.parentbased_always_on!();
}


