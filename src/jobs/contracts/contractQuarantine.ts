import { makeData, RecordBatch, Schema, Struct } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import type { ResolvedOutput } from '../../export/outputConfig.ts';
import type { ExportMeta, ExportSummary, OpenedExport } from '../../export/writeExport.ts';
import { arrowSchema } from '../../types/arrow.ts';
import { createBatchBuilder } from '../../types/batch.ts';
import type { OutputSession, OutputSessions } from '../output/outputSession.ts';
import type { RunContract } from './contract.ts';
import { quarantinePath } from '../../config/quarantinePath.ts';
import { tee } from '../run/tee.ts';
import { Channel } from '../../export/channel.ts';

/** The columns a quarantined row carries after the result's: the check (`expect.checks.amount.min`), its column, the reason, the result row (1-based). */
export const QUARANTINE_COLUMNS = ['_check', '_column', '_reason', '_row'] as const;

const EXTRA_COLUMNS = [
  { name: '_check', type: 'varchar' },
  { name: '_column', type: 'varchar' },
  { name: '_reason', type: 'varchar' },
  { name: '_row', type: 'bigint' },
];

/** The quarantine of an output: the same format, sink options and mode at the sibling path, one manifest commit, no partitions. */
/** The session of output `index`'s quarantine, opened once per run beside the output's own. */
export function quarantineSession(sessions: OutputSessions, index: number, output: ResolvedOutput): OutputSession {
  return sessions.extra('quarantine', index, quarantineOutput(output));
}

export function quarantineOutput(output: ResolvedOutput): ResolvedOutput {
  const path = quarantinePath(output.path);
  const { catalog: _catalog, ...rest } = output;
  return {
    ...rest,
    path,
    sinkConfig: output.sink.config.parse({ ...(output.sinkConfig as object), url: path }),
    partitionBy: [],
    keepPartitionColumns: false,
    table: 'manifest',
  };
}

/** The read of the quarantined rows: the contract pushes as it finds them (waiting while the quarantine outputs are two batches behind), the quarantine outputs read. */
export type QuarantineFeed = Channel<RecordBatch>;

/** `signal`: the run's; its abort ends the feed, so a push waiting for a quarantine that stopped returns. */
export function quarantineFeed(signal?: AbortSignal): QuarantineFeed {
  // The quarantine outputs stopped reading (one failed): the contract's next push fails the read.
  return new Channel<RecordBatch>({ capacity: 2, signal, stopped: () => new Error('the quarantine outputs stopped reading') });
}

/** Splits a batch by the contract's verdicts: the good rows (runs of them, as slices) and the quarantined ones with why. */
export function quarantineSplitter(schema: Schema): (batch: RecordBatch, verdicts: readonly ({ check: string; column?: string; problem: string; row?: number } | undefined)[]) => { good: RecordBatch[]; bad: RecordBatch[] } {
  const extra = arrowSchema(EXTRA_COLUMNS);
  const withWhy = new Schema([...schema.fields, ...extra.fields], schema.metadata);
  return (batch, verdicts) => {
    const good: RecordBatch[] = [];
    const bad: RecordBatch[] = [];
    for (let from = 0; from < batch.numRows; ) {
      const quarantined = verdicts[from] !== undefined;
      let to = from + 1;
      while (to < batch.numRows && (verdicts[to] !== undefined) === quarantined) to++;
      if (!quarantined) good.push(batch.slice(from, to));
      else {
        const why = createBatchBuilder(extra);
        for (let i = from; i < to; i++) {
          const v = verdicts[i]!;
          why.append({ _check: v.check, _column: v.column ?? null, _reason: v.problem, _row: BigInt(v.row ?? 0) });
        }
        const rows = batch.slice(from, to);
        const extras = why.flush();
        const children = [...rows.data.children, ...extras.data.children];
        bad.push(new RecordBatch(withWhy, makeData({ type: new Struct(withWhy.fields), length: to - from, nullCount: 0, children })));
      }
      from = to;
    }
    return { good, bad };
  };
}

/** The schema of a quarantine: the result's columns, then why. */
export function quarantineSchema(schema: Schema): Schema {
  return new Schema([...schema.fields, ...arrowSchema(EXTRA_COLUMNS).fields], schema.metadata);
}

/** The quarantines of some outputs, opened for one run: written from the contract's feed, committed like outputs. */
export interface Quarantines {
  readonly opened: readonly OpenedExport[];
  readonly outputs: readonly ResolvedOutput[];
  /** Starts every quarantine's write from `feed`; each promise settles with its export. */
  write(feed: QuarantineFeed, schema: Schema, meta: ExportMeta, signal: AbortSignal): Promise<ExportSummary>[];
}

/** Opens the quarantines of the job's outputs at `indexes` (those a run still has to write). */
export async function openQuarantines(job: Job, sessions: OutputSessions, indexes: readonly number[], executionId: string, signal: AbortSignal, keepOnStop: AbortSignal): Promise<Quarantines> {
  const opening = indexes.map((i) => quarantineSession(sessions, i, job.outputs[i]!));
  const outputs = opening.map((s) => s.output);
  const opened: OpenedExport[] = [];
  try {
    // No part resume: the quarantine (like its output) holds the rows a whole read sets aside, so a resumed run writes it again from the first row.
    for (const session of opening) opened.push(await session.openExport({ executionId }, { signal, keepOnStop }));
  } catch (error) {
    await Promise.allSettled(opened.map((o) => o.discard(error)));
    throw error;
  }
  return {
    opened,
    outputs,
    write: (feed, schema, meta, writeSignal) => {
      const { totalRowCount: _rows, ...rest } = meta;
      const branches = tee(feed, outputs.length, 2, writeSignal);
      const withWhy = quarantineSchema(schema);
      return opened.map((o, k) => o.write({ schema: withWhy, batches: branches[k]!, meta: { ...rest, fingerprint: opening[k]!.fingerprint } }, { signal: writeSignal }));
    },
  };
}


/** One contract's quarantines: the job's feeds those of every output it guards, an output's its own. */
export interface QuarantineGroup {
  readonly contract: RunContract;
  /** The job's contract (not an output's): checked on the one read, before the branches. */
  readonly jobWide: boolean;
  readonly indexes: readonly number[];
  readonly quarantines: Quarantines;
}

/** Opens the quarantines a run writes: the job contract's at `jobIndexes`, and each pending output's whose own contract quarantines. */
export async function openQuarantineGroups(
  job: Job,
  contracts: { readonly job: RunContract | undefined; readonly outputs: readonly (RunContract | undefined)[] | undefined },
  jobIndexes: readonly number[],
  pending: readonly number[],
  run: { readonly executionId: string; readonly signal: AbortSignal; readonly stop: AbortSignal; readonly sessions: OutputSessions },
): Promise<QuarantineGroup[]> {
  const wanted: { contract: RunContract; jobWide: boolean; indexes: readonly number[] }[] = [];
  if (contracts.job !== undefined && jobIndexes.length > 0) wanted.push({ contract: contracts.job, jobWide: true, indexes: jobIndexes });
  for (const index of pending) {
    const own = contracts.outputs?.[index];
    if (own?.quarantines === true) wanted.push({ contract: own, jobWide: false, indexes: [index] });
  }
  const groups: QuarantineGroup[] = [];
  try {
    for (const { contract, jobWide, indexes } of wanted) groups.push({ contract, jobWide, indexes, quarantines: await openQuarantines(job, run.sessions, indexes, run.executionId, run.signal, run.stop) });
  } catch (error) {
    await Promise.allSettled(groups.flatMap((g) => g.quarantines.opened).map((o) => o.discard(error)));
    throw error;
  }
  return groups;
}

/**
 * Starts writing every group's quarantines from the rows its contract sets aside. A job contract
 * whose outputs hold this execution already (no branch reads it) has its read drained here
 * (`drainRead`), so it sees every row. Settles with each quarantine written, by output index.
 */
export function writeQuarantineGroups(
  groups: readonly QuarantineGroup[],
  input: { readonly schema: Schema; readonly meta: ExportMeta; readonly signal: AbortSignal; readonly failed: (error: unknown) => never; readonly drainRead: (() => AsyncIterable<RecordBatch>) | undefined },
): Promise<[number, ExportSummary][]> {
  const written: Promise<[number, ExportSummary]>[] = [];
  const drained: Promise<void>[] = [];
  for (const group of groups) {
    const feed = quarantineFeed(input.signal);
    group.contract.quarantineTo(feed);
    group.quarantines.write(feed, input.schema, input.meta, input.signal).forEach((p, k) => written.push(p.then((s): [number, ExportSummary] => [group.indexes[k]!, s]).catch(input.failed)));
    if (group.jobWide && input.drainRead !== undefined) drained.push(drain(group.contract.watch(input.drainRead(), input.schema, 0)).catch(input.failed));
  }
  // Settled from the start: a quarantine that fails before the outputs do is the run's failure, reported there, not an unhandled one.
  const settled = Promise.allSettled([...written, ...drained]);
  return settled.then((all) => all.slice(0, written.length).flatMap((s) => (s.status === 'fulfilled' ? [s.value as [number, ExportSummary]] : [])));
}

async function drain(batches: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of batches);
}
