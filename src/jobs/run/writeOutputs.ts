import type { RecordBatch, Schema } from 'apache-arrow';
import type { ExportMeta, ExportSummary, OpenedExport } from '../../export/writeExport.ts';
import type { RangeReader } from '../../pipeline/stream.ts';
import type { RunResult } from '../backfill/backfillStream.ts';
import type { OutputSessions } from '../output/outputSession.ts';
import type { BesideWrites, Branch, JobFeature } from './feature.ts';
import { sourceInfo } from './jobSource.ts';
import { mayBeNative, writtenNatively } from './nativeOutputs.ts';
import { skipRows } from './skipRows.ts';
import { tee } from './tee.ts';
import { tracedExport } from '../../telemetry/outputSpans.ts';

/** What the outputs written by this run add up to. */
export interface Written {
  readonly summaries: ExportSummary[];
  readonly fetchedRows: number;
  /** Per written output (as `summaries`): whether the native path wrote it (`--plan` says which it will be). */
  readonly native: readonly boolean[];
}

export interface WriteOutputsOptions {
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
  /** The job's features, in list order: each watches the read, shapes the branches, writes beside. */
  readonly features: readonly JobFeature[];
  readonly on: { readonly pageSize: (pageSize: number) => void };
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
  const beside: BesideWrites[] = [];
  try {
    for (const index of options.pending) opened.push(await openOne(options, index));
    const run = { executionId: options.executionId, pending: options.pending, signal: options.controller.signal, stop: options.stop };
    for (const feature of options.features) {
      const writes = await feature.openBeside?.(run);
      if (writes !== undefined) beside.push(writes);
    }
    const all = opened.map((o, k) => ({ o, k }));
    // Outputs written natively read their parts themselves; the others share one read here.
    const sessionOf = (k: number) => options.outputs.at(options.pending[k]!);
    const candidates = all.filter(({ k }) => mayBeNative(options.outputs.job, sessionOf(k).output));
    const startRow = all.length > 0 ? Math.min(...all.map(({ o }) => o.startRow)) : 0;
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
    const reader = candidates.length > 0 ? await options.result.rangeReader() : undefined;
    // Written natively: they read their parts by row ranges (unless a feature reshapes their rows).
    const reshaped = (index: number) => options.features.some((f) => f.reshapes?.(index, schema) === true);
    const native = reader === undefined ? [] : candidates.filter(({ k }) => writtenNatively(sessionOf(k).output, schema, reader, reshaped(options.pending[k]!)));
    const serial = all.filter((o) => !native.includes(o));
    // With no output left to write, nothing reads the one read but what is written beside.
    const drainRead = serial.length === 0 && beside.some((b) => b.needsRead) ? () => options.result.batches() : undefined;
    const besides = Promise.allSettled(beside.map((b) => b.start({ schema, meta, signal: options.controller.signal, failed, drainRead })));
    writeSerial(options, serial, startRow, writes);
    const splitRows = reader === undefined ? { rows: 0 } : writeSplit(options, native, reader, writes);
    const settled = await Promise.allSettled(summaries);
    await besides;
    if (first) throw options.stop.aborted ? options.stop.reason : first.error;
    const done = settled.map((s) => (s as PromiseFulfilledResult<ExportSummary>).value);
    const byOutput = new Map(done.map((s, k) => [options.pending[k]!, s]));
    for (const feature of options.features) feature.afterCommit?.(byOutput);
    const serialRows = serial.length > 0 || drainRead !== undefined ? (options.result.progress?.rows ?? 0) : 0;
    return { summaries: done, fetchedRows: serialRows + splitRows.rows, native: all.map((o) => native.includes(o)) };
  } finally {
    // Exports that never got to write (the read could not start) give their staging back.
    await Promise.allSettled([...opened, ...beside.flatMap((b) => b.opened)].map((o) => o.discard(options.controller.signal.reason)));
  }
}

async function openOne(options: WriteOutputsOptions, index: number): Promise<OpenedExport> {
  const session = options.outputs.at(index);
  const opened = await session.openExport({ executionId: options.executionId }, {
    signal: options.controller.signal,
    // A feature may leave an output's parts not a function of row offsets: a killed run's parts are then written again.
    ...(options.features.some((f) => f.forbidsPartResume?.(index) === true) ? {} : { resume: { attemptId: session.attemptId(options.executionId) } }),
    // Stopped from outside (SIGTERM): finished parts survive for the next run, as after a kill.
    keepOnStop: options.stop,
  });
  return tracedExport(opened, session.url, session.output.format.type);
}

/** Seeks to where the serial outputs start, on the killed run's page grid (batches, so row groups, so bytes, are cut at the same rows). */
async function seekAndDescribe(options: WriteOutputsOptions, startRow: number, pageSize: number | undefined): Promise<{ schema: Schema; meta: ExportMeta }> {
  const { result } = options;
  const job = options.outputs.job;
  result.seek({ ...(startRow > 0 ? { startOffset: startRow } : {}), ...(pageSize === undefined ? {} : { pageSize }) });
  const info = await result.info();
  options.on.pageSize(info.pageSize);
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

/** The outputs this thread writes, each from its branch of the one read, as each feature shapes it. */
function writeSerial(options: WriteOutputsOptions, serial: readonly Opened[], startRow: number, writes: Writes): void {
  const { pending, controller, features } = options;
  const { schema, meta, summaries, failed } = writes;
  const read = features.reduce<AsyncIterable<RecordBatch>>((batches, f) => (f.watch ? f.watch(batches, schema, startRow) : batches), options.result.batches());
  const branches = serial.length > 0 ? tee(read, serial.length, 2, controller.signal) : [];
  serial.forEach(({ o, k }, b) => {
    const index = pending[k]!;
    const branch: Branch = { index, schema, batches: skipRows(branches[b]!, o.startRow - startRow), startRow: o.startRow };
    const shaped = features.reduce<Branch>((br, f) => (f.shape ? f.shape(br) : br), branch);
    // An output that receives fewer rows than the result has: no row count to check.
    const { totalRowCount, ...rest } = meta;
    const drops = features.some((f) => f.drops?.(index) === true);
    const outputMeta: ExportMeta = {
      ...rest,
      ...(totalRowCount === undefined || drops ? {} : { totalRowCount }),
      fingerprint: options.outputs.at(index).fingerprint,
      ...Object.assign({}, ...features.map((f) => f.commitMeta?.(index) ?? {})),
    };
    summaries[k] = o.write({ schema: shaped.schema, batches: shaped.batches, meta: outputMeta }, { signal: controller.signal }).catch(failed);
  });
}

/** The outputs written natively, one after another (each uses DuckDB's threads), each reading its parts by row ranges. */
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

async function* noBatches(): AsyncGenerator<never, void, undefined> {
  // Outputs written natively take their rows from the range reader.
}
