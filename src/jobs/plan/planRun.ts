import { decodePlan, mayBeNative, type DecodePlan } from '../run/nativeOutputs.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import { commitTarget } from '../../export/commitFor.ts';
import type { CatalogTarget } from '../../export/iceberg/catalog/catalogConfig.ts';
import type { SplitBlock } from '../../export/splitRule.ts';
import type { DriftPolicy } from '../../config/notifySchema.ts';
import type { BackfillPlan } from '../backfill/backfillPlan.ts';
import { createFeatures } from '../features.ts';
import type { JobFeature } from '../run/feature.ts';
import { creditsAllowed, executionCost } from '../run/budget.ts';
import { type OutputSession, OutputSessions } from '../output/outputSession.ts';
import { whyNotSharded, whyOneRead } from '../output/splitRule.ts';
import type { ContractCheckPlan } from '../contracts/contractPlan.ts';
import { jobRunState, RunStateStore } from '../run/runState.ts';
import { partsPerShard, rowsPerPart } from '../shards/plan.ts';
import { decideSource, type SourceDecision } from '../run/sourceDecision.ts';
import { servedWire, type ServedWire } from './servedWire.ts';

/** What a run of one job would do, found by reading only: nothing is executed, nothing written. */
export interface JobPlan {
  readonly job: string;
  /** execute: a new execution (charged); reuse: a stored result of a saved query; resume: an interrupted run's execution. */
  readonly action: 'execute' | 'reuse' | 'resume';
  /**
   * Credits the run would record: a new execution's (0 to reuse), or, to resume, the interrupted
   * run's execution's when no run's history holds them yet (that run was killed, or stopped before its cost was known).
   */
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
  /** A job with `expect` (its own or an output's): what the run would check, when, and what a violation does. */
  readonly contract?: readonly ContractCheckPlan[];
  /** A backfill: its chunks, what a run executes and what a killed run's chunks spare it. */
  readonly backfill?: BackfillPlan;
  /** The split rule, as the run and the shard check read it: why every output is written from the one read (undefined: an output may read its own parts, natively), and why the job cannot run sharded (empty: it can). */
  readonly split: { readonly oneRead: string | undefined; readonly notSharded: readonly SplitBlock[] };
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
  /** Its `schema_drift` policy (its own, else the job's), when the job sets one anywhere. */
  readonly schemaDrift?: DriftPolicy | undefined;
  /** The decode path its rows would take: native (DuckDB writes from the service's CSV pages) or general, and why (what the service answered, when it could be asked). */
  readonly decode: DecodePlan;
}

export interface PlanRunOptions {
  readonly client: ServiceClient;
  readonly stateDir: string;
  readonly signal: AbortSignal;
  /** `--fresh`: never resume. */
  readonly resume: boolean;
  readonly shards?: number;
  /** `--execution`: the run would read this one. */
  readonly executionId?: string;
  /** The client talks to the embedded service (which serves Arrow pages): said when no result can be asked yet. */
  readonly embedded?: boolean;
}

/**
 * `sluice run --plan`: the phases of a run (see `JobRun`) up to where it would start an execution,
 * reading only, and their report: whether the run would execute (and what that costs), reuse a
 * stored result or resume an interrupted run's execution, the result's size when it exists, and
 * what each output would get. It asks what the run asks, the same way: the outputs' commits,
 * the run state (left as it is), the service's latest stored result (a page of one row, which starts
 * nothing) and execution statuses.
 */
export async function planRun(job: Job, options: PlanRunOptions): Promise<JobPlan> {
  const sessions = new OutputSessions(job);
  try {
    return await plan(job, options, sessions);
  } finally {
    await sessions.close();
  }
}

async function plan(job: Job, options: PlanRunOptions, sessions: OutputSessions): Promise<JobPlan> {
  const { client, signal } = options;
  const shards = options.shards ?? 1;
  // The run's features, reading only: what they read first (the cursor), a start of their own (a backfill's chunks), their lines.
  const features = createFeatures({
    job,
    outputs: sessions,
    client,
    signal,
    tally: { startedAt: new Date(), began: performance.now(), credits: 0, attempts: 0 },
    events: undefined,
    resume: options.resume,
    executionId: options.executionId,
    stateDir: options.stateDir,
  });
  for (const feature of features) await feature.prepare?.();
  // A sharded run never resumes: shard 0 starts or reuses its execution afresh.
  const state = options.resume && shards === 1 ? jobRunState(new RunStateStore(options.stateDir), job) : undefined;
  let started: { decision: SourceDecision; credits: number } | undefined;
  for (const feature of features) started ??= await feature.planStart?.();
  const argument = features.map((f) => f.argument?.()).find((a) => a !== undefined);
  const decision = started?.decision ?? (await decideSource(job, { client, signal, executionId: options.executionId, state, readOnly: true }, argument));
  const spent = started?.credits ?? (decision.action === 'execute' ? executionCost(job) : 0);
  // An interrupted run's execution resumed that no run has counted yet: this run counts its cost.
  const carried = started === undefined && decision.action === 'resume' && decision.resume?.uncounted === true ? executionCost(job) : 0;
  const credits = spent + carried;
  // Asked only where an output's path depends on what the service serves (the job's outputs may take the native path).
  const asks = (job.wire ?? 'auto') === 'auto' && sessions.all.some((s) => mayBeNative(job, s.output));
  const served: ServedWire = asks ? await servedWire(job, decision, { client, signal, embedded: options.embedded }) : { unknown: 'not needed' };
  const outputs: OutputPlan[] = [];
  for (const session of sessions.all) outputs.push(await planOutput(job, session, { decision, shards, features, served }, signal));
  const maxCredits = job.budget?.max_credits;
  return {
    job: job.name,
    action: decision.action,
    credits,
    executionId: decision.executionId,
    reason: decision.reason,
    rows: decision.rows,
    bytes: decision.bytes,
    budget: { maxCredits, withinBudget: creditsAllowed(job, 0, spent) },
    shards,
    outputs,
    ...Object.assign({}, ...features.map((f) => f.plan?.() ?? {})),
    split: { oneRead: whyOneRead(job), notSharded: whyNotSharded(job, sessions.all.map((s) => s.traits)) },
  };
}

/**
 * What one output would get: skipped where the run would skip it (the execution exists and the
 * output's commit holds it, written the same way: the session's `find`, the run's own rule; a
 * sharded run always writes), else its parts when the row count is known and parts roll by rows.
 */
async function planOutput(
  job: Job,
  session: OutputSession,
  run: { decision: SourceDecision; shards: number; features: readonly JobFeature[]; served: ServedWire },
  signal: AbortSignal,
): Promise<OutputPlan> {
  const { decision, shards, features } = run;
  const { url, index } = session;
  const output = job.outputs[index]!;
  const committed = await session.committed(signal).catch(() => undefined);
  const rows = job.result?.filters === undefined ? decision.rows : undefined;
  // An output a feature leaves fewer rows than the result (a contract sets rows aside): no count to match, as in a run.
  const held = features.some((f) => f.drops?.(index) === true) ? undefined : rows;
  const skip = shards === 1 && decision.executionId !== undefined && (await session.find(decision.executionId, held, signal)) !== undefined;
  const perPart = rowsPerPart(output, rows, shards);
  const parts = rows === undefined || perPart === undefined ? undefined : Math.max(1, Math.ceil(rows / perPart));
  return {
    url,
    format: output.format.type,
    action: skip ? 'skip' : 'write',
    parts,
    rowsPerPart: perPart,
    partsPerShard: parts === undefined || shards === 1 ? undefined : partsPerShard(parts, shards),
    committedExecution: committed?.executionId,
    commitsTo: commitTarget(output, url),
    ...Object.assign({}, ...features.map((f) => f.planOutput?.(index) ?? {})),
    decode: decodePlan(job, output, run.served),
  };
}
