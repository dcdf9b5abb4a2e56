import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface S3Gate {
  /** http://127.0.0.1:<port>: point an S3 client here instead of at the local S3 itself. */
  readonly endpoint: string;
  /** Conditional PUTs answered 412 so far. */
  readonly refused: number;
  close(): Promise<void>;
}

/**
 * A proxy in front of the local S3 server that enforces `If-None-Match: *` on PUT, which the
 * local server (fauxqs) accepts over an existing key: per key, one conditional PUT at a time
 * checks with HEAD and answers 412 PreconditionFailed, as S3 does, when the key exists.
 * Everything else passes through unchanged. A test stand-in for S3's own check, nothing more.
 */
export async function startS3Gate(upstream: string): Promise<S3Gate> {
  const target = new URL(upstream);
  const locks = new Map<string, Promise<void>>();
  let refused = 0;

  const forward = (req: IncomingMessage, body: Buffer, method = req.method!): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const headers = { ...req.headers };
      if (method === 'HEAD') {
        delete headers['content-length'];
        delete headers['if-none-match'];
      }
      const out = request({ host: target.hostname, port: target.port, method, path: req.url, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      out.on('error', reject);
      out.end(method === 'HEAD' ? undefined : body);
    });

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const conditional = req.method === 'PUT' && req.headers['if-none-match'] === '*' && !String(req.url).includes('uploadId=');
      const run = async () => {
        if (conditional) {
          const head = await forward(req, body, 'HEAD');
          if (head.status === 200) {
            refused++;
            res.writeHead(412, { 'content-type': 'application/xml' });
            res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>');
            return;
          }
        }
        const out = await forward(req, body);
        res.writeHead(out.status, out.headers);
        res.end(out.body);
      };
      const key = conditional ? String(req.url).split('?')[0]! : undefined;
      const previous = key ? (locks.get(key) ?? Promise.resolve()) : Promise.resolve();
      const current = previous.then(run).catch((error: unknown) => {
        res.writeHead(502);
        res.end(String(error));
      });
      if (key) locks.set(key, current);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get refused() {
      return refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
