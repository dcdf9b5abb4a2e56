import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from '../../src/scheduler/healthServer.ts';
import { Metrics } from '../../src/scheduler/metrics.ts';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('health server', () => {
  it('binds loopback unless told otherwise, and says what it bound', async () => {
    server = await startHealthServer({ port: 0, metrics: new Metrics(), healthy: () => true });
    expect(server.host).toBe('127.0.0.1');
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await server.close();
    server = await startHealthServer({ port: 0, host: '0.0.0.0', metrics: new Metrics(), healthy: () => true });
    expect(server.host).toBe('0.0.0.0');
    // Every interface: reachable on loopback too, which is the address the log gives to try.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('answers /healthz with 200 while healthy and 503 once stopping', async () => {
    let healthy = true;
    server = await startHealthServer({ port: 0, host: '127.0.0.1', metrics: new Metrics(), healthy: () => healthy });
    const up = await fetch(`${server.url}/healthz`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ status: 'ok' });
    healthy = false;
    const down = await fetch(`${server.url}/healthz`);
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({ status: 'stopping' });
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
  });

  it('serves Prometheus text with runs, rows, bytes, failures and durations per job', async () => {
    const metrics = new Metrics(['daily', 'we"ird']);
    metrics.started('daily');
    metrics.finished({ job: 'daily', ok: true, rows: 1000, bytes: 4096, credits: 10, durationMs: 1500, endedAt: new Date('2026-01-01T00:00:00Z') });
    metrics.started('daily');
    metrics.finished({ job: 'daily', ok: false, rows: 0, bytes: 0, credits: 0, durationMs: 500, endedAt: new Date('2026-01-01T01:00:00Z') });
    server = await startHealthServer({ port: 0, host: '127.0.0.1', metrics, healthy: () => true });
    const res = await fetch(`${server.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0.0.4/);
    const text = await res.text();
    expect(text).toContain('# TYPE sluice_job_runs_total counter');
    expect(text).toContain('sluice_job_runs_total{job="daily"} 2');
    expect(text).toContain('sluice_job_failures_total{job="daily"} 1');
    expect(text).toContain('sluice_job_rows_total{job="daily"} 1000');
    expect(text).toContain('sluice_job_bytes_total{job="daily"} 4096');
    expect(text).toContain('sluice_job_duration_seconds_sum{job="daily"} 2');
    expect(text).toContain('sluice_job_duration_seconds_count{job="daily"} 2');
    expect(text).toContain('sluice_job_last_success_timestamp_seconds{job="daily"} 1767225600');
    expect(text).toContain('sluice_job_runs_total{job="we\\"ird"} 0');
    // Every sample line is `name{labels} number`.
    for (const line of text.trim().split('\n').filter((l) => !l.startsWith('#'))) expect(line).toMatch(/^[a-z_]+\{job="(?:[^"\\]|\\.)*"\} [0-9.e+-]+$/);
  });
});
