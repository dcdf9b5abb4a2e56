import type { Schema } from 'apache-arrow';
import type { Job } from '../../config/jobSchema.ts';
import type { Workers } from '../../export/partPlan.ts';
import type { ExportMeta, ExportSummary, OpenedExport } from '../../export/writeExport.ts';
import type { RangeReader } from '../../pipeline/stream.ts';
import type { RunResult } from '../backfill/backfillStream.ts';
import type { OutputSessions } from '../output/outputSession.ts';
import type { RunContract } from '../contracts/contract.ts';
import { openQuarantineGroups, type QuarantineGroup, writeQuarantineGroups } from '../contracts/contractQuarantine.ts';
import type { RunDrift } from '../drift/drift.ts';
import type { CursorKind } from '../incremental/cursor.ts';
import { type CursorPlan, OutputCursor, serviceType } from '../incremental/incremental.ts';
import { sourceInfo } from './jobSource.ts';
import { mayBeNative, writtenNatively } from './nativeOutputs.ts';
import { skipRows } from './skipRows.ts';
import { tee } from './tee.ts';

/** What the outputs written by this run add up to. */
export interface Written {
  readonly summaries: ExportSummary[];
  readonly fetchedRows: number;
  /** Per pending output: the cursor value its commit holds now (undefined: not incremental). */
  readonly cursors: (string | undefined)[];
  /** The quarantines written, by output index. */
  readonly quarantine: (readonly [number, ExportSummary])[];
}

export interface WriteOutputsOptions {
  readonly job: Job;
  /** The job's outputs, opened once for the run. */
  readonly outputs: OutputSessions;
  /** Indexes of the outputs to write (the others are committed already). */
  readonly pending: readonly number[];
  readonly executionId: string;
  readonly result: RunResult;
  /** Aborted on the first failure: stops the read and every other output. */
  readonly controller: AbortController;
  /** The caller's stop (SIGTERM): finished parts survive it for the next run. */
  readonly stop: AbortSignal;
  readonly onPageSize: (pageSize: number) => void;
  readonly workers: Workers;
  readonly totalRows: number | undefined;
  readonly wire: 'json' | 'arrow' | undefined;
  readonly warn?: ((message: string, fields: Record<string, unknown>) => void) | undefined;
  readonly incremental?: { readonly plan: CursorPlan; readonly kind: CursorKind } | undefined;
  /** The job's `expect` contract: every row read passes its column checks before any output sees it. */
  readonly contract?: RunContract | undefined;
  /** By the job's output index: an output's own contract, checked on the rows its branch receives. */
  readonly outputContracts?: readonly (RunContract | undefined)[] | undefined;
  /** Indexes of the outputs whose quarantine the job's contract feeds and this run writes (the others hold this execution's already). */
  readonly quarantine?: readonly number[] | undefined;
  /** Schema drift: a frozen output's rows are reshaped to its committed columns. */
  readonly drift?: RunDrift | undefined;
}

type Opened = { readonly o: OpenedExport; readonly k: number };

/** What every output's write shares: the result's schema and meta, where each summary goes, what a failure does. */
interface Writes {
  readonly schema: Schema;
  readonly meta: ExportMeta;
  readonly summaries: Promise<ExportSummary>[];
  readonly failed: (error: unknown) => never;
}

/**
 * Reads the result once and writes it to every pending output; one failing aborts the rest
 * (through `controller`, which also stops the read).
 *
 * Per-part resume: each output's staging area is named after (job, execution, output), so the
 * parts a killed run completed are found again (see `recover` in src/export for what is kept and
 * why the result is byte-identical). The read starts at the lowest row an output still needs, on
 * the page grid the killed run used; outputs that need less skip ahead. A kill at any point
 * therefore costs at most the part being written per output, not the rows already stored.
 */
export async function writeOutputs(options: WriteOutputsOptions): Promise<Written> {
  const opened: OpenedExport[] = [];
  let quarantines: QuarantineGroup[] = [];
  try {
    for (const index of options.pending) opened.push(await openOne(options, index));
    const run = { executionId: options.executionId, signal: options.controller.signal, stop: options.stop, sessions: options.outputs };
    quarantines = await openQuarantineGroups(options.job, { job: options.contract, outputs: options.outputContracts }, options.quarantine ?? [], options.pending, run);
    const all = opened.map((o, k) => ({ o, k }));
    // Outputs written by part threads read their parts themselves; the others share one read here.
    let serial = all.filter(({ o }) => o.workers === 1);
    const split = all.filter(({ o }) => o.workers > 1);
    const sessionOf = (k: number) => options.outputs.at(options.pending[k]!);
    const candidates = serial.filter(({ k }) => mayBeNative(options.job, sessionOf(k).output));
    const startRow = serial.length > 0 ? Math.min(...serial.map(({ o }) => o.startRow)) : 0;
    const { schema, meta } = await seekAndDescribe(options, startRow, opened.find((o) => o.pageSize !== undefined)?.pageSize);
    let first: { error: unknown } | undefined;
    const failed = (error: unknown): never => {
      // Stop the others: outputs of one run are all written, or the run fails. The abort also
      // releases an output waiting on this one's unread branch. The first failure is the cause;
      // the others only report that abort.
      first ??= { error };
      options.controller.abort(error);
      throw error;
    };
    const summaries: Promise<ExportSummary>[] = new Array(opened.length);
    const writes: Writes = { schema, meta, summaries, failed };
    // Before any write starts: a failure here leaves nothing running.
    const reader = split.length > 0 || candidates.length > 0 ? await options.result.rangeReader() : undefined;
    if (split.length > 0 && reader === undefined) throw new Error('runJob: the result cannot be read by row ranges, yet outputs were opened for part threads');
    // Written natively: they read their parts by row ranges, as split outputs do.
    const native = reader === undefined ? [] : candidates.filter(({ k }) => writtenNatively(sessionOf(k).output, options.pending[k]!, schema, reader, options.drift));
    serial = serial.filter((o) => !native.includes(o));
    split.push(...native);
    // With no output left to write, nothing reads the one read but the job contract's quarantines.
    const drainRead = serial.length === 0 && quarantines.some((g) => g.jobWide) ? () => options.result.batches() : undefined;
    const quarantined = writeQuarantineGroups(quarantines, { schema, meta, signal: options.controller.signal, failed, drainRead });
    const cursors = writeSerial(options, serial, startRow, writes);
    const splitRows = reader === undefined ? { rows: 0 } : writeSplit(options, split, reader, writes);
    const settled = await Promise.allSettled(summaries);
    const quarantine = await quarantined;
    if (first) throw options.stop.aborted ? options.stop.reason : first.error;
    const done = settled.map((s) => (s as PromiseFulfilledResult<ExportSummary>).value);
    const serialRows = serial.length > 0 || drainRead !== undefined ? (options.result.progress?.rows ?? 0) : 0;
    return { summaries: done, fetchedRows: serialRows + splitRows.rows, cursors: cursorsAfter(options, cursors, done), quarantine };
  } finally {
    // Exports that never got to write (the read could not start) give their staging back.
    await Promise.allSettled([...opened, ...quarantines.flatMap((g) => g.quarantines.opened)].map((o) => o.discard(options.controller.signal.reason)));
  }
}

async function openOne(options: WriteOutputsOptions, index: number): Promise<OpenedExport> {
  const session = options.outputs.at(index);
  const output = session.output;
  const opened = await session.openExport({ executionId: options.executionId }, {
    signal: options.controller.signal,
    // An incremental output drops the rows it holds already, so its parts are not a function of
    // row offsets: a killed run's parts are written again rather than kept.
    // So are the parts of an output some rows of which a contract sets aside (their offsets are not the result's).
    ...(options.incremental === undefined && options.contract?.quarantines !== true && options.outputContracts?.[index]?.quarantines !== true ? { resume: { attemptId: session.attemptId(options.executionId) } } : {}),
    // Stopped from outside (SIGTERM): finished parts survive for the next run, as after a kill.
    keepOnStop: options.stop,
    workers: session.threads(options.workers, options.totalRows, options.wire),
  });
  const why = opened.serialReason;
  if (why !== undefined) options.warn?.(`output ${output.path}: written by one thread (${why})`, { output: output.path, workers: options.workers });
  return opened;
}

/** Seeks to where the serial outputs start, on the killed run's page grid (batches, so row groups, so bytes, are cut at the same rows). */
async function seekAndDescribe(options: WriteOutputsOptions, startRow: number, pageSize: number | undefined): Promise<{ schema: Schema; meta: ExportMeta }> {
  const { result, job } = options;
  result.seek({ ...(startRow > 0 ? { startOffset: startRow } : {}), ...(pageSize === undefined ? {} : { pageSize }) });
  const info = await result.info();
  options.onPageSize(info.pageSize);
  const schema = await result.schema();
  const parameters = sourceInfo(job).parameters;
  const meta: ExportMeta = {
    executionId: options.executionId,
    pageSize: info.pageSize,
    job: job.name,
    ...(info.queryId === undefined ? {} : { queryId: info.queryId }),
    ...(info.status.execution_ended_at === undefined ? {} : { endedAt: info.status.execution_ended_at }),
    ...(job.result?.filters === undefined ? { totalRowCount: info.totalRows } : {}),
    ...(parameters ? { parameters } : {}),
  };
  return { schema, meta };
}

/** The outputs this thread writes, each from its branch of the one read; their cursors, when incremental. */
function writeSerial(options: WriteOutputsOptions, serial: readonly Opened[], startRow: number, writes: Writes): (OutputCursor | undefined)[] {
  const { pending, incremental, controller } = options;
  const { schema, meta, summaries, failed } = writes;
  // Checked ahead of the branches: a violation (or a row count out of range at the end) fails the
  // read itself, so every output fails with it and none commits.
  const read = options.contract?.watchesRows === true ? options.contract.watch(options.result.batches(), schema, startRow) : options.result.batches();
  const branches = serial.length > 0 ? tee(read, serial.length, 2, controller.signal) : [];
  // Incremental (every output serial): each output drops the rows its commit holds and tracks the new mark.
  const cursorType = incremental === undefined ? undefined : serviceType(schema, incremental.plan.incremental.cursor);
  const cursors = pending.map((index) => (incremental === undefined ? undefined : new OutputCursor(incremental.plan, incremental.kind, cursorType!, index)));
  serial.forEach(({ o, k }, b) => {
    const cursor = cursors[k];
    const own = options.outputContracts?.[pending[k]!];
    const skipped = skipRows(branches[b]!, o.startRow - startRow);
    // The output's own contract sees the rows this output receives (after the job's).
    const batches = own?.watchesRows === true ? own.watch(skipped, schema, o.startRow) : skipped;
    // An output that drops rows it holds already writes fewer than the result has: no row count to check.
    const { totalRowCount, ...rest } = meta;
    const drops = (cursor !== undefined && incremental?.plan.committed[pending[k]!] !== undefined) || options.contract?.quarantines === true || own?.quarantines === true;
    const outputMeta: ExportMeta = {
      ...rest,
      ...(totalRowCount === undefined || drops ? {} : { totalRowCount }),
      fingerprint: options.outputs.at(pending[k]!).fingerprint,
      ...(cursor ? { cursor: () => cursor.state() } : {}),
    };
    const shaped = options.drift?.shape(pending[k]!, schema, cursor ? cursor.filter(batches) : batches) ?? { schema, batches: cursor ? cursor.filter(batches) : batches };
    summaries[k] = o.write({ ...shaped, meta: outputMeta }, { signal: controller.signal }).catch(failed);
  });
  return cursors;
}

/** The outputs part threads write, one after another, each on every worker: the threads in use stay at `workers`. */
function writeSplit(options: WriteOutputsOptions, split: readonly Opened[], reader: RangeReader, writes: Writes): { rows: number } {
  const { pending, controller } = options;
  const { schema, meta, summaries, failed } = writes;
  const counted = { rows: 0 };
  const parts = { ...reader, page: (rows: number, bytes: number, httpBytes: number, wireBytes: number) => ((counted.rows += rows), reader.page(rows, bytes, httpBytes, wireBytes)) };
  let chain: Promise<unknown> = Promise.resolve();
  for (const { o, k } of split) {
    const fingerprint = options.outputs.at(pending[k]!).fingerprint;
    const written = chain.then(() => o.write({ schema, batches: noBatches(), meta: { ...meta, fingerprint }, parts }, { signal: controller.signal })).catch(failed);
    summaries[k] = written;
    chain = written.catch(() => undefined);
  }
  return counted;
}

/** Per output, the cursor its commit holds now; an append of no rows committed nothing: the one it had. */
function cursorsAfter(options: WriteOutputsOptions, cursors: readonly (OutputCursor | undefined)[], done: readonly ExportSummary[]): (string | undefined)[] {
  const committed = options.incremental?.plan.committed;
  return cursors.map((c, k) => (c === undefined ? undefined : done[k]!.committed === false ? committed?.[options.pending[k]!]?.value : c.state().value));
}

async function* noBatches(): AsyncGenerator<never, void, undefined> {
  // Outputs written by part threads take their rows from the range reader.
}
