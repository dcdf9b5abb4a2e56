import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JobHealth, type JobHealthState } from './jobHealth.ts';
import type { Metrics } from './metrics.ts';

export interface HealthServer {
  /** Where to reach it: the bound address, or loopback when it bound every interface. */
  readonly url: string;
  /** The address it bound (`0.0.0.0` or `::`: every interface). */
  readonly host: string;
  close(): Promise<void>;
}

export interface HealthServerOptions {
  readonly port: number;
  /** Interface to bind; default loopback (`DEFAULT_HEALTH_HOST`): a container sets every interface. */
  readonly host?: string;
  readonly metrics: Metrics;
  /** False once shutdown began: /healthz answers 503 so an orchestrator stops routing. */
  readonly healthy: () => boolean;
  /** The jobs' recent runs: /readyz and /status (default: no job known, always ready). */
  readonly health?: JobHealth;
  /** The next run of a job, for /status (undefined: none, or not known). */
  readonly nextRun?: (job: string) => Date | undefined;
}

/** Loopback: what binds beyond it is chosen, not defaulted (the image sets `0.0.0.0`). */
export const DEFAULT_HEALTH_HOST = '127.0.0.1';

/**
 * For `sluice schedule --health-port`: `/healthz` (liveness: the process is up and not stopping),
 * `/readyz` (503 while a job's last N runs all failed, with why, or while stopping), `/status`
 * (every job's recent runs, JSON) and `/metrics` (Prometheus text).
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const known = options.health ?? new JobHealth([]);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end('{"error":"method not allowed"}');
    } else if (path === '/healthz') {
      const ok = options.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'stopping' }));
    } else if (path === '/readyz') {
      const failing = known.failingJobs();
      const status = !options.healthy() ? 'stopping' : failing.length > 0 ? 'failing' : 'ready';
      res.writeHead(status === 'ready' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status, failing_after: known.failingAfter, failing: failing.map((s) => jobJson(s)) }));
    } else if (path === '/status') {
      const jobs = known.states();
      const status = !options.healthy() ? 'stopping' : jobs.some((j) => j.failing) ? 'failing' : 'ready';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status, failing_after: known.failingAfter, jobs: jobs.map((s) => jobJson(s, options.nextRun?.(s.job))) }, null, 2));
    } else if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(options.metrics.render());
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found: try /healthz, /readyz, /status or /metrics"}');
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? DEFAULT_HEALTH_HOST, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const every = address.address === '0.0.0.0' || address.address === '::';
  const reach = every ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${reach}:${address.port}`,
    host: address.address,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One job in /readyz and /status (snake_case, timestamps in ISO 8601). */
function jobJson(s: JobHealthState, next?: Date): Record<string, unknown> {
  return {
    job: s.job,
    failing: s.failing,
    consecutive_failures: s.consecutiveFailures,
    runs: s.runs,
    failures: s.failures,
    last_outcome: s.lastOutcome ?? null,
    last_ended_at: s.lastEndedAt?.toISOString() ?? null,
    last_success_at: s.lastSuccessAt?.toISOString() ?? null,
    last_error: s.lastFailure === undefined ? null : { code: s.lastFailure.code, message: s.lastFailure.message },
    ...(next === undefined ? {} : { next_run_at: next.toISOString() }),
  };
}
