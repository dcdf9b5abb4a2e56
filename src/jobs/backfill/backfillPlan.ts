import type { ServiceClient } from '../../client/service-client.ts';
import type { Job } from '../../config/jobSchema.ts';
import { type ExecutionStatus, isTerminal } from '../../protocol/index.ts';
import { DEFAULT_CONCURRENCY } from './backfillChunks.ts';
import { chunksOf, halves, pointText, type RangeAxis, type Span } from '../../config/backfillRange.ts';
import { backfillAxis } from '../../config/backfillSchema.ts';
import { BackfillState } from './backfillState.ts';
import { executionCost } from '../run/budget.ts';
import type { SourceDecision } from '../run/sourceDecision.ts';

/** One chunk as a run would take it: executed, read as a killed run left it (skipped), or waited for while it still runs. */
export interface ChunkPlan {
  readonly from: string;
  readonly to: string;
  readonly action: 'execute' | 'read' | 'wait';
  /** The killed run's execution, for read and wait. */
  readonly executionId?: string;
  readonly rows?: number;
}

export interface BackfillPlan {
  readonly chunk: string | number;
  readonly concurrency: number;
  /** In range order; a chunk a killed run halved is listed as its halves. */
  readonly chunks: readonly ChunkPlan[];
  /** Chunks a resumed run executes, and their credits at the job's tier (a chunk that comes back truncated costs its halves more). */
  readonly execute: number;
  readonly credits: number;
  /** Chunks a killed run executed already: read or waited for, not executed or paid again. */
  readonly skip: number;
}

/**
 * `--plan` of a backfill: its chunks and what a run would do with each, from the chunk records a
 * killed run left (read, never changed) and their executions' statuses.
 */
export async function planBackfill(job: Job, options: { client: ServiceClient; signal: AbortSignal; stateDir: string; resume: boolean }): Promise<{ plan: BackfillPlan; decision: SourceDecision }> {
  const axis = backfillAxis(job.backfill!)!;
  const { state, resumed } = await BackfillState.open(options.stateDir, job, { resume: options.resume, readOnly: true });
  const chunks: ChunkPlan[] = [];
  const status = (id: string) => options.client.getStatus(id, { signal: options.signal }).catch(() => undefined);
  for (const span of chunksOf(axis)) chunks.push(...(await planSpan(axis, span, state, status)));
  const execute = chunks.filter((c) => c.action === 'execute').length;
  const credits = execute * executionCost(job);
  const plan: BackfillPlan = { chunk: job.backfill!.chunk, concurrency: job.backfill!.concurrency ?? DEFAULT_CONCURRENCY, chunks, execute, credits, skip: chunks.length - execute };
  const decision: SourceDecision = {
    action: resumed && plan.skip > 0 ? 'resume' : 'execute',
    source: { executionId: state.id },
    reason: `a backfill of ${chunks.length} chunks of ${job.backfill!.chunk}, ${plan.concurrency} at once: ${execute} to execute${plan.skip > 0 ? `, ${plan.skip} a killed run executed (not executed again)` : ''}`,
    executionId: resumed ? state.id : undefined,
    rows: undefined,
    bytes: undefined,
    resume: undefined,
  };
  return { plan, decision };
}

async function planSpan(axis: RangeAxis, span: Span, state: BackfillState, status: (id: string) => Promise<ExecutionStatus | undefined>): Promise<ChunkPlan[]> {
  const from = pointText(axis.kind, span.from);
  const to = pointText(axis.kind, span.to);
  const record = state.find(from, to);
  const parts = halves(span, axis.floor);
  if (record?.state === 'split' && parts !== undefined) return [...(await planSpan(axis, parts[0], state, status)), ...(await planSpan(axis, parts[1], state, status))];
  const found = record === undefined ? undefined : await status(record.execution_id);
  if (record !== undefined && found?.state === 'QUERY_STATE_COMPLETED') return [{ from, to, action: 'read', executionId: record.execution_id, rows: found.result_metadata?.total_row_count ?? 0 }];
  if (record !== undefined && found !== undefined && !isTerminal(found.state)) return [{ from, to, action: 'wait', executionId: record.execution_id }];
  return [{ from, to, action: 'execute' }];
}
