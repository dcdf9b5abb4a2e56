import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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
}

/** Loopback: what binds beyond it is chosen, not defaulted (the image sets `0.0.0.0`). */
export const DEFAULT_HEALTH_HOST = '127.0.0.1';

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
