import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The one hand-written fake of these tests: the real service never sends malformed bodies or resets a
 * POST, so the seams for those (InvalidResponseError, the resubmission rule) get a tiny node:http
 * server whose every answer the test scripts. It records what it received.
 */
export interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Write this many bytes of `body`, then destroy the socket (headers announce the full length). */
  resetAfterBytes?: number;
  /** Answer after this many ms (unless the client has gone by then). */
  delayMs?: number;
  /** Answer once this settles (then `delayMs` on): a page held until other requests have arrived. */
  after?: Promise<unknown>;
}

export interface MisbehavingServer {
  baseUrl: string;
  received: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  /** Requests received whose response has not closed yet (answered, or dropped by the client). */
  readonly open: number;
  close(): Promise<void>;
}

export async function startMisbehavingServer(script: (req: IncomingMessage, n: number) => Scripted): Promise<MisbehavingServer> {
  const received: MisbehavingServer['received'] = [];
  let open = 0;
  const server = createServer((req, res: ServerResponse) => {
    open++;
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      const answer = script(req, received.length);
      const send = () => {
        if (res.destroyed) return;
        const body = Buffer.from(answer.body ?? '');
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', 'content-length': String(body.length), ...answer.headers });
        if (answer.resetAfterBytes !== undefined) {
          res.write(body.subarray(0, answer.resetAfterBytes), () => setImmediate(() => res.socket?.destroy()));
        } else {
          res.end(body);
        }
      };
      const delayed = () => (answer.delayMs ? setTimeout(send, answer.delayMs) : send());
      if (answer.after === undefined) delayed();
      else void answer.after.then(delayed, delayed);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/api`,
    received,
    get open() {
      return open;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
