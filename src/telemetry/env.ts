/** Which OpenTelemetry signals the environment asks sluice to export, and how. */
export interface OtelWanted {
  readonly traces: boolean;
  readonly metrics: boolean;
}

const set = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';

/**
 * Whether to export at all: only when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
 * the signal's own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`), unless
 * `OTEL_SDK_DISABLED=true` or the signal's exporter is `none`. The SDK's own default (export to
 * localhost:4318 whenever it is loaded) would make every run try a collector nobody set up.
 */
export function otelWanted(env: Record<string, string | undefined>): OtelWanted {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { traces: false, metrics: false };
  const common = set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const exporterOn = (name: string | undefined) => name === undefined || name.trim() === '' || name.split(',').some((e) => e.trim() === 'otlp');
  return {
    traces: (common || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) && exporterOn(env.OTEL_TRACES_EXPORTER),
    metrics: (common || set(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)) && exporterOn(env.OTEL_METRICS_EXPORTER),
  };
}

/** OTLP over HTTP: `http/protobuf` (the specification's default) or `http/json`; grpc is not offered. */
export function otlpProtocol(env: Record<string, string | undefined>, signal: 'TRACES' | 'METRICS'): 'http/protobuf' | 'http/json' | undefined {
  const value = (env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  return value === 'http/protobuf' || value === 'http/json' ? value : undefined;
}

/** The exporter's timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, ms; default 10 s): the most a collector that is down can delay a run's end. */
export function otlpTimeoutMs(env: Record<string, string | undefined>): number {
  const ms = Number(env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return Number.isFinite(ms) && ms > 0 ? ms : 10_000;
}
