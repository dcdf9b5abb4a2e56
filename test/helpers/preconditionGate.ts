import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PreconditionGate {
  /** http://127.0.0.1:<port>: point the S3 client here instead of at the local S3 itself. */
  readonly endpoint: string;
  /** Conditional PUTs refused with 412 so far. */
  readonly refused: number;
  /** The access key id of every signed request so far, by method (which credentials a writer used). */
  readonly accessKeys: readonly { readonly method: string; readonly key: string }[];
  stop(): Promise<void>;
}

/**
 * The local S3 server (fauxqs) accepts `If-None-Match: *` and `If-Match` and ignores them. This
 * loopback proxy in front of it enforces them for single PUTs, as S3 does: per key, one
 * conditional PUT at a time; it asks the real server (HEAD, path style) whether the object exists
 * and for its ETag, answers 412 when the condition fails, and forwards the PUT untouched otherwise.
 * Every other request passes through unchanged.
 */
export async function startPreconditionGate(upstream: string): Promise<PreconditionGate> {
  const target = new URL(upstream);
  const locks = new Map<string, Promise<void>>();
  let refused = 0;

  const forward = (req: IncomingMessage, body: Buffer | undefined, res: import('node:http').ServerResponse): Promise<void> =>
    new Promise((resolve) => {
      const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        answer.on('end', resolve);
        answer.on('error', () => resolve());
      });
      up.on('error', (error) => {
        res.writeHead(502).end(String(error));
        resolve();
      });
      if (body === undefined) req.pipe(up);
      else up.end(body);
    });

  const head = (path: string): Promise<{ exists: boolean; etag: string | undefined }> =>
    new Promise((resolve, reject) => {
      const up = request({ host: target.hostname, port: target.port, method: 'HEAD', path }, (answer) => {
        answer.resume();
        const etag = answer.headers.etag;
        resolve({ exists: answer.statusCode === 200, etag: typeof etag === 'string' ? etag : undefined });
      });
      up.on('error', reject);
      up.end();
    });

  const accessKeys: { method: string; key: string }[] = [];
  const server: Server = createServer((req, res) => {
    const signer = /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ''))?.[1];
    if (signer !== undefined) accessKeys.push({ method: req.method!, key: signer });
    const url = new URL(req.url!, 'http://gate');
    const ifNoneMatch = req.headers['if-none-match'];
    const ifMatch = req.headers['if-match'];
    const conditional = req.method === 'PUT' && !url.searchParams.has('uploadId') && (ifNoneMatch !== undefined || ifMatch !== undefined);
    if (!conditional) {
      void forward(req, undefined, res);
      return;
    }
    const key = url.pathname;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const previous = locks.get(key) ?? Promise.resolve();
      const turn = previous.then(async () => {
        let now: { exists: boolean; etag: string | undefined };
        try {
          now = await head(key);
        } catch (error) {
          res.writeHead(502).end(String(error));
          return;
        }
        const fails = (ifNoneMatch === '*' && now.exists) || (ifMatch !== undefined && (!now.exists || now.etag !== ifMatch));
        if (fails) {
          refused++;
          res.writeHead(412, { 'content-type': 'application/xml' });
          res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>');
          return;
        }
        await forward(req, Buffer.concat(chunks), res);
      });
      const settled = turn.catch(() => undefined);
      locks.set(key, settled);
      void settled.then(() => {
        if (locks.get(key) === settled) locks.delete(key);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get refused() {
      return refused;
    },
    accessKeys,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
