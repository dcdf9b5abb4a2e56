import type { FeatureRun, FeatureStart, JobFeature, JobFeatureKind } from '../run/feature.ts';
import type { SourceDecision } from '../run/sourceDecision.ts';
import { type BackfillPlan, planBackfill } from './backfillPlan.ts';
import { type BackfillSummary, startBackfill } from './backfillRun.ts';

/**
 * A backfill as a plug-in of the run: its start executes every chunk (`startBackfill`) in place of
 * one execution; the result's checks read their summed status, and one write commits all their
 * rows. A backfill is the job's first load: an incremental job's later runs read from its cursor.
 */
/** What a backfill adds to the summary. */
export interface BackfillSummaryPart {
  /** Jobs with `backfill`: its chunks, the executions started and read again, the chunks halved. */
  readonly backfill?: BackfillSummary;
}

export const backfillFeature: JobFeatureKind<BackfillSummaryPart> = {
  name: 'backfill',
  split: [
    {
      field: 'backfill',
      parts: 'the rows come from one execution per chunk, read in chunk order',
      shards: 'a backfill reads one execution per chunk and commits them once: run it without shards (backfill.concurrency runs chunks side by side)',
      found: (job) => (job.backfill === undefined ? [] : [{ path: 'backfill', value: job.backfill.chunk }]),
    },
  ],
  create: (run) => (run.job.backfill === undefined ? undefined : new BackfillRun(run)),
};

class BackfillRun implements JobFeature<BackfillSummaryPart> {
  readonly #run: FeatureRun;
  #summary: BackfillSummary | undefined;
  #plan: BackfillPlan | undefined;

  constructor(run: FeatureRun) {
    this.#run = run;
  }

  async start(): Promise<FeatureStart | undefined> {
    const { job, client, signal, stateDir, resume, executionId, events, tally } = this.#run;
    // An incremental job backfills until its outputs hold a cursor (`prepare` planned it first).
    if (tally.cursorFrom !== undefined && tally.cursorFrom !== null) return undefined;
    const begun = await startBackfill(job, {
      client,
      signal,
      stateDir,
      resume,
      executionId,
      events,
      onCredits: (credits) => (tally.credits += credits),
      onProgress: (p) => events?.onProgress?.({ ...p, totalPages: undefined }),
    });
    this.#summary = begun.summary;
    return begun;
  }

  async planStart(): Promise<{ decision: SourceDecision; credits: number } | undefined> {
    const { job, client, signal, stateDir, resume, tally } = this.#run;
    if (tally.cursorFrom !== undefined && tally.cursorFrom !== null) return undefined;
    const planned = await planBackfill(job, { client, signal, stateDir, resume });
    this.#plan = planned.plan;
    return { decision: planned.decision, credits: planned.plan.credits };
  }

  plan(): { readonly backfill?: BackfillPlan } {
    return this.#plan === undefined ? {} : { backfill: this.#plan };
  }

  summary(): BackfillSummaryPart {
    return this.#summary === undefined ? {} : { backfill: this.#summary };
  }
}
