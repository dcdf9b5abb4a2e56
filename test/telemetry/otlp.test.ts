import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
    // Each output's write, from its first batch to its commit, and the commit alone as its child.
    const outputs = trace.filter((s) => s.name === 'sluice.output');
    expect(outputs.map((o) => [o.attributes['sluice.output.format'], o.attributes['sluice.rows'], o.attributes['sluice.files'], o.attributes['sluice.output.skipped'], o.parentSpanId]).sort()).toEqual([
      ['csv', 1000, 1, false, root.spanId],
      ['parquet', 1000, 1, false, root.spanId],
    ]);
    expect(outputs.map((o) => o.attributes['sluice.output.url'])).toEqual(expect.arrayContaining([expect.stringContaining(join('traced', 'csv'))]));
    const commits = trace.filter((s) => s.name === 'sluice.output.commit');
    expect(commits).toHaveLength(2);
    for (const output of outputs) {
      const commit = commits.find((c) => c.parentSpanId === output.spanId)!;
      expect(commit.attributes).toEqual({ 'sluice.commit.protocol': 'manifest', 'sluice.files': 1, 'sluice.rows': 1000 });
      // Inside its output's span (times are whole milliseconds here: one of rounding either way).
      expect(commit.startMs).toBeGreaterThanOrEqual(output.startMs - 1);
      expect(commit.endMs).toBeLessThanOrEqual(output.endMs + 1);
    }

    // The embedded service's spans: the same trace, one per request, each a child of the span that
    // made it (its traceparent): the result's pages under `sluice.pages`, the rest under the run.
    const served = trace.filter((s) => s.name.startsWith('service '));
    expect(served.length).toBeGreaterThanOrEqual(3);
    expect(served.every((s) => s.kind === 2)).toBe(true);
    const resultFetches = served.filter((s) => /\/results\b/.test(s.name));
    expect(resultFetches.length).toBeGreaterThanOrEqual(1);
    expect(resultFetches.every((s) => s.parentSpanId === pages.spanId)).toBe(true);
    expect(served.filter((s) => !resultFetches.includes(s)).every((s) => s.parentSpanId === root.spanId)).toBe(true);
    expect(served.map((s) => s.name)).toEqual(expect.arrayContaining([expect.stringMatching(/^service POST \/api\/v1\//), expect.stringMatching(/^service GET \/api\/v1\/execution\/\{id\}\//)]));

    const points = receiver.points().filter((p) => p.attributes.job === 'traced' && p.resource['service.name'] === 'nightly-export');
    const value = (metric: string) => points.filter((p) => p.metric === metric).reduce((n, p) => n + p.value, 0);
    expect(value('sluice_job_runs_total')).toBe(1);
    expect(value('sluice_job_failures_total')).toBe(0);
    expect(value('sluice_job_rows_total')).toBe(1000);
    expect(value('sluice_job_bytes_total')).toBeGreaterThan(0);
    expect(points.find((p) => p.metric === 'sluice_job_credits_total')).toBeDefined();
    expect(points.find((p) => p.metric === 'sluice_job_duration_seconds')?.count).toBe(1);

    // The same execution again: both outputs hold it already, so each is a span of no length, marked skipped, with no commit.
    const again = await sluice(['run', file, '--json', '--execution', summary.execution_id], { env: otel() });
    expect(again.code, again.stderr).toBe(0);
    const second = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'traced' && s.traceId !== root.traceId)!;
    const skipped = receiver.spans().filter((s) => s.traceId === second.traceId && s.name.startsWith('sluice.output'));
    expect(skipped.map((o) => [o.name, o.attributes['sluice.output.format'], o.attributes['sluice.output.skipped'], o.attributes['sluice.rows'], o.parentSpanId]).sort()).toEqual([
      ['sluice.output', 'csv', true, 1000, second.spanId],
      ['sluice.output', 'parquet', true, 1000, second.spanId],
    ]);

    // An output added since: the two committed ones are skipped before any page is read, the new one reads them all under sluice.pages.
    const grown = join(dir, 'traced-grown.yaml');
    await writeFile(grown, (await readFile(file, 'utf8')) + `      - { format: ndjson, path: ${join(dir, 'traced', 'ndjson')} }\n`);
    const third = await sluice(['run', grown, '--json', '--execution', summary.execution_id], { env: otel() });
    expect(third.code, third.stderr).toBe(0);
    const last = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'traced' && s.traceId !== root.traceId && s.traceId !== second.traceId)!;
    const lastTrace = receiver.spans().filter((s) => s.traceId === last.traceId);
    expect(lastTrace.filter((s) => s.name === 'sluice.output').map((o) => [o.attributes['sluice.output.format'], o.attributes['sluice.output.skipped']]).sort()).toEqual([['csv', true], ['ndjson', false], ['parquet', true]]);
    const lastPages = one(lastTrace, 'sluice.pages');
    expect(lastPages.attributes['sluice.rows']).toBe(1000);
    const lastFetches = lastTrace.filter((s) => /^service GET .*\/results\b/.test(s.name));
    expect(lastFetches.length).toBeGreaterThanOrEqual(1);
    expect(lastFetches.every((s) => s.parentSpanId === lastPages.spanId)).toBe(true);
  });

  it('retries and rate-limit waits are spans and counted; no secret in any attribute; TRACEPARENT in the environment is continued', { timeout: 180_000 }, async () => {
    const file = await jobFile('retried', remote);
    // A launcher (a workflow engine) that started sluice inside its own trace.
    const [launcherTrace, launcherSpan] = ['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7'];
    const run = await sluice(['run', file, '--json'], { env: { ...otel(), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, TRACEPARENT: `00-${launcherTrace}-${launcherSpan}-01` } });
    expect(run.code, run.stderr).toBe(0);
    const root = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'retried')!;
    expect([root.traceId, root.parentSpanId]).toEqual([launcherTrace, launcherSpan]);
    const trace = receiver.spans().filter((s) => s.traceId === root.traceId);
    const pages = one(trace, 'sluice.pages');
    const waits = trace.filter((s) => s.name === 'sluice.request.retry' || s.name === 'sluice.rate_limit.wait');
    expect(waits.length).toBeGreaterThan(0);
    for (const w of waits) {
      // A page fetch's retry belongs to the pages, any other request's to the run.
      expect(w.parentSpanId).toBe(/^get(?:Latest)?Result/.test(String(w.attributes['sluice.operation'])) ? pages.spanId : root.spanId);
      expect([429, 503]).toContain(w.attributes['http.response.status_code']);
      expect(w.name).toBe(w.attributes['http.response.status_code'] === 429 ? 'sluice.rate_limit.wait' : 'sluice.request.retry');
    }
    const retries = receiver.points().filter((p) => p.metric === 'sluice_job_retries_total' && p.attributes.job === 'retried' && p.attributes.level === 'request');
    expect(retries.reduce((n, p) => n + p.value, 0)).toBe(waits.length);
    // The API key appears in no export at all.
    for (const r of receiver.requests) expect(r.body.includes(svc.keys.demo.admin)).toBe(false);
  });

  it('shard processes continue the run\'s trace: a span per shard under the run, each output\'s parts and the one commit beneath', { timeout: 180_000 }, async () => {
    const file = await jobFile('sharded', embedded());
    const run = await sluice(['run', file, '--processes', '2', '--json'], { env: otel() });
    expect(run.code, run.stderr).toBe(0);
    const root = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'sharded')!;
    expect(root.parentSpanId).toBe('');
    expect(root.attributes).toMatchObject({ 'sluice.shard.count': 2, 'process.exit.code': 0 });
    const trace = receiver.spans().filter((s) => s.traceId === root.traceId);
    const shards = trace.filter((s) => s.name === 'sluice.shard').sort((a, b) => Number(a.attributes['sluice.shard.index']) - Number(b.attributes['sluice.shard.index']));
    expect(shards.map((s) => [s.parentSpanId, s.attributes['sluice.shard.index'], s.attributes['sluice.shard.count'], s.attributes['sluice.job']])).toEqual([
      [root.spanId, 0, 2, 'sharded'],
      [root.spanId, 1, 2, 'sharded'],
    ]);
    // One run id and one execution, started by shard 0.
    expect(new Set(shards.map((s) => s.attributes['sluice.run_id'])).size).toBe(1);
    expect(new Set(shards.map((s) => s.attributes['sluice.execution_id'])).size).toBe(1);
    expect(shards.map((s) => s.attributes['sluice.execution.started'])).toEqual([true, false]);
    expect(shards.reduce((n, s) => n + Number(s.attributes['sluice.rows']), 0)).toBe(1000);
    // Each shard writes its parts of both outputs; the rows of an output's parts add up to the result.
    const outputs = trace.filter((s) => s.name === 'sluice.output');
    expect(outputs).toHaveLength(4);
    expect(outputs.every((o) => shards.some((s) => s.spanId === o.parentSpanId))).toBe(true);
    for (const format of ['csv', 'parquet']) expect(outputs.filter((o) => o.attributes['sluice.output.format'] === format).reduce((n, o) => n + Number(o.attributes['sluice.rows']), 0)).toBe(1000);
    // Each output committed once, by the shard that found every record, in a span of its own under that shard's output.
    const commits = trace.filter((s) => s.name === 'sluice.output.commit' && s.attributes['sluice.commit.outcome'] === 'committed');
    expect(commits).toHaveLength(2);
    for (const commit of commits) {
      const output = outputs.find((o) => o.spanId === commit.parentSpanId)!;
      expect(output.attributes['sluice.commit.outcome']).toBe('committed');
      expect(commit.attributes).toMatchObject({ 'sluice.commit.protocol': 'shards', 'sluice.rows': 1000 });
    }
    // The shards' requests carry the trace on: the service's spans are children of the shards' spans.
    const shardSide = new Set([...shards, ...outputs].map((s) => s.spanId));
    expect(trace.filter((s) => s.name.startsWith('service ') && shardSide.has(s.parentSpanId)).length).toBeGreaterThan(0);
  });

  it('an Iceberg output\'s commit span names its protocol and the snapshot it made', { timeout: 120_000 }, async () => {
    const file = join(dir, 'lake.yaml');
    await writeFile(file, `${remote}state_dir: ${join(dir, 'state')}\njobs:\n  - name: lake\n    source: { sql: "select * from sample.events" }\n    retries: 3\n    outputs:\n      - { format: parquet, table: iceberg, path: ${join(dir, 'lake')} }\n`);
    const run = await sluice(['run', file, '--json'], { env: { ...otel(), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    expect(run.code, run.stderr).toBe(0);
    const snapshot = (JSON.parse(run.stdout) as { outputs: { snapshot: string }[] }).outputs[0]!.snapshot;
    const root = receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'lake')!;
    const trace = receiver.spans().filter((s) => s.traceId === root.traceId);
    // One commit, under the output span of the attempt that made it (the job allows retries: an
    // attempt failed on a loaded machine has an output span of its own, and no commit).
    const commit = one(trace, 'sluice.output.commit');
    const output = trace.find((s) => s.name === 'sluice.output' && s.spanId === commit.parentSpanId);
    expect(output, 'the commit span is a child of an output span').toBeDefined();
    expect(commit.attributes).toEqual({ 'sluice.commit.protocol': 'iceberg', 'sluice.files': 1, 'sluice.rows': 1000, 'sluice.output.snapshot': snapshot });
    expect(output!.attributes).toMatchObject({ 'sluice.output.snapshot': snapshot, 'sluice.rows': 1000 });
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

  it('OTEL_TRACES_SAMPLER=always_off: no span is sent, the metrics still are', { timeout: 120_000 }, async () => {
    const file = await jobFile('unsampled', remote);
    const run = await sluice(['run', file], { env: { ...otel({ OTEL_TRACES_SAMPLER: 'always_off' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    expect(run.code, run.stderr).toBe(0);
    expect(receiver.points().find((p) => p.metric === 'sluice_job_runs_total' && p.attributes.job === 'unsampled')?.value).toBe(1);
    expect(receiver.spans().filter((s) => s.attributes['sluice.job'] === 'unsampled')).toEqual([]);
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

  it('a collector that takes the connection and never answers costs the exporter\'s timeout, not more', { timeout: 120_000 }, async () => {
    const silent = createServer((socket) => socket.on('data', () => undefined));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const file = await jobFile('silent', remote);
      const run = await sluice(['run', file, '--json'], { env: { ...otel({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: '1000' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
      const exited = Date.now();
      expect(run.code, run.stderr).toBe(0);
      // From the job's end to the process's: the 1 s timeout asked for, not the exporters' 10 s
      // default nor their retries (the bound is loose: the machine may be loaded).
      const finished = run.stderr.split('\n').map((l) => (l.startsWith('{') ? (JSON.parse(l) as { msg?: string; time?: string }) : {})).find((l) => l.msg === 'job finished');
      expect(exited - Date.parse(finished!.time!)).toBeLessThan(8000);
    } finally {
      silent.close();
    }
  });

  it('`sluice schedule` exports each run as it ends, while it keeps running', { timeout: 180_000 }, async () => {
    const file = await jobFile('scheduled', remote, '    schedule: "0 0 1 1 *"\n');
    // A TRACEPARENT the scheduler was started with is no run's parent: each run is a trace of its own.
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const proc = startSluice(['schedule', file, '--run-now', '--health-port', '0'], { env: { ...otel({ OTEL_METRIC_EXPORT_INTERVAL: '3600000' }), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, TRACEPARENT: traceparent } });
    try {
      const [, health] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
      await receiver.waitFor((spans) => spans.some((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'scheduled'), 90_000);
      expect(receiver.spans().find((s) => s.name === 'sluice.job.run' && s.attributes['sluice.job'] === 'scheduled')?.parentSpanId).toBe('');
      // Metrics too, long before their hour-long interval: flushed when the run ended.
      const deadline = Date.now() + 30_000;
      while (!receiver.points().some((p) => p.metric === 'sluice_job_runs_total' && p.attributes.job === 'scheduled') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(receiver.points().find((p) => p.metric === 'sluice_job_runs_total' && p.attributes.job === 'scheduled')?.value).toBe(1);
      // The same names as the scheduler's /metrics, so one dashboard reads either (retries: OpenTelemetry only).
      const scraped = await (await fetch(new URL('/metrics', health))).text();
      const exported = new Set(receiver.points().filter((p) => p.attributes.job === 'scheduled').map((p) => p.metric));
      expect(exported.size).toBeGreaterThanOrEqual(6);
      for (const name of exported) if (name !== 'sluice_job_retries_total') expect(scraped, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
      expect(proc.child.exitCode).toBeNull();
    } finally {
      await terminate(proc);
    }
  });
});
