import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.ts';

export interface HealthServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface HealthServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly metrics: Metrics;
  /** False once shutdown began: /healthz answers 503 so an orchestrator stops routing. */
  readonly healthy: () => boolean;
}

/** `/healthz` (liveness, JSON) and `/metrics` (Prometheus text) for `sluice schedule --health-port`. */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end('{"error":"method not allowed"}');
    } else if (path === '/healthz') {
      const ok = options.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'stopping' }));
    } else if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(options.metrics.render());
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found: try /healthz or /metrics"}');
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
