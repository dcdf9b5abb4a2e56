// A proxy in front of the real local service, for the client's side of the Arrow wire: `json` is a
// service that only speaks JSON (it ignores Accept, as the official service does); `refuse` answers 406 to every request that asks for
// Arrow (a service that knows Arrow but will not serve it); `arrow` turns each JSON result page the
// service sends into an Arrow page as the wire contract describes it (IPC stream body, metadata in
// headers, as src/protocol/arrowPage.ts writes them), built with the project's own type mapping. Every other request passes unchanged.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RecordBatchStreamWriter } from 'apache-arrow';
import { createBatchBuilder } from '../../src/types/batch.ts';
import { compileRowDecoder } from '../../src/types/decode.ts';
import { parseJsonLossless } from '../../src/types/json.ts';
import { arrowPageHeaders, type ArrowPageMetaOut } from '../../src/protocol/arrowPage.ts';

export interface ArrowProxy {
  url: string;
  /** `Accept` of every result request seen, and the content type answered. */
  readonly seen: { accept: string; answered: string }[];
  close(): Promise<void>;
}

export async function startArrowProxy(target: string, mode: 'json' | 'refuse' | 'arrow'): Promise<ArrowProxy> {
  const upstream = new URL(target);
  const seen: { accept: string; answered: string }[] = [];
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(error) }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const accept = req.headers.accept ?? '';
    const wantsArrow = accept.includes('application/vnd.apache.arrow.stream');
    const isResults = /\/results(\?|$)/.test(req.url ?? '');
    if (isResults && wantsArrow && mode === 'refuse') {
      seen.push({ accept, answered: 'application/json (406)' });
      res.writeHead(406, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not acceptable', supported: ['application/json', 'text/csv'] }));
      return;
    }
    const headers = { ...req.headers, host: upstream.host, accept: 'application/json' };
    const answer = await forward(req, headers);
    if (!(isResults && wantsArrow) || answer.status !== 200 || mode === 'json') {
      if (isResults) seen.push({ accept, answered: 'application/json' });
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
      return;
    }
    const page = parseJsonLossless(answer.body.toString('utf8')) as Record<string, any>;
    if (page['result'] === undefined) {
      seen.push({ accept, answered: 'application/json' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer.body);
      return;
    }
    const m = page['result'].metadata;
    const columns = m.column_names.map((name: string, i: number) => ({ name, type: m.column_types[i] }));
    const decode = compileRowDecoder(columns, { timestamps: 'string' });
    const builder = createBatchBuilder(columns);
    page['result'].rows.forEach((row: unknown, i: number) => builder.append(decode(row, i)));
    const ipc = RecordBatchStreamWriter.writeAll([builder.flush()]).toUint8Array(true);
    const { result, ...envelope } = page;
    const h = { 'content-type': 'application/vnd.apache.arrow.stream', ...arrowPageHeaders({ ...envelope, metadata: result.metadata } as ArrowPageMetaOut) };
    seen.push({ accept, answered: 'application/vnd.apache.arrow.stream' });
    res.writeHead(200, h);
    res.end(ipc);
  }

  function forward(req: IncomingMessage, headers: Record<string, string | string[] | undefined>) {
    return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
      const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: upstream.pathname.replace(/\/$/, '') + (req.url ?? ''), headers }, (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          const h = { ...answer.headers };
          delete h['content-length'];
          delete h['transfer-encoding'];
          resolve({ status: answer.statusCode ?? 502, headers: h, body: Buffer.concat(chunks) });
        });
        answer.on('error', reject);
      });
      out.on('error', reject);
      req.pipe(out);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
