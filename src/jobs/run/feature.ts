import type { RecordBatch, Schema } from 'apache-arrow';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import type { ExportMeta, ExportSummary, OpenedExport } from '../../export/writeExport.ts';
import type { Ready } from '../../pipeline/stream.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { OutputSessions } from '../output/outputSession.ts';
import type { JobSplitRule } from '../output/splitRule.ts';
import type { RunResult } from '../backfill/backfillStream.ts';
import type { CursorArgument } from './jobSource.ts';
import type { SourceDecision } from './sourceDecision.ts';
import type { RunEvents, RunTally } from './jobRun.ts';

/**
 * A job feature as a plug-in of the run: contracts and quarantines, schema drift, the incremental
 * cursor, backfills. The run (`JobRun`), the writer (`writeOutputs`), `--plan` and the shard end
 * iterate the list of features (`FEATURES`) at each phase and call the hooks a feature has; a
 * feature keeps its own state for one attempt. Adding a feature is a folder and one line of that
 * list.
 */
export interface JobFeature<S extends object = object> {
  /** Before the source is decided: what the feature reads first (the incremental cursor, from the outputs' commits). */
  prepare?(): Promise<void>;
  /** The value the query receives for the feature's parameter (the cursor), when it sets one. */
  argument?(): CursorArgument | undefined;
  /** Starts the read itself, instead of one execution (a backfill's chunks); undefined: the run starts it. */
  start?(): Promise<FeatureStart | undefined>;
  /** `--plan`'s start, reading only (a backfill's chunks): the decision and what it would cost; undefined: the run's own. */
  planStart?(): Promise<{ readonly decision: SourceDecision; readonly credits: number } | undefined>;
  /** Its lines of `--plan` (merged into the plan). */
  plan?(): object;
  /** Its lines of output `index` in `--plan`. */
  planOutput?(index: number): object;
  /** The error a failed start is reported as (the incremental initial value explained). */
  explain?(error: unknown): unknown;
  /** Before fetching: checks on the execution's metadata, before any page (columns, row count, drift). */
  beforeFetch?(status: ExecutionStatus): Promise<void> | void;
  /** Before the outputs are written: what it reads of its own exports (the quarantines this execution holds). */
  beforeWrite?(executionId: string): Promise<void>;
  /** Output `index` is written again although it holds this execution (its quarantine is not). */
  rewrites?(index: number): boolean;
  /** Output `index` receives fewer rows than the result (rows set aside): no row count to match, in the skip check or the write. */
  drops?(index: number): boolean;
  /** Output `index`'s parts are not a function of row offsets: a killed run's parts are written again. */
  forbidsPartResume?(index: number): boolean;
  /** Watching batches: the one read passes through it, before the outputs' branches. */
  watch?(read: AsyncIterable<RecordBatch>, schema: Schema, startRow: number): AsyncIterable<RecordBatch>;
  /** Whether it changes output `index`'s columns on its branch (such an output is written from the one read, never natively). */
  reshapes?(index: number, schema: Schema): boolean;
  /** Shaping an output: its branch as the output takes it (the rows it keeps, its columns). */
  shape?(branch: Branch): Branch;
  /** What output `index`'s commit records beside its rows (a key set to undefined drops it, the row count to check). */
  commitMeta?(index: number): Partial<ExportMeta>;
  /** It has exports to write beside the outputs this run, even when every output is committed already. */
  writesBeside?(): boolean;
  /** Exports it writes beside the outputs from the one read (quarantines): undefined when none this run. */
  openBeside?(write: BesideRun): Promise<BesideWrites | undefined>;
  /** After commit: the outputs written now, by output index. */
  afterCommit?(written: ReadonlyMap<number, ExportSummary>): void;
  /** Its part of the run's summary. */
  summary?(): S;
}

/** One output's branch of the one read. */
export interface Branch {
  readonly index: number;
  readonly schema: Schema;
  readonly batches: AsyncIterable<RecordBatch>;
  /** The result's row the branch starts at. */
  readonly startRow: number;
}

/** A read a feature started (see `JobFeature.start`). */
export interface FeatureStart {
  readonly decision: SourceDecision;
  readonly result: RunResult;
  readonly ready: Ready;
}

/** What opening the exports beside the outputs is given. */
export interface BesideRun {
  readonly executionId: string;
  /** The outputs this run writes. */
  readonly pending: readonly number[];
  readonly signal: AbortSignal;
  /** The caller's stop: finished parts survive it. */
  readonly stop: AbortSignal;
}

/** Exports opened beside the outputs. */
export interface BesideWrites {
  /** Discarded when the write never starts. */
  readonly opened: readonly OpenedExport[];
  /** It needs the one read even when no output reads it (then the writer drains it). */
  readonly needsRead: boolean;
  /** Starts the writes; settles when they are written (a failure goes to `failed`). */
  start(input: { readonly schema: Schema; readonly meta: ExportMeta; readonly signal: AbortSignal; readonly failed: (error: unknown) => never; readonly drainRead: (() => AsyncIterable<RecordBatch>) | undefined }): Promise<void>;
}

/** What a feature is created with for one attempt of a run. */
export interface FeatureRun {
  readonly job: Job;
  readonly outputs: OutputSessions;
  readonly client: ServiceClient;
  readonly signal: AbortSignal;
  readonly tally: RunTally;
  readonly events: RunEvents | undefined;
  /** `--fresh` is not set. */
  readonly resume: boolean;
  readonly executionId: string | undefined;
  readonly stateDir: string;
}

/** A feature in the list: its part of the split rule, and the plug-in it makes for a run of a job that uses it. */
export interface JobFeatureKind<S extends object = object> {
  readonly name: string;
  /** Why it cannot be split into parts read by row ranges or over shards (see the split rule). */
  readonly split: readonly JobSplitRule[];
  /** The plug-in for one attempt (undefined: the job does not use the feature). */
  create(run: FeatureRun): JobFeature<S> | undefined;
}
