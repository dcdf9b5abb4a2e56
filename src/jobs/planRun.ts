import { NotFoundError } from '../client/errors.ts';
import type { ServiceClient } from '../client/service-client.ts';
import type { Job } from '../config/jobSchema.ts';
import { MESSAGES, holdsResult, type ParameterValue, type ResultPage } from '../protocol/index.ts';
import { jobSource } from './jobSource.ts';
import { planCursor } from './incremental.ts';
import { readCommits } from './runJob.ts';
import { commitFor, commitTarget } from '../export/commitFor.ts';
import type { CatalogTarget } from '../export/iceberg/catalog/catalogConfig.ts';
import { TIER_COST } from './budget.ts';
import { outputFingerprint } from './committedOutput.ts';
import { jobFingerprint, outputsFingerprint, RunStateStore } from './runState.ts';
import { openDestination } from '../export/storage/openDestination.ts';

/** What a run of one job would do, found by reading only: nothing is executed, nothing written. */
export interface JobPlan {
  readonly job: string;
  /** execute: a new execution (charged); reuse: a stored result of a saved query; resume: an interrupted run's execution. */
  readonly action: 'execute' | 'reuse' | 'resume';
  /** Credits the run would spend (0 to reuse or resume). */
  readonly credits: number;
  /** The execution it would read, when it is one that exists. */
  readonly executionId: string | undefined;
  /** Why this action: the source kind, the stored result's age, the interrupted run. */
  readonly reason: string;
  /** Rows and bytes of the result, when it exists already. */
  readonly rows: number | undefined;
  readonly bytes: number | undefined;
  readonly budget: { readonly maxCredits: number | undefined; readonly withinBudget: boolean };
  readonly shards: number;
  readonly outputs: readonly OutputPlan[];
  /** An incremental job: the cursor value the run's query would receive, and the committed one it comes from. */
  readonly cursor?: CursorPreview;
}

export interface CursorPreview {
  readonly column: string;
  /** The committed value (the lowest over the outputs); null while an output holds none. */
  readonly from: string | null;
  /** What the query receives: `from` less the lookback, or the initial value. */
  readonly value: string | number;
  readonly lookback?: string | number;
}

export interface OutputPlan {
  readonly url: string;
  readonly format: string;
  /** skip: the output holds this execution already, written the same way. */
  readonly action: 'write' | 'skip';
  /** Part files, when the row count is known and parts roll by rows (undefined otherwise). */
  readonly parts: number | undefined;
  readonly rowsPerPart: number | undefined;
  /** Parts per shard (shard i writes a contiguous range), when sharded and the count is known. */
  readonly partsPerShard: readonly number[] | undefined;
  /** The execution the output's committed export holds now (undefined: none). */
  readonly committedExecution: string | undefined;
  /** A table output: the catalog and table it commits to (`commitTarget`). */
  readonly commitsTo?: CatalogTarget | undefined;
}

export interface PlanRunOptions {
  readonly client: ServiceClient;
  readonly stateDir: string;
  readonly signal: AbortSignal;
  /** `--fresh`: never resume. */
  readonly resume: boolean;
  readonly shards?: number;
}

/**
 * `sluice run --plan`: per job, whether a run would execute (and what that costs), reuse a stored
 * result or resume an interrupted run's execution, the result's size when it exists, and what each
 * output would get. Reads only: the service's latest stored result (a page of one row, which starts
 * nothing) and execution statuses, the run state, the outputs' manifests.
 */
export async function planRun(job: Job, options: PlanRunOptions): Promise<JobPlan> {
  const { client, signal } = options;
  const tier = job.performance ?? 'medium';
  const cost = TIER_COST[tier];
  let action: JobPlan['action'] = 'execute';
  let reason: string;
  let executionId: string | undefined;
  let rows: number | undefined;
  let bytes: number | undefined;
  const source = job.source;
  if ('sql' in source) reason = `SQL runs anew on every run (${tier} tier)`;
  else if ('query_id' in source) reason = `saved query ${source.query_id} runs anew (query_id always executes; latest reuses a stored result)`;
  else if ('view_refresh' in source) reason = `refreshing view ${source.view_refresh.name} runs its query`;
  else {
    const { query_id, max_age_hours } = source.latest;
    const streamSource = jobSource(job);
    const page = await latestPage(client, query_id, 'queryId' in streamSource ? streamSource.parameters : undefined, signal);
    if (page === undefined) reason = `saved query ${query_id} has no stored result for these parameters`;
    else if (!holdsResult(page)) reason = `the latest result of saved query ${query_id} (execution ${page.execution_id}) is ${page.state}`;
    else {
      const ended = page.execution_ended_at === undefined ? NaN : Date.parse(page.execution_ended_at);
      const ageHours = (Date.now() - ended) / 3_600_000;
      if (max_age_hours !== undefined && !(ageHours <= max_age_hours)) {
        reason = `the latest result of saved query ${query_id} ended ${ageHours.toFixed(1)} h ago, older than max_age_hours ${max_age_hours}`;
      } else {
        action = 'reuse';
        executionId = page.execution_id;
        reason = `the latest result of saved query ${query_id} (ended ${page.execution_ended_at ?? 'at an unknown time'}) is fresh enough`;
        rows = page.result?.metadata.total_row_count;
        bytes = page.result?.metadata.total_result_set_bytes;
      }
    }
  }

  // An interrupted run of the same job resumes its execution (read-only here: the state is not touched).
  if (options.resume) {
    const state = await new RunStateStore(options.stateDir).read(job.name).catch(() => undefined);
    if (state !== undefined && state.fingerprint === jobFingerprint(job) && state.outputs === outputsFingerprint(job)) {
      const status = await client.getStatus(state.execution_id, { signal }).catch(() => undefined);
      if (status !== undefined && holdsResult(status)) {
        action = 'resume';
        executionId = state.execution_id;
        reason = `an interrupted run (started ${state.started_at}) left execution ${state.execution_id}, which can still be read`;
        rows = status.result_metadata?.total_row_count;
        bytes = status.result_metadata?.total_result_set_bytes;
      }
    }
  }
  const credits = action === 'execute' ? cost : 0;
  const shards = options.shards ?? 1;
  const outputs: OutputPlan[] = [];
  for (const output of job.outputs) {
    const destination = openDestination(output);
    try {
      const committed = destination.multiFile ? await commitFor(output).read(destination, signal).catch(() => undefined) : undefined;
      const skip = committed !== undefined && executionId !== undefined && committed.executionId === executionId && committed.fingerprint === outputFingerprint(job, output);
      const byRows = output.partitionBy.length === 0 && !Number.isFinite(output.maxBytesPerFile);
      const rowsPerPart = !byRows ? undefined : Number.isFinite(output.maxRowsPerFile) ? output.maxRowsPerFile : rows === undefined ? undefined : Math.max(1, Math.ceil(rows / shards));
      const parts = rows === undefined || rowsPerPart === undefined ? undefined : Math.max(1, Math.ceil(rows / rowsPerPart));
      outputs.push({
        url: destination.url,
        format: output.format.type,
        action: skip ? 'skip' : 'write',
        parts,
        rowsPerPart,
        partsPerShard: parts === undefined || shards === 1 ? undefined : Array.from({ length: shards }, (_, s) => Math.floor(((s + 1) * parts) / shards) - Math.floor((s * parts) / shards)),
        committedExecution: committed?.executionId,
        commitsTo: commitTarget(output, destination.url),
      });
    } finally {
      await destination.close();
    }
  }
  const maxCredits = job.budget?.max_credits;
  const cursor = job.incremental === undefined ? undefined : await cursorPreview(job, signal, client);
  return { job: job.name, action, credits, executionId, reason, rows, bytes, budget: { maxCredits, withinBudget: maxCredits === undefined || credits <= maxCredits }, shards, outputs, ...(cursor === undefined ? {} : { cursor }) };
}

/** The cursor a run would start from, planned as the run plans it (from the outputs' commits). */
async function cursorPreview(job: Job, signal: AbortSignal, client: ServiceClient): Promise<CursorPreview> {
  const plan = await planCursor(job, await readCommits(job, signal), client, signal);
  const lookback = plan.from === null ? undefined : plan.incremental.lookback;
  return { column: plan.incremental.cursor, from: plan.from, value: plan.argument.value, ...(lookback === undefined ? {} : { lookback }) };
}

async function latestPage(client: ServiceClient, queryId: number, parameters: Record<string, ParameterValue> | undefined, signal: AbortSignal): Promise<ResultPage | undefined> {
  try {
    return await client.getLatestResultPage(queryId, { ...(parameters ? { parameters } : {}), limit: 1, allowPartialResults: true, signal });
  } catch (error) {
    if (error instanceof NotFoundError && error.serverMessage === MESSAGES.noLatestResult) return undefined;
    throw error;
  }
}
