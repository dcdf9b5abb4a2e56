import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerContext } from './context.ts';
import { isLoopback } from './loopback.ts';
import { createMcpServer } from './server.ts';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  /** A bearer token every request must carry (`Authorization: Bearer <token>`); undefined: none asked. */
  readonly token?: string | undefined;
  /** Told the URL once listening. */
  readonly onListening?: (url: string) => void;
}

/**
 * Serves MCP over streamable HTTP at `/mcp` until the server is stopped: one MCP server (and one
 * budget) per session, sessions identified by the `Mcp-Session-Id` the SDK issues. Requests whose
 * Host header is not the address listened on are refused (DNS rebinding), so a web page cannot
 * reach a server on loopback through a name it controls.
 */
export async function serveHttp(context: McpServerContext, version: string, options: HttpOptions): Promise<void> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let allowedHosts: string[] = [];
  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      context.log.error('MCP HTTP request failed', { error: context.secrets.scrub(error instanceof Error ? error.message : String(error)) });
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the MCP endpoint is /mcp\n');
      return;
    }
    if (options.token !== undefined && !bearerMatches(req.headers.authorization, options.token)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('unauthorized: send Authorization: Bearer <token>\n');
      return;
    }
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? sessions.get(id) : undefined;
    if (existing) {
      await existing.handleRequest(req, res);
      return;
    }
    if (typeof id === 'string') {
      // A session this server does not know (it ended, or the server restarted): the client starts a new one.
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('no such session: start one with an initialize request\n');
      return;
    }
    const body = await readJson(req);
    if (!isInitializeRequest(body)) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no valid session id; start with initialize' }, id: null }));
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, transport);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await createMcpServer(context, version).connect(transport);
    await transport.handleRequest(req, res, body);
  }
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const address = http.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  allowedHosts = [`${shown}:${port}`, ...(isLoopback(options.host) ? [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`] : [])];
  options.onListening?.(`http://${shown}:${port}/mcp`);
  await new Promise<void>((resolve) => {
    if (context.signal.aborted) resolve();
    else context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await Promise.allSettled([...sessions.values()].map((t) => t.close()));
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** MCP messages are small; a body past this is refused rather than buffered. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
