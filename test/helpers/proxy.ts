// A proxy in front of the local service for tests that need to see or change the traffic: it
// forwards every request, and `fault(url)` may answer one with an error status instead (or just
// count it, returning undefined); `hold(url)` may hold a request's answer back until it resolves;
// `answered(url, status, error)` hears how each request ended: the status sent, or 'failed' (and
// why) when the service could not be reached and the client's connection was destroyed instead.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Forwards every request to `target`; `fault(url)` may answer one with an error status instead. */
export async function startProxy(
  target: string,
  fault: (url: string) => number | undefined,
  hold?: (url: string) => Promise<void>,
  answered?: (url: string, status: number | 'failed', error?: unknown) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const origin = new URL(target).origin;
  const server: Server = createServer((req, res) => {
    const status = fault(req.url ?? '');
    if (status !== undefined) {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'execution not found (injected by the test proxy)' }));
      answered?.(req.url ?? '', status);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'connection') as [string, string][]);
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${origin}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) })
        .then(async (answer) => {
          const bytes = Buffer.from(await answer.arrayBuffer());
          await hold?.(req.url ?? '');
          const out: Record<string, string> = {};
          answer.headers.forEach((v, k) => {
            if (k !== 'content-encoding' && k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') out[k] = v;
          });
          res.writeHead(answer.status, out);
          res.end(bytes);
          answered?.(req.url ?? '', answer.status);
        })
        .catch((error: unknown) => {
          answered?.(req.url ?? '', 'failed', error);
          res.destroy();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${new URL(target).pathname}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
