import type { Schema } from 'apache-arrow';
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { Branch, FeatureRun, JobFeature, JobFeatureKind } from '../run/feature.ts';
import type { DriftPolicy } from '../../config/notifySchema.ts';
import { driftPolicyOf, type OutputDrift, RunDrift, watchesDrift, watchesPolicy } from './drift.ts';

/**
 * Schema drift as a plug-in of the run: each output's committed columns (its session's commit)
 * against the result's before any page, its policy applied; a frozen or widened output's rows
 * reshaped on its branch.
 */
/** What drift adds to the summary. */
export interface DriftSummary {
  /** The outputs whose committed columns differ from the result's, and what their schema_drift policy did (absent: none, or not looked for). */
  readonly drift?: readonly OutputDrift[];
}

export const driftFeature: JobFeatureKind<DriftSummary> = {
  name: 'drift',
  split: [
    {
      field: 'outputs[].schema_drift',
      when: "is `freeze` (its own, or the job's)",
      // Parts read on their own (native): only once a frozen output is found to have drifted (`reshapes`).
      shards: 'freeze reshapes the rows of the one read, and each shard reads its own: use fail or evolve, or run without shards',
      found: (job) => job.outputs.flatMap((o, i) => (driftPolicyOf(job, o) === 'freeze' ? [{ path: `outputs[${i}].schema_drift`, value: 'freeze' }] : [])),
    },
  ],
  create: (run) => (watchesDrift(run.job) ? new DriftRun(run) : undefined),
};

class DriftRun implements JobFeature<DriftSummary> {
  readonly #run: FeatureRun;
  readonly #drift: RunDrift;

  constructor(run: FeatureRun) {
    this.#run = run;
    this.#drift = new RunDrift(run.job, (drift) => run.events?.onDrift?.(drift));
  }

  beforeFetch(status: ExecutionStatus): Promise<void> {
    const { outputs, signal } = this.#run;
    return this.#drift.beforeFetch(status, (i) => outputs.at(i).committed(signal));
  }

  reshapes(index: number, schema: Schema): boolean {
    return this.#drift.shape(index, schema, (async function* () {})()).schema !== schema;
  }

  shape(branch: Branch): Branch {
    return { ...branch, ...this.#drift.shape(branch.index, branch.schema, branch.batches) };
  }

  planOutput(index: number): { readonly schemaDrift?: DriftPolicy } {
    const { job } = this.#run;
    return watchesPolicy(job) ? { schemaDrift: driftPolicyOf(job, job.outputs[index]!) } : {};
  }

  summary(): DriftSummary {
    return this.#drift.found.length === 0 ? {} : { drift: this.#drift.found };
  }
}
