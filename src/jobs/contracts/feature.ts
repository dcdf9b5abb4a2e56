import type { RecordBatch, Schema } from 'apache-arrow';
import type { ExportSummary } from '../../export/writeExport.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import type { Committed } from '../output/committedOutput.ts';
import type { BesideRun, BesideWrites, Branch, FeatureRun, JobFeature, JobFeatureKind } from '../run/feature.ts';
import { openQuarantineGroups, writeQuarantineGroups } from './contractQuarantine.ts';
import { ContractSet, type ContractSummary } from './contractSet.ts';
import { type ContractCheckPlan, contractPlan } from './contractPlan.ts';

/**
 * Contracts (`expect`, the job's and each output's) and their quarantines as a plug-in of the run:
 * columns and row count checked before any page; the job's checks watch the one read, an
 * output's its branch; a quarantine is written beside its output from the rows set aside.
 */
/** What a run's contracts add to the summary. */
export interface ContractsSummary {
  /** Jobs with `expect` (or an output's): the checks a `warn` contract let through, with how many rows broke each (empty: the result met the contract), and what `quarantine` set aside and where. */
  readonly contract?: ContractSummary;
}

export const contractsFeature: JobFeatureKind<ContractsSummary> = {
  name: 'contracts',
  split: [
    {
      field: 'expect.checks',
      parts: 'every row passes the column checks on its way from the one read',
      shards:
        'not supported on sharded runs yet (each shard reads only its rows, so unique could not see them all): run without shards, or keep expect.columns and expect.rows, which shard 0 checks before any page is fetched',
      found: (job) => (job.expect?.checks === undefined ? [] : [{ path: 'expect.checks', value: Object.keys(job.expect.checks) }]),
    },
    {
      field: 'outputs[].expect.checks',
      parts: 'every row passes the column checks on its way to the output',
      found: (job) => job.outputs.flatMap((o, i) => (o.expect?.checks === undefined ? [] : [{ path: `outputs[${i}].expect.checks`, value: Object.keys(o.expect.checks) }])),
    },
    {
      field: 'outputs[].expect',
      shards: "not supported on sharded runs yet: move the output's columns and rows to the job's expect (shard 0 checks them before any page is fetched), or run without shards",
      found: (job) => job.outputs.flatMap((o, i) => (o.expect === undefined ? [] : [{ path: `outputs[${i}].expect`, value: Object.keys(o.expect) }])),
    },
  ],
  create: (run) => {
    const set = ContractSet.of(run.job, run.events?.onWarning);
    return set === undefined ? undefined : new ContractsRun(run, set);
  },
};

class ContractsRun implements JobFeature<ContractsSummary> {
  readonly #run: FeatureRun;
  readonly #set: ContractSet;
  /** Per output with a quarantine, its commit of this execution (undefined: the run writes it). */
  #quarantines: Map<number, Committed | undefined> | undefined;
  #written: (readonly [number, ExportSummary])[] = [];

  constructor(run: FeatureRun, set: ContractSet) {
    this.#run = run;
    this.#set = set;
  }

  beforeFetch(status: ExecutionStatus): void {
    this.#set.beforeFetch(status);
  }

  async beforeWrite(executionId: string): Promise<void> {
    this.#quarantines = await this.#set.committedQuarantines(executionId, this.#run.outputs, this.#run.signal);
  }

  rewrites(index: number): boolean {
    return this.#quarantines !== undefined && this.#set.rewrites(index, this.#quarantines);
  }

  drops(index: number): boolean {
    // A contract that sets rows aside leaves an output fewer rows than the result.
    return this.#set.filters(index);
  }

  forbidsPartResume(index: number): boolean {
    // The parts of an output some rows of which a contract sets aside: their offsets are not the result's.
    return this.#set.filters(index);
  }

  watch(read: AsyncIterable<RecordBatch>, schema: Schema, startRow: number): AsyncIterable<RecordBatch> {
    // Checked ahead of the branches: a violation (or a row count out of range at the end) fails the
    // read itself, so every output fails with it and none commits.
    const contract = this.#set.job;
    return contract?.watchesRows === true ? contract.watch(read, schema, startRow) : read;
  }

  shape(branch: Branch): Branch {
    // The output's own contract sees the rows this output receives (after the job's).
    const own = this.#set.outputs[branch.index];
    return own?.watchesRows === true ? { ...branch, batches: own.watch(branch.batches, branch.schema, branch.startRow) } : branch;
  }

  writesBeside(): boolean {
    return this.#quarantines !== undefined && this.#set.jobQuarantinesToWrite(this.#quarantines).length > 0;
  }

  async openBeside(write: BesideRun): Promise<BesideWrites | undefined> {
    const toWrite = this.#quarantines === undefined ? [] : this.#set.jobQuarantinesToWrite(this.#quarantines);
    const groups = await openQuarantineGroups(this.#run.job, this.#set, toWrite, write.pending, { ...write, sessions: this.#run.outputs });
    if (groups.length === 0) return undefined;
    return {
      opened: groups.flatMap((g) => g.quarantines.opened),
      needsRead: groups.some((g) => g.jobWide),
      start: async (input) => {
        this.#written = await writeQuarantineGroups(groups, input);
      },
    };
  }

  plan(): { readonly contract?: readonly ContractCheckPlan[] } {
    const contract = contractPlan(this.#run.job);
    return contract.length === 0 ? {} : { contract };
  }

  summary(): ContractsSummary {
    return { contract: this.#set.summary(this.#quarantines, this.#written) };
  }
}
