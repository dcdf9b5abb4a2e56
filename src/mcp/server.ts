import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { RunHistory, type RunRecord } from '../jobs/run/runHistory.ts';
import { SessionBudget, ToolRefusedError } from './budget.ts';
import type { CallFacts, McpServerContext, McpSession, ToolCall } from './context.ts';
import { exportTool } from './tools/export.ts';
import { describeTool, runsTool, statusTool, usageTool } from './tools/info.ts';
import { planTool } from './tools/plan.ts';
import { previewTool } from './tools/preview.ts';
import { runJobTool } from './tools/runJob.ts';
import type { ToolSpec } from './tools/tool.ts';

/** The tools a server offers: all of them, less those that write in read-only mode. */
export function toolsFor(context: McpServerContext): ToolSpec[] {
  const all = [planTool, previewTool, exportTool(context.registry), runJobTool, statusTool, usageTool, runsTool, describeTool] as unknown as ToolSpec[];
  return context.settings.readOnly ? all.filter((t) => !t.writes) : all;
}

export function newSession(context: McpServerContext): McpSession {
  return { budget: new SessionBudget(context.settings.credits), recentSql: new Map() };
}

/** One MCP server for one session (a stdio process, or one HTTP session): its own budget. */
export function createMcpServer(context: McpServerContext, version: string): McpServer {
  const server = new McpServer(
    { name: 'sluice', version },
    {
      instructions: [
        'sluice runs analytics queries under a credit budget and lands full results in files or tables.',
        'Look before you spend: plan says what a query costs; preview shows a few typed rows and the execution id;',
        'export lands the whole result of that execution in an allowed location and returns only a summary. Never page rows into the conversation.',
      ].join(' '),
    },
  );
  const session = newSession(context);
  for (const tool of toolsFor(context)) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        outputSchema: tool.output,
        annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: tool.writes, idempotentHint: tool.readOnly, openWorldHint: false },
      },
      (async (args: Record<string, unknown>, extra: RequestExtra) => {
        const progress = progressOf(extra);
        const result = await callTool(tool, args, { server: context, session, signal: AbortSignal.any([extra.signal, context.signal]), facts: { credits: 0 }, progress: progress.report });
        // A progress notification sent after the call's result is dropped by the client (its
        // progress handler ends with the result): the notifications go out first.
        await progress.sent();
        return result;
      }) as never,
    );
  }
  return server;
}

/** What the SDK hands a tool handler, as far as the server uses it. */
interface RequestExtra {
  readonly signal: AbortSignal;
  readonly _meta?: { readonly progressToken?: string | number } | undefined;
  sendNotification(notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; total?: number; message?: string } }): Promise<void>;
}

/** Progress notifications at most this often: a client needs to see the call move, not every page. */
const PROGRESS_INTERVAL_MS = 1_000;

function progressOf(extra: RequestExtra): { report: ToolCall['progress']; sent: () => Promise<void> } {
  const token = extra._meta?.progressToken;
  if (token === undefined) return { report: () => undefined, sent: () => Promise.resolve() };
  let last = Number.NEGATIVE_INFINITY;
  let sent = -1;
  let sending: Promise<void> = Promise.resolve();
  const report: ToolCall['progress'] = (done, total, message) => {
    const now = performance.now();
    // Progress must increase with each notification; a lost one is harmless.
    if (done <= sent || now - last < PROGRESS_INTERVAL_MS) return;
    last = now;
    sent = done;
    const notified = extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done, ...(total === undefined ? {} : { total }), message } }).catch(() => undefined);
    sending = sending.then(() => notified);
  };
  return { report, sent: () => sending };
}

/** Runs a tool: its result (secrets scrubbed) or a tool error naming what went wrong; logged and recorded either way. */
async function callTool(tool: ToolSpec, args: Record<string, unknown>, call: ToolCall): Promise<CallToolResult> {
  const { log, secrets } = call.server;
  const startedAt = new Date();
  const began = performance.now();
  try {
    const result = secrets.scrubValue(await tool.run(args as never, call)) as Record<string, unknown>;
    await record(tool.name, call, startedAt, undefined);
    log.info('tool call', { tool: tool.name, outcome: 'succeeded', ms: Math.round(performance.now() - began), ...factFields(call.facts) });
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (error) {
    const text = secrets.scrub(errorText(error));
    await record(tool.name, call, startedAt, { code: codeOf(error), message: secrets.scrub(error instanceof Error ? error.message : String(error)) });
    log.warn('tool call failed', { tool: tool.name, outcome: call.signal.aborted ? 'stopped' : 'failed', error: codeOf(error), ms: Math.round(performance.now() - began), ...factFields(call.facts) });
    return { isError: true, content: [{ type: 'text', text }] };
  }
}

/** `CODE: message`, and for a refusal what the agent needs to decide (the plan, the budget, the allowed places). */
function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const head = `${codeOf(error)}: ${message}`;
  return error instanceof ToolRefusedError && Object.keys(error.details).length > 0 ? `${head}\n${JSON.stringify(error.details)}` : head;
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'UNKNOWN';
}

function factFields(facts: CallFacts): Record<string, unknown> {
  return { credits: facts.credits, ...(facts.executionId === undefined ? {} : { execution_id: facts.executionId }), ...(facts.rows === undefined ? {} : { rows: facts.rows }) };
}

/** Every call goes into the run history with origin "mcp" (an export or run_job through its run's own record). */
async function record(tool: string, call: ToolCall, startedAt: Date, error: { code: string; message: string } | undefined): Promise<void> {
  const facts = call.facts;
  if (facts.recordedByRun) return;
  const entry: RunRecord = {
    version: 1,
    job: `mcp-${tool.replace(/_/g, '-')}`,
    started_at: startedAt.toISOString(),
    ended_at: new Date().toISOString(),
    outcome: error === undefined ? 'succeeded' : call.signal.aborted ? 'stopped' : 'failed',
    ...(error === undefined ? {} : { error }),
    ...(facts.executionId === undefined ? {} : { execution_id: facts.executionId }),
    resumed: false,
    rows: facts.rows ?? 0,
    fetched_rows: facts.rows ?? 0,
    files: facts.files ?? 0,
    bytes: facts.bytes ?? 0,
    credits: facts.credits,
    attempts: 1,
    outputs: [],
    origin: 'mcp',
    tool,
  };
  try {
    await new RunHistory(call.server.stateDir).append(entry);
  } catch (failure) {
    call.server.log.warn('could not append the call to the run history', { tool, error: failure instanceof Error ? failure.message : String(failure) });
  }
}
