import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ROOT, sluiceEntry, testEnv } from '../cli/sluiceProcess.ts';

export interface McpProcess {
  readonly client: Client;
  stderr(): string;
  /** Calls a tool; the result as the server sent it (tool errors included, not thrown). */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** Starts `sluice mcp ARGS` as a client would (the SDK's stdio transport) and connects the SDK's client. */
export async function startMcp(args: readonly string[], options: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<McpProcess> {
  const env = Object.fromEntries(Object.entries(testEnv({ SLUICE_LOG_FORMAT: undefined, ...options.env })).filter((e): e is [string, string] => e[1] !== undefined));
  const transport = new StdioClientTransport({ command: 'node', args: [sluiceEntry(), 'mcp', ...args], env, cwd: options.cwd ?? ROOT, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const client = new Client({ name: 'sluice-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`could not connect to sluice mcp: ${error instanceof Error ? error.message : String(error)}\nstderr: ${err}`);
  }
  return {
    client,
    stderr: () => err,
    call: async (name, callArgs = {}) => (await client.callTool({ name, arguments: callArgs })) as CallToolResult,
    close: () => client.close(),
  };
}

/** The text of a tool result's first content block. */
export function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}
