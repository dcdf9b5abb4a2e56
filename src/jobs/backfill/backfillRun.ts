import type { ServiceClient } from '../../client/service-client.ts';
import type { Job } from '../../config/jobSchema.ts';
import type { Progress } from '../../pipeline/progress.ts';
import type { Ready } from '../../pipeline/stream.ts';
import { type ChunkEvents, type ChunkTally, type ReadyChunk, runChunks } from './backfillChunks.ts';
import { chunksOf, type RangeAxis, spanText } from '../../config/backfillRange.ts';
import { backfillAxis } from '../../config/backfillSchema.ts';
import { BackfillState } from './backfillState.ts';
import { backfillStatus, BackfillStream } from './backfillStream.ts';
import { creditsAllowed, executionCost } from '../run/budget.ts';
import { ConfigError } from '../../errors.ts';
import { BudgetExceededError } from '../errors.ts';
import { sourceInfo } from '../run/jobSource.ts';
import type { SourceDecision } from '../run/sourceDecision.ts';

/** How a backfill went, in the run's summary. */
export interface BackfillSummary {
  /** Chunks read (after splits), in range order. */
  readonly chunks: number;
  /** Executions this run started (halved chunks' included). */
  readonly executed: number;
  /** Executions a killed run had started, read or waited for instead of executed again. */
  readonly reused: number;
  /** Chunks halved because their result came back truncated or their execution timed out. */
  readonly splits: number;
}

export interface BackfillStart {
  readonly decision: SourceDecision;
  readonly result: BackfillStream;
  readonly ready: Ready;
  readonly summary: BackfillSummary;
}

export interface StartBackfillOptions {
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  readonly stateDir: string;
  /** Pick up a killed run's chunks (false: `--fresh`). */
  readonly resume: boolean;
  /** `--execution`: refused, a backfill reads one execution per chunk. */
  readonly executionId?: string | undefined;
  readonly events?: ChunkEvents | undefined;
  readonly onCredits: (credits: number) => void;
  readonly onProgress?: (p: Progress) => void;
}

/**
 * The start phase of a backfill run: every chunk executed (or found from a killed run) until its
 * result can be read, then one stream over them for the write phase, which commits them once.
 */
export async function startBackfill(job: Job, options: StartBackfillOptions): Promise<BackfillStart> {
  const axis = backfillAxis(job.backfill!)!;
  if (options.executionId !== undefined) {
    throw new ConfigError(`job ${job.name}: --execution ${options.executionId} reads one execution, and a backfill reads one per chunk: run it without --execution (a killed backfill resumes by itself)`);
  }
  await checkSavedQuery(job, options.client, options.signal);
  const { state, resumed } = await BackfillState.open(options.stateDir, job, { resume: options.resume });
  const spans = chunksOf(axis);
  checkBudget(job, axis, spans.length - state.chunks.filter((c) => c.state === 'done').length);
  const { chunks, tally } = await runChunks(job, axis, spans, { client: options.client, signal: options.signal, state, events: options.events, onCredits: options.onCredits });
  checkColumns(job, axis, chunks);
  const result = new BackfillStream(options.client, job, state.id, chunks, { signal: options.signal, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  const info = { status: backfillStatus(state.id, chunks) };
  const ready: Ready = { executionId: state.id, started: tally.executed > 0, status: info.status };
  const reason = resumed
    ? `a backfill of ${spans.length} chunks, resumed: ${tally.reused} executions of the killed run read again, ${tally.executed} executed`
    : `a backfill of ${spans.length} chunks ${spanText(axis.kind, axis)}, ${tally.executed} executions`;
  const decision: SourceDecision = {
    action: resumed ? 'resume' : 'execute',
    source: { executionId: state.id },
    reason,
    executionId: state.id,
    rows: result.totalRows,
    bytes: info.status.result_metadata?.total_result_set_bytes,
    resume: undefined,
  };
  return { decision, result, ready, summary: summaryOf(chunks, tally) };
}

function summaryOf(chunks: readonly ReadyChunk[], tally: ChunkTally): BackfillSummary {
  return { chunks: chunks.length, executed: tally.executed, reused: tally.reused, splits: tally.splits };
}

/** `budget.max_credits` against the chunks still to execute (each at the job's tier), before any starts. */
function checkBudget(job: Job, axis: RangeAxis, toExecute: number): void {
  const cost = Math.max(0, toExecute) * executionCost(job);
  if (!creditsAllowed(job, 0, cost)) {
    throw new BudgetExceededError(job.name, 'max_credits', `the backfill ${spanText(axis.kind, axis)} needs ${toExecute} executions, ${cost} credits, over budget.max_credits ${job.budget?.max_credits}: raise it, or take larger chunks`);
  }
}

/** Every chunk's result has the first one's columns and types: one output cannot hold two shapes. */
function checkColumns(job: Job, axis: RangeAxis, chunks: readonly ReadyChunk[]): void {
  const first = chunks[0]!.status.result_metadata;
  const shape = (c: ReadyChunk) => JSON.stringify([c.status.result_metadata?.column_names, c.status.result_metadata?.column_types]);
  const other = chunks.find((c) => shape(c) !== shape(chunks[0]!));
  if (other === undefined) return;
  const meta = other.status.result_metadata;
  throw new ConfigError(`job ${job.name}: backfill chunk ${spanText(axis.kind, other.span)}: its result has other columns (${describe(meta)}) than the first chunk's (${describe(first)}): cast the columns in the query so every range gives the same types`);
}

function describe(meta: { column_names: string[]; column_types: string[] } | undefined): string {
  return (meta?.column_names ?? []).map((n, i) => `${n} ${meta!.column_types[i]}`).join(', ');
}

/** A saved query must declare both parameters the chunks' bounds go into (a SQL source's placeholders are checked at load). */
async function checkSavedQuery(job: Job, client: ServiceClient, signal: AbortSignal): Promise<void> {
  const info = sourceInfo(job);
  if (info.kind !== 'query') return;
  const declared = ((await client.getQuery(info.queryId!, { signal })).parameters ?? []).map((p) => p.key);
  for (const bound of ['from', 'to'] as const) {
    const name = job.backfill!.parameters[bound];
    if (!declared.includes(name)) {
      throw new ConfigError(`job ${job.name}: backfill.parameters.${bound} "${name}": saved query ${info.queryId} has no such parameter (it has ${declared.length === 0 ? 'none' : declared.join(', ')})`);
    }
  }
}
