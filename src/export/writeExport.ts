import { randomBytes } from 'node:crypto';
import type { RecordBatch, Schema } from 'apache-arrow';
import { ConfigError, type Format, PreconditionFailedError } from '../kit/index.ts';
import { type Destination, type Transaction } from './destination.ts';
import { checkAppend } from './appendCheck.ts';
import type { Commit, CommitProtocol, CursorState } from './commit.ts';
import { RowCountMismatchError } from './errors.ts';
import { fileEntryOf, type JournalPart, resumableLayout } from './journal.ts';
import { buildManifest, describeSchema, type Manifest } from './manifest.ts';
import { partFileName } from './partFileName.ts';
import { type FileEntry, PartFile } from './partFile.ts';
import { HeldPartitions } from './heldPartitions.ts';
import { type PartitionRun, partitioner } from './partitions.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { noResume, recover, type Resume } from './resume.ts';
import type { RangeReader } from '../pipeline/stream.ts';
import { warnWorkersIgnored } from './partPlan.ts';
import { type OpenedOutput, openOutput } from './openOutput.ts';
import { type NativeMode, nativeRoute, writeNativeExport } from './nativeExport.ts';
import { commitSpan } from '../telemetry/outputSpans.ts';

/** What the pipeline hands over: one schema, batches that all use it, and the execution's identity. */
export interface ExportInput {
  schema: Schema;
  batches: AsyncIterable<RecordBatch>;
  meta: ExportMeta;
  /**
   * How row ranges of the same result are read (`ResultStream.rangeReader()`): an output the
   * native path writes (`WriteExportOptions.native`) reads its parts from it, and `batches` is not read.
   */
  parts?: RangeReader | undefined;
}

export interface ExportMeta {
  executionId: string;
  queryId?: number;
  parameters?: Record<string, unknown>;
  endedAt?: string;
  /** When given, the export fails and commits nothing unless exactly this many rows were written. */
  totalRowCount?: number;
  /** Rows per page of the read feeding the export; kept in the resume journal (see `recover`). */
  pageSize?: number;
  /**
   * What besides the execution decides the files (the caller's result shaping and output options),
   * recorded in the manifest: a later export of the same execution can only be skipped when it matches.
   */
  fingerprint?: string;
  /** The job writing it, recorded in the commit: an append refuses an output another job wrote. */
  job?: string;
  /**
   * An incremental job's high-water mark once every batch is written: recorded in the same commit as
   * the rows (read back as `Commit.cursor`). Called after the last batch, before publishing.
   */
  cursor?: () => CursorState | undefined;
}

export interface ExportProgress {
  rows: number;
  bytes: number;
  files: number;
}

export interface WriteExportOptions {
  signal?: AbortSignal;
  /**
   * @deprecated Ignored, with one DeprecationWarning per process: part threads were removed (they
   * made exports slower, docs/performance.md). The calling thread writes every output.
   */
  workers?: number | 'auto';
  onProgress?: (progress: ExportProgress) => void;
  /** How the export becomes visible and is found again (default: the output's `table`, see `commitFor`). */
  commit?: CommitProtocol;
  /**
   * The native path (src/export/nativeExport.ts): a Parquet output over JSON pages, read by row
   * ranges from `input.parts` and written by DuckDB. `auto` (default): where the stream chose JSON
   * (`wire: auto`, a service without Arrow pages) and the output and columns allow it; `always`:
   * also over JSON pages asked for; `never`.
   */
  native?: NativeMode;
}

export interface ExportSummary {
  /** Where the export was committed (`file:///...`, `s3://bucket/prefix`, `stdout:`). */
  url: string;
  rows: number;
  bytes: number;
  files: FileEntry[];
  /** Parts (and the rows they hold) kept from a killed run instead of written again. */
  resumedFiles: number;
  resumedRows: number;
  /** What was handed to the commit (written as `_manifest.json` by the manifest commit; with mode append: this run's files), or undefined for a single-stream destination. */
  manifest?: Manifest;
  /** The commit as published (a table format's snapshot), or undefined for a single-stream destination. */
  commit?: Commit;
  /** False when nothing was committed: an append of no rows. */
  committed?: false;
  /** Columns this append added to the output's schema. */
  addedColumns?: string[];
}

/**
 * Writes one result to an output `resolveOutput` checked: create the destination -> stage every file -> check
 * the row count -> commit (through the commit protocol: by default files, then `_manifest.json`,
 * then `_SUCCESS`) -> close. Any
 * failure, including an error from `input.batches` or `signal` aborting, settles every
 * in-flight write, discards what was staged and rethrows: nothing new becomes visible.
 */
export async function writeExport(input: ExportInput, output: ResolvedOutput, options: WriteExportOptions = {}): Promise<ExportSummary> {
  warnWorkersIgnored(options.workers);
  const opened = await openExport(output, input.meta, options);
  return opened.write(input, options);
}

export interface OpenExportOptions {
  signal?: AbortSignal;
  /** How the export becomes visible and is found again (default: the output's `table`, see `commitFor`). */
  commit?: CommitProtocol;
  /**
   * Make this export resumable: `attemptId` names its staging area and must be the same for
   * every run that exports this execution to this output (and differ otherwise). A run killed
   * mid-export leaves its complete parts and a journal there; the next `openExport` with the
   * same id keeps those parts and asks for the rows after them (`startRow`).
   */
  resume?: { readonly attemptId: string };
  /**
   * With `resume`: once this signal is aborted (the caller was asked to stop, e.g. SIGTERM), an
   * export that ends early keeps its complete parts and journal for the next run, as a kill
   * would, instead of discarding them. Failures of the export itself still discard everything.
   */
  keepOnStop?: AbortSignal;
  /** @deprecated Ignored, as `WriteExportOptions.workers` (part threads were removed). */
  workers?: number | 'auto';
  /**
   * The output opened already (`openOutput`): its destination and commit are used, and left open
   * for the caller to close. Otherwise the export opens them, and closes the destination when done.
   */
  opened?: OpenedOutput;
}

/** An export whose staging area is open: where its rows must start, then `write` (or `discard`). */
export interface OpenedExport {
  /** The result's first row this export still needs; `input.batches` of `write` start there. */
  readonly startRow: number;
  /** Rows per page of the read that wrote the kept parts: read with it to cut batches the same way. */
  readonly pageSize: number | undefined;
  /** Parts kept from a killed run. */
  readonly resumedFiles: readonly FileEntry[];
  /** Writes the rows from `startRow` on, then commits; a failure discards everything staged (kept parts too), a stop (`keepOnStop`) keeps the complete parts. */
  write(input: ExportInput, options?: Pick<WriteExportOptions, 'onProgress' | 'signal' | 'native'>): Promise<ExportSummary>;
  /** Gives up before writing: discards the staging area (kept on a stop, see `keepOnStop`), closes the destination. */
  discard(reason?: unknown): Promise<void>;
}

/**
 * Opens an export of a resolved output: create the destination -> read its commit -> begin a transaction,
 * and with `resume`, recover what a killed run with the same attempt id staged (see `recover`).
 */
export async function openExport(resolved: ResolvedOutput, meta: Pick<ExportMeta, 'executionId'>, options: OpenExportOptions = {}): Promise<OpenedExport> {
  const format = resolved.format.create(resolved.formatConfig);
  const owned = options.opened === undefined;
  const { destination, commit } = options.opened ?? openOutput(resolved, options.commit);
  const close = async (): Promise<void> => {
    if (owned) await destination.close();
  };
  warnWorkersIgnored(options.workers);
  let staged: Staged;
  try {
    staged = await stage(destination, commit, resolved, meta.executionId, format.extension, options);
  } catch (error) {
    await close();
    // Stopped by the caller: that is the cause, not the read or write it cut short.
    throw options.signal?.aborted ? options.signal.reason : error;
  }
  const { tx, previous, resume } = staged;
  /** Ends without committing (once): keeps what is resumable when the caller asked to stop, else discards. */
  let ended: Promise<void> | undefined;
  const end = (reason: unknown, keep?: readonly string[]): Promise<void> =>
    (ended ??= resume !== noResume && options.keepOnStop?.aborted === true && tx.suspend !== undefined ? tx.suspend() : tx.abort(reason, keep));
  const resumedFiles = resume.kept.map(fileEntryOf);
  let used = false;
  return {
    startRow: resume.startRow,
    pageSize: resume.pageSize,
    resumedFiles,
    async write(input, writeOptions = {}) {
      if (used) throw new Error('openExport: write or discard may be called once');
      used = true;
      const signal = writeOptions.signal ?? options.signal;
      try {
        checkColumns(input.schema, resolved);
        // Appending to an output whose commit records its job and layout (a manifest): the same job and
        // layout, columns the output can hold; nothing written otherwise. A table format checks its own schema (`prepare`).
        const appending = resolved.mode === 'append' && previous !== undefined;
        const addedColumns = appending && previous.layout !== undefined ? checkAppend(destination.url, previous, input.schema, resolved, input.meta.job, input.meta.executionId) : [];
        input = prepared(commit, input, previous);
        signal?.throwIfAborted();
        const record = resume.journal(input.meta.executionId, input.meta.pageSize);
        const from = { startRow: resume.startRow, startPart: resume.kept.length, resumed: resumedFiles, record, emptyFile: !appending };
        let files: FileEntry[];
        const route = commit?.prepare !== undefined ? undefined : nativeRoute(resolved, input.schema, input.parts, writeOptions.native);
        if (route?.native === true) {
          files = await writeNativeExport(route, input.schema, input.meta.executionId, input.parts!, resolved, format, tx, { signal, onProgress: writeOptions.onProgress, kept: resume.kept, record });
        } else {
          files = await writeFiles(input, resolved, format, tx, { ...writeOptions, signal }, from);
        }
        const rows = files.reduce((n, f) => n + f.rows, 0);
        if (input.meta.totalRowCount !== undefined && rows !== input.meta.totalRowCount) {
          throw new RowCountMismatchError(input.meta.executionId, input.meta.totalRowCount, rows);
        }
        signal?.throwIfAborted();
        if (appending && rows === 0) {
          // Nothing new: the committed output (and its cursor) stays exactly as it is.
          await end(undefined);
          return { url: destination.url, rows: 0, bytes: 0, files: [], resumedFiles: 0, resumedRows: 0, committed: false };
        }
        const manifest = buildManifest(input.meta, { mode: resolved.mode, format: resolved.format.type, partitionBy: resolved.partitionBy }, files, describeSchema(input.schema));
        const published = commit ? await commitSpan(commit.type, { files: files.length, rows }, () => publish(commit, destination, tx, manifest, previous, end)) : await tx.commit([]);
        const resumedRows = resume.kept.reduce((n, p) => n + p.rows, 0);
        const summary = { url: destination.url, rows, bytes: manifest.total_bytes, files, resumedFiles: resumedFiles.length, resumedRows, ...(addedColumns.length > 0 ? { addedColumns } : {}) };
        return published ? { ...summary, manifest, commit: published } : summary;
      } catch (error) {
        await end(error);
        throw error;
      } finally {
        await close();
      }
    },
    async discard(reason) {
      if (used) return;
      used = true;
      try {
        await end(reason);
      } finally {
        await close();
      }
    },
  };
}

interface Staged {
  readonly tx: Transaction;
  readonly previous: Commit | undefined;
  readonly resume: Resume;
}

/** Reads the committed output, begins the transaction that will replace it, recovers a killed attempt. */
async function stage(
  destination: Destination,
  commit: CommitProtocol | undefined,
  resolved: ResolvedOutput,
  executionId: string,
  extension: string,
  options: OpenExportOptions,
): Promise<Staged> {
  const { signal } = options;
  signal?.throwIfAborted();
  const attempt = options.resume?.attemptId ?? attemptId();
  // The writer's lease is taken while the committed output is read (a commit with a transaction of its own takes none).
  if (commit?.begin === undefined) destination.startLease?.(attempt);
  const previous = commit ? await commit.read(destination, signal) : undefined;
  const resumable = options.resume !== undefined && commit !== undefined && resumableLayout(resolved);
  const begin = {
    attemptId: attempt,
    previous: previous?.owns ?? [],
    markers: commit?.records ?? [],
    resume: resumable,
    ...(signal ? { signal } : {}),
  };
  const tx = await (commit?.begin ? commit.begin(destination, begin, previous) : destination.begin(begin));
  try {
    const journaling = resumable && tx.saveJournal !== undefined && tx.retain !== undefined;
    const resume = await recover(tx, resolved, executionId, extension, journaling);
    return { tx, previous, resume: journaling ? resume : noResume };
  } catch (error) {
    await tx.abort(error);
    throw error;
  }
}

/**
 * Publishes through the commit protocol. When another writer committed first (a precondition
 * failed), this attempt's files are discarded except those the winner's commit lists.
 */
async function publish(
  commit: CommitProtocol,
  destination: Destination,
  tx: Transaction,
  manifest: Manifest,
  previous: Commit | undefined,
  end: (reason: unknown, keep?: readonly string[]) => Promise<void>,
): Promise<Commit> {
  try {
    return await commit.publish(tx, manifest, previous, destination);
  } catch (error) {
    if (!(error instanceof PreconditionFailedError)) throw error;
    const winner = await commit.read(destination).catch(() => undefined);
    await end(error, winner?.owns ?? []);
    throw error;
  }
}

/** The input as the commit protocol's data files take it (a table format's field ids and types), when it says. */
function prepared(commit: CommitProtocol | undefined, input: ExportInput, previous: Commit | undefined): ExportInput {
  const data = commit?.prepare?.(input.schema, previous);
  if (data === undefined) return input;
  const batches = (async function* () {
    for await (const batch of input.batches) yield data.convert(batch);
  })();
  return { ...input, schema: data.schema, batches };
}

interface Resumed {
  /** Rows (of the result) the kept parts hold: the first batch is row `startRow`. */
  readonly startRow: number;
  readonly startPart: number;
  readonly resumed: readonly FileEntry[];
  /** Records a complete part in the journal; the part counts as written once this resolves. */
  readonly record: ((part: JournalPart) => Promise<void>) | undefined;
  /** Whether an empty unpartitioned result still gets one file (not when appending: nothing is committed). */
  readonly emptyFile: boolean;
}

async function writeFiles(
  input: ExportInput,
  resolved: ResolvedOutput,
  format: Format,
  tx: Transaction,
  options: Pick<WriteExportOptions, 'onProgress' | 'signal'>,
  from: Resumed,
): Promise<FileEntry[]> {
  const { signal, onProgress } = options;
  const split = partitioner(input.schema, resolved.partitionBy, resolved.keepPartitionColumns);
  const open = new Map<string, PartFile>();
  const held = resolved.partitionBy.length > 0 ? new HeldPartitions() : undefined;
  const finishing: Promise<FileEntry>[] = [];
  let part = from.startPart;
  let rows = from.startRow;
  let doneBytes = from.resumed.reduce((n, f) => n + f.bytes, 0);

  const openFile = async (directory: string, values: Record<string, string | null>): Promise<PartFile> => {
    // The bound on memory: make room by finishing the least recently used file (Map order).
    const lru = open.size >= resolved.maxOpenFiles ? [...open.entries()][0] : undefined;
    if (lru) {
      held?.hold(lru[0]);
      await finish(lru[0], lru[1]);
    }
    const name = partFileName(input.meta.executionId, part++, format.extension, directory);
    const file = new PartFile(tx, format, split.dataSchema, name, values, signal, rows);
    open.set(directory, file);
    return file;
  };
  const finish = (directory: string, file: PartFile): Promise<FileEntry> => {
    open.delete(directory);
    const done = file.finish().then(async (entry) => {
      await from.record?.({ path: entry.path, first_row: file.firstRow, rows: entry.rows, bytes: entry.bytes, sha256: entry.sha256 });
      doneBytes += entry.bytes;
      return entry;
    });
    done.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
    finishing.push(done);
    return done;
  };
  /** The open file of `directory`, now the most recently used. */
  const use = (directory: string): PartFile | undefined => {
    const file = open.get(directory);
    if (file) {
      open.delete(directory);
      open.set(directory, file);
    }
    return file;
  };

  const write = async (run: PartitionRun): Promise<void> => {
    let rest = run.batch;
    while (rest.numRows > 0) {
      const file = use(run.directory) ?? (await openFile(run.directory, { ...run.values }));
      const room = resolved.maxRowsPerFile - file.rows;
      const piece = rest.numRows <= room ? rest : rest.slice(0, room);
      rest = piece === rest ? rest.slice(rest.numRows) : rest.slice(room);
      await file.push(piece);
      rows += piece.numRows;
      if (file.rows >= resolved.maxRowsPerFile || file.bytes >= resolved.maxBytesPerFile) void finish(run.directory, file);
    }
  };
  const progress = () => onProgress?.({ rows: rows + (held?.rows ?? 0), bytes: doneBytes + [...open.values()].reduce((n, f) => n + f.bytes, 0), files: part });

  try {
    for await (const batch of input.batches) {
      signal?.throwIfAborted();
      if (batch.numRows === 0) continue;
      // A partition whose file was finished to make room waits for the end (HeldPartitions).
      for (const run of split.split(batch)) if (!(await held?.take(run))) await write(run);
      progress();
    }
    signal?.throwIfAborted();
    if (held) {
      for await (const run of held.drain()) {
        signal?.throwIfAborted();
        await write(run);
      }
      progress();
    }
    // An empty, unpartitioned result still gets one file, so readers see the columns.
    if (part === 0 && resolved.partitionBy.length === 0 && from.emptyFile) await openFile('', {});
    for (const [directory, file] of [...open]) void finish(directory, file);
    const settled = await Promise.allSettled(finishing);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return [...from.resumed, ...settled.map((s) => (s as PromiseFulfilledResult<FileEntry>).value)];
  } catch (error) {
    // Settle every writer before the transaction is aborted (their uploads must not outlive it).
    await Promise.allSettled([...[...open.values()].map((f) => f.fail(error)), ...finishing]);
    throw error;
  } finally {
    await held?.close();
  }
}

function checkColumns(schema: Schema, resolved: ResolvedOutput): void {
  const names = new Set(schema.fields.map((f) => f.name));
  const issues = resolved.partitionBy
    .map((column, i) => ({ column, i }))
    .filter(({ column }) => !names.has(column))
    .map(({ column, i }) => ({
      path: `partition_by[${i}]`,
      message: `no such column in the result (columns: ${[...names].join(', ')})`,
      value: column,
    }));
  if (resolved.partitionBy.length > 0 && !resolved.keepPartitionColumns && resolved.partitionBy.length === schema.fields.length) {
    issues.push({ path: 'partition_by', message: 'at least one column must stay in the data files', value: resolved.partitionBy.join(',') });
  }
  if (issues.length > 0) throw new ConfigError('output', issues);
}

function attemptId(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
