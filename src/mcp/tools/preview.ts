import { z } from 'zod';
import { stream } from '../../pipeline/stream.ts';
import { DEFAULT_PREVIEW_ROWS, MAX_PREVIEW_ROWS, type ToolCall } from '../context.ts';
import { runCharged, type StartedPlan } from '../ownedExecution.ts';
import { planSource, planView, rememberSql, SOURCE_ARGS } from '../source.ts';
import { type Clipped, jsonRow, type JsonValue, MAX_TEXT_CHARS } from '../values.ts';
import { BudgetShape, ColumnShape, PlanShape } from './shapes.ts';
import { defineTool } from './tool.ts';

/** The JSON text a preview's rows may take (about 16,000 tokens): wide rows give fewer rows than asked. */
export const MAX_PREVIEW_CHARS = 64 * 1024;

export const previewTool = defineTool({
  name: 'preview',
  title: 'Preview a result',
  description: [
    `Runs SQL or a saved query (or reads an existing execution) and returns its columns with their types and its first rows (${DEFAULT_PREVIEW_ROWS} by default, at most ${MAX_PREVIEW_ROWS}), plus the execution id.`,
    'Land the full result with export and that execution id: it costs nothing more. Executing costs credits (see plan); max_age_hours reuses a stored result instead.',
    'Values JSON cannot hold exactly travel as text, read by the column type: bigint and int256 as digit strings, decimal as exact text, timestamps as ISO 8601, binary as 0x hex, NaN and Infinity as strings.',
  ].join(' '),
  input: {
    ...SOURCE_ARGS,
    limit: z.int().min(0).max(MAX_PREVIEW_ROWS).optional().describe(`Rows to return (default ${DEFAULT_PREVIEW_ROWS}, at most ${MAX_PREVIEW_ROWS})`),
  },
  output: {
    execution_id: z.string(),
    reused: z.boolean().describe('A stored result was read: nothing was executed'),
    columns: z.array(ColumnShape),
    rows: z.array(z.record(z.string(), z.unknown())).describe('The first rows, keyed by column name'),
    total_rows: z.number().describe('Rows in the whole result'),
    truncated: z.boolean().describe('The result has more rows than returned'),
    size_limited: z.boolean().describe(`Fewer rows than asked for: the rows' JSON would have passed ${MAX_PREVIEW_CHARS} characters`),
    clipped_values: z.number().describe(`Text values longer than ${MAX_TEXT_CHARS} characters, cut and marked "[clipped: N more characters]" (an export has them whole)`),
    credits: z.number().describe('Credits this call spent'),
    plan: PlanShape,
    budget: BudgetShape,
  },
  writes: false,
  readOnly: false,
  async run(args, call) {
    const plan = await planSource(args, call);
    const settle = call.session.budget.reserve(plan.credits, planView(plan));
    const read = await runCharged(plan, call, settle, (started) => firstRows(started, args.limit ?? DEFAULT_PREVIEW_ROWS, call));
    if (read.started) rememberSql(args, read.executionId, call);
    return {
      execution_id: read.executionId,
      reused: !read.started,
      columns: read.columns,
      rows: read.rows,
      total_rows: read.totalRows,
      truncated: read.totalRows > read.rows.length,
      size_limited: read.sizeLimited,
      clipped_values: read.clippedValues,
      credits: call.facts.credits,
      plan: planView(plan),
      budget: call.session.budget.view(),
    };
  },
});

export interface FirstRows {
  readonly executionId: string;
  readonly started: boolean;
  readonly credits: number;
  readonly columns: { name: string; type: string }[];
  readonly rows: Record<string, JsonValue>[];
  readonly totalRows: number;
  /** Text values cut to MAX_TEXT_CHARS. */
  readonly clippedValues: number;
  /** Fewer rows than asked for: more would have passed MAX_PREVIEW_CHARS. */
  readonly sizeLimited: boolean;
}

/**
 * Executes (or finds) the plan's source and reads its first `limit` rows: one page of that many
 * rows, nothing more fetched. Also the way `describe` reads a table's columns (`limit` 0).
 */
export async function firstRows({ plan, owned }: StartedPlan, limit: number, call: ToolCall): Promise<FirstRows> {
  const result = stream(call.server.client, plan.stream, {
    signal: call.signal,
    // A call the client cancels (or a server stopping) cancels the execution it started, never one it only reads.
    cancelOnAbort: owned,
    concurrency: 1,
    prefetch: 0,
    wire: 'json',
    // One page of `limit` rows and no more; none for the columns alone.
    ...(limit > 0 ? { pageSize: limit, endOffset: limit } : {}),
    onExecution: (id) => {
      call.facts.executionId = id;
    },
  });
  const ready = await result.ready();
  const credits = ready.started ? (ready.status.execution_cost_credits ?? plan.credits) : 0;
  call.facts.credits = credits;
  const base = { executionId: ready.executionId, started: ready.started, credits };
  if (limit === 0) {
    // The columns only: the status names them, no page is read.
    const meta = ready.status.result_metadata;
    const columns = (meta?.column_names ?? []).map((name, i) => ({ name, type: meta?.column_types[i] ?? 'unknown' }));
    call.facts.rows = 0;
    return { ...base, columns, rows: [], totalRows: meta?.total_row_count ?? 0, clippedValues: 0, sizeLimited: false };
  }
  const info = await result.info();
  const rows: Record<string, JsonValue>[] = [];
  const clipped: Clipped = { count: 0 };
  let size = 0;
  let sizeLimited = false;
  for await (const row of result.rows()) {
    const rowClipped: Clipped = { count: 0 };
    const json = jsonRow(row, info.columns, rowClipped);
    size += JSON.stringify(json).length;
    // Wide rows: the first always, then only while the rows stay within the size a preview may take.
    if (rows.length > 0 && size > MAX_PREVIEW_CHARS) {
      sizeLimited = true;
      break;
    }
    rows.push(json);
    clipped.count += rowClipped.count;
    if (rows.length >= limit) break;
  }
  call.facts.rows = rows.length;
  return { ...base, columns: info.columns.map((c) => ({ name: c.name, type: c.type })), rows, totalRows: info.totalRows, clippedValues: clipped.count, sizeLimited };
}
