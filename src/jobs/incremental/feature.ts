import type { ExportMeta, ExportSummary } from '../../export/writeExport.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { Branch, FeatureRun, JobFeature, JobFeatureKind } from '../run/feature.ts';
import type { CursorArgument } from '../run/jobSource.ts';
import type { CursorPreview } from '../plan/planRun.ts';
import { compareCursor, type CursorKind } from './cursor.ts';
import { checkResultColumns, type CursorPlan, explainInitial, OutputCursor, planCursor, serviceType } from './incremental.ts';

/**
 * The incremental cursor as a plug-in of the run: planned from the outputs' commits before the
 * source is decided (the query receives its value), checked against the result's columns before
 * any page, then each output drops the rows its commit holds and tracks the new mark, committed
 * with its rows.
 */
/** What an incremental run adds to the summary. */
export interface IncrementalSummary {
  /** Incremental jobs: the committed cursor value the run started after (null: none yet), and the one committed now. */
  readonly cursor?: { readonly from: string | null; readonly to: string | null };
}

export const incrementalFeature: JobFeatureKind<IncrementalSummary> = {
  name: 'incremental',
  split: [
    {
      field: 'incremental',
      parts: 'each drops the rows it holds already, from the one read',
      shards: 'a sharded run replaces its outputs with one result: run incremental jobs without shards',
      found: (job) => (job.incremental === undefined ? [] : [{ path: 'incremental', value: job.incremental.cursor }]),
    },
  ],
  create: (run) => (run.job.incremental === undefined ? undefined : new IncrementalRun(run)),
};

class IncrementalRun implements JobFeature<IncrementalSummary> {
  readonly #run: FeatureRun;
  #plan: CursorPlan | undefined;
  #kind: CursorKind | undefined;
  readonly #cursors = new Map<number, OutputCursor>();
  /** Per output, the cursor its commit holds after this run (undefined until known). */
  #values: (string | undefined)[] = [];

  constructor(run: FeatureRun) {
    this.#run = run;
  }

  get #planned(): CursorPlan {
    if (this.#plan === undefined) throw new Error('incremental: the cursor is asked for before it was planned');
    return this.#plan;
  }

  async prepare(): Promise<void> {
    const { job, outputs, client, signal, tally } = this.#run;
    this.#plan = await planCursor(job, await outputs.committed(signal), client, signal);
    tally.cursorFrom = this.#plan.from;
    this.#values = this.#plan.committed.map((c) => c?.value);
  }

  argument(): CursorArgument {
    return this.#planned.argument;
  }

  explain(error: unknown): unknown {
    return explainInitial(this.#planned, error);
  }

  beforeFetch(status: ExecutionStatus): void {
    const metadata = status.result_metadata;
    this.#kind = checkResultColumns(this.#planned, metadata?.column_names ?? [], metadata?.column_types ?? []);
  }

  forbidsPartResume(): boolean {
    // Each output drops the rows it holds already, so its parts are not a function of row offsets.
    return true;
  }

  shape(branch: Branch): Branch {
    const plan = this.#planned;
    const cursor = new OutputCursor(plan, this.#kind ?? plan.kind!, serviceType(branch.schema, plan.incremental.cursor), branch.index);
    this.#cursors.set(branch.index, cursor);
    return { ...branch, batches: cursor.filter(branch.batches) };
  }

  commitMeta(index: number): Partial<ExportMeta> {
    const cursor = this.#cursors.get(index);
    if (cursor === undefined) return {};
    // An output that drops the rows it holds already writes fewer than the result: no row count to check.
    const drops = this.#planned.committed[index] !== undefined;
    return { cursor: () => cursor.state(), ...(drops ? { totalRowCount: undefined } : {}) };
  }

  afterCommit(written: ReadonlyMap<number, ExportSummary>): void {
    for (const [index, summary] of written) {
      const cursor = this.#cursors.get(index);
      // An append of no rows committed nothing: the output keeps the cursor it had.
      if (cursor !== undefined && summary.committed !== false) this.#values[index] = cursor.state().value;
    }
  }

  plan(): { readonly cursor: CursorPreview } {
    const plan = this.#planned;
    const lookback = plan.from === null ? undefined : plan.incremental.lookback;
    return { cursor: { column: plan.incremental.cursor, from: plan.from, value: plan.argument.value, ...(lookback === undefined ? {} : { lookback }) } };
  }

  summary(): IncrementalSummary {
    const plan = this.#planned;
    return { cursor: { from: plan.from, to: lowest(this.#kind ?? plan.kind, this.#values) } };
  }
}

/** The lowest of the outputs' committed cursor values: where every output has got to. */
function lowest(kind: CursorKind | undefined, values: readonly (string | undefined)[]): string | null {
  if (kind === undefined || values.length === 0 || values.some((v) => v === undefined)) return null;
  return (values as string[]).reduce((a, b) => (compareCursor(kind, a, b) <= 0 ? a : b));
}
