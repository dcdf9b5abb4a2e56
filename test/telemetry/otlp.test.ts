import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { sluice, startSluice, terminate } from '../cli/sluiceProcess.ts';

// OpenTelemetry end to end: `sluice run` and `sluice schedule` with the standard OTEL_* environment
// export to a receiver on 127.0.0.1, which decodes the OTLP/HTTP bodies (JSON; protobuf checked
// for its content). The embedded service runs in the sluice process and continues the trace.

let receiver: OtlpReceiver;
let svc: TestService;
let dir: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // Faults: some requests answered 429 or 503 at random, so retries and rate-limit waits happen.
  svc = await startTestService({ sampleRows: 1000, limits: { page_rows: 50 }, faults: { error_rate: 0.25, error_statuses: [429, 503], retry_after_seconds: 0 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-otel-'));
}, 60_000);
afterAll(async () => {
  await receiver?.stop();
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

const otel = (extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: 'nightly-export',
  OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test,team=data',
  ...extra,
});

async function jobFile(name: string, connection: string, extra = ''): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, `${connection}state_dir: ${join(dir, 'state')}\njobs:\n  - name: ${name}\n    source: { sql: "select * from sample.events" }\n    retries: 3\n${extra}    outputs:\n      - { format: csv, path: ${join(dir, name, 'csv')} }\n      - { format: parquet, path: ${join(dir, name, 'parquet')} }\n`);
  return file;
}
const remote = 'connection:\n  base_url: ${SERVICE_BASE_URL}\n';
const embedded = () => `connection:\n  embedded: { data_dir: ${join(dir, 'service')}, sample_rows: 1000 }\n`;
const one = (spans: ReceivedSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

describe('OpenTelemetry', () => {
  it('a run exports its spans (run, execution, aggregated pages, each output) and the local service continues the trace; metrics as /metrics names them', { timeout: 180_000 }, async () => {
    const file = await jobFile('traced', embedded());
    const run = await sluice(['run', file, '--json'], { env: otel() });
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { execution_id: string };
    const spans = receiver.spans().filter((s) => s.resource['service.name'] === 'nightly-export');

    const root = spans.find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'traced')!;
    expect(root.parentSpanId).toBe('');
    expect(root.resource).toMatchObject({ 'service.name': 'nightly-export', 'deployment.environment': 'test', team: 'data' });
    expect(root.attributes).toMatchObject({ 'sluice.execution_id': summary.execution_id, 'sluice.rows': 1000, 'sluice.outcome': 'succeeded', 'sluice.attempts': 1, 'sluice.files': 2 });
    const trace = spans.filter((s) => s.traceId === root.traceId);

    const execution = one(trace, 'sluice.execution');
    expect(execution.parentSpanId).toBe(root.spanId);
    expect(execution.attributes).toMatchObject({ 'sluice.execution_id': summary.execution_id, 'sluice.execution.state': 'completed', 'sluice.rows': 1000, 'sluice.execution.started': true });
    expect(typeof execution.attributes['sluice.credits']).toBe('number');
    // Every page of the run in one span.
    const pages = one(trace, 'sluice.pages');
    expect(pages.parentSpanId).toBe(execution.spanId);
    expect(pages.attributes['sluice.rows']).toBe(1000);
    expect(Number(pages.attributes['sluice.pages'])).toBeGreaterThanOrEqual(1);
    const outputs = trace.filter((s) => s.name === 'sluice.output');
    expect(outputs.map((o) => [o.attributes['sluice.output.format'], o.attributes['sluice.rows'], o.parentSpanId]).sort()).toEqual([['csv', 1000, root.spanId], ['parquet', 1000, root.spanId]]);
    expect(outputs.map((o) => o.attributes['sluice.output.url'])).toEqual(expect.arrayContaining([expect.stringContaining(join('traced', 'csv'))]));

    // The embedded service's spans: the same trace, children of the run's span (its traceparent), one per request.
    const served = trace.filter((s) => s.name.startsWith('service '));
    expect(served.length).toBeGreaterThanOrEqual(3);
    expect(served.every((s) => s.parentSpanId === root.spanId && s.kind === 2)).toBe(true);
    expect(served.map((s) => s.name)).toEqual(expect.arrayContaining([expect.stringMatching(/^service POST \/api\/v1\//), expect.stringMatching(/^service GET \/api\/v1\/execution\/\{id\}\//)]));

    const points = receiver.points().filter((p) => p.attributes.job === 'traced');
    const value = (metric: string) => points.filter((p) => p.metric === metric).reduce((n, p) => n + p.value, 0);
    expect(value('sluice_job_runs_total')).toBe(1);
    expect(value('sluice_job_failures_total')).toBe(0);
    expect(value('sluice_job_rows_total')).toBe(1000);
    expect(value('sluice_job_bytes_total')).toBeGreaterThan(0);
    expect(points.find((p) => p.metric === 'sluice_job_credits_total')).toBeDefined();
    expect(points.find((p) => p.metric === 'sluice_job_duration_seconds')?.count).toBe(1);
  });

  it('retries and rate-limit waits are spans and counted; no secret in any attribute', { timeout: 180_000 }, async () => {
    const file = await jobFile('retried', remote);
    const run = await sluice(['run', file, '--json'], { env: { ...otel(), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    expect(run.code, run.stderr).toBe(0);
    const root = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'retried')!;
    const trace = receiver.spans().filter((s) => s.traceId === root.traceId);
    const waits = trace.filter((s) => s.name === 'sluice.request.retry' || s.name === 'sluice.rate_limit.wait');
    expect(waits.length).toBeGreaterThan(0);
    for (const w of waits) {
      expect(w.parentSpanId).toBe(root.spanId);
      expect([429, 503]).toContain(w.attributes['http.response.status_code']);
      expect(w.name).toBe(w.attributes['http.response.status_code'] === 429 ? 'sluice.rate_limit.wait' : 'sluice.request.retry');
    }
    const retries = receiver.points().filter((p) => p.metric === 'sluice_job_retries_total' && p.attributes.job === 'retried' && p.attributes.level === 'request');
    expect(retries.reduce((n, p) => n + p.value, 0)).toBe(waits.length);
    // The API key appears in no export at all.
    for (const r of receiver.requests) expect(r.body.includes(svc.keys.demo.admin)).toBe(false);
  });

  it('exports OTLP/HTTP protobuf by default (the specification default)', { timeout: 120_000 }, async () => {
    const before = receiver.requests.length;
    const file = await jobFile('protobuf', remote);
    const run = await sluice(['run', file], { env: { ...otel({ OTEL_EXPORTER_OTLP_PROTOCOL: '' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    expect(run.code, run.stderr).toBe(0);
    const sent = receiver.requests.slice(before);
    const traces = sent.filter((r) => r.path === '/v1/traces');
    const metrics = sent.filter((r) => r.path === '/v1/metrics');
    expect(traces.length).toBeGreaterThan(0);
    expect(metrics.length).toBeGreaterThan(0);
    for (const r of [...traces, ...metrics]) expect(r.contentType).toBe('application/x-protobuf');
    // Protobuf strings are their UTF-8 bytes: the span and metric names are in the bodies.
    expect(Buffer.concat(traces.map((r) => r.body)).includes('sluice.job.run')).toBe(true);
    expect(Buffer.concat(metrics.map((r) => r.body)).includes('sluice_job_rows_total')).toBe(true);
  });

  it('a collector that is down neither fails the run nor leaves it waiting', { timeout: 120_000 }, async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    const file = await jobFile('down', remote);
    const run = await sluice(['run', file, '--json'], { env: { ...otel({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '2000' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 1000 });
    expect(existsSync(join(dir, 'down', 'csv', '_SUCCESS'))).toBe(true);
  });

  it('`sluice schedule` exports each run as it ends, while it keeps running', { timeout: 180_000 }, async () => {
    const file = await jobFile('scheduled', remote, '    schedule: "0 0 1 1 *"\n');
    const proc = startSluice(['schedule', file, '--run-now'], { env: { ...otel({ OTEL_METRIC_EXPORT_INTERVAL: '3600000' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    try {
      await receiver.waitFor((spans) => spans.some((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'scheduled'), 90_000);
      // Metrics too, long before their hour-long interval: flushed when the run ended.
      const deadline = Date.now() + 30_000;
      while (!receiver.points().some((p) => p.metric === 'sluice_job_runs_total' && p.attributes.job === 'scheduled') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(receiver.points().find((p) => p.metric === 'sluice_job_runs_total' && p.attributes.job === 'scheduled')?.value).toBe(1);
      expect(proc.child.exitCode).toBeNull();
    } finally {
      await terminate(proc);
    }
  });
});
