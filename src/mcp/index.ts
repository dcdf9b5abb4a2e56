import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpServerContext } from './context.ts';
import { createMcpServer, toolsFor } from './server.ts';

export { OutputAllowlist } from './allowlist.ts';
export { Secrets } from './secrets.ts';
export type { McpServerContext, McpSettings } from './context.ts';
export { toolsFor } from './server.ts';
export { isLoopback } from './loopback.ts';

/** Serves one session over stdio until the client closes the stream or the server is stopped. */
export async function serveStdio(context: McpServerContext, version: string, stdin: Readable, stdout: Writable): Promise<void> {
  const server = createMcpServer(context, version);
  const transport = new StdioServerTransport(stdin, stdout);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    stdin.once('end', resolve);
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.connect(transport);
  context.log.info('serving MCP over stdio', { tools: toolsFor(context).map((t) => t.name).join(', ') });
  try {
    await closed;
  } finally {
    await server.close();
  }
}
