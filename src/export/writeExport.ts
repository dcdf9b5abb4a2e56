import { randomBytes } from 'node:crypto';
import type { RecordBatch, Schema } from 'apache-arrow';
import { ConfigError, type Destination, type Format, type Transaction } from '../kit/index.ts';
import { ManifestInvalidError, RowCountMismatchError } from './errors.ts';
import { describeSchema, encodeManifest, MANIFEST_NAME, type Manifest, manifestSchema, SUCCESS_NAME } from './manifest.ts';
import { partFileName } from './partFileName.ts';
import { type FileEntry, PartFile } from './partFile.ts';
import { HeldPartitions } from './heldPartitions.ts';
import { type PartitionRun, partitioner } from './partitions.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import {
  encodeJournal,
  fileEntryOf,
  type Journal,
  type JournalPart,
  layoutFingerprint,
  parseJournal,
  resumableLayout,
  resumablePrefix,
} from './journal.ts';

/** What the pipeline hands over: one schema, batches that all use it, and the execution's identity. */
export interface ExportInput {
  schema: Schema;
  batches: AsyncIterable<RecordBatch>;
  meta: ExportMeta;
}

export interface ExportMeta {
  executionId: string;
  queryId?: number;
  parameters?: Record<string, unknown>;
  endedAt?: string;
  /** When given, the export fails and commits nothing unless exactly this many rows were written. */
  totalRowCount?: number;
  /** Rows per page of the read feeding the export; kept in the resume journal (see `openExport`). */
  pageSize?: number;
  /**
   * What besides the execution decides the files (the caller's result shaping and output options),
   * recorded in the manifest: a later export of the same execution can only be skipped when it matches.
   */
  fingerprint?: string;
}

export interface ExportProgress {
  rows: number;
  bytes: number;
  files: number;
}

export interface WriteExportOptions {
  signal?: AbortSignal;
  onProgress?: (progress: ExportProgress) => void;
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
  /** The manifest as written, or undefined for a single-stream destination. */
  manifest?: Manifest;
}

/**
 * Writes one result to an output `resolveOutput` checked: create the destination -> stage every file -> check
 * the row count -> commit (files, then `_manifest.json`, then `_SUCCESS`) -> close. Any
 * failure, including an error from `input.batches` or `signal` aborting, settles every
 * in-flight write, discards what was staged and rethrows: nothing new becomes visible.
 */
export async function writeExport(input: ExportInput, output: ResolvedOutput, options: WriteExportOptions = {}): Promise<ExportSummary> {
  const opened = await openExport(output, input.meta, options);
  return opened.write(input, options);
}

export interface OpenExportOptions {
  signal?: AbortSignal;
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
  write(input: ExportInput, options?: Pick<WriteExportOptions, 'onProgress' | 'signal'>): Promise<ExportSummary>;
  /** Gives up before writing: discards the staging area (kept on a stop, see `keepOnStop`), closes the destination. */
  discard(reason?: unknown): Promise<void>;
}

/**
 * Opens an export of a resolved output: create the destination -> begin its transaction, and with
 * `resume`, recover what a killed run with the same attempt id staged.
 *
 * Guarantee of resume: a part is kept only if the journal lists it (written after the part was
 * synced or uploaded), it still exists with the recorded size, the journal names the same
 * execution and the same layout (format, options, rows per file), and every part before it is
 * kept too. Part k of a row-rolled, unpartitioned output holds rows [k * max, (k + 1) * max) of
 * the execution's result, which is the same on every read, so the kept parts plus the parts
 * written from `startRow` on are byte for byte what one uninterrupted run writes, provided
 * batches are cut at the same rows (read on the same page grid: `pageSize`). Outputs rolled by
 * bytes or partitioned start from row 0 (their staging is emptied and rewritten).
 */
export async function openExport(resolved: ResolvedOutput, meta: Pick<ExportMeta, 'executionId'>, options: OpenExportOptions = {}): Promise<OpenedExport> {
  const format = resolved.format.create(resolved.formatConfig);
  const destination = resolved.sink.create(resolved.sinkConfig);
  const { signal } = options;
  const resumable = options.resume !== undefined && destination.multiFile && resumableLayout(resolved);
  let tx: Transaction;
  try {
    signal?.throwIfAborted();
    const previous = destination.multiFile ? await previousFiles(destination, signal) : [];
    tx = await destination.begin({ attemptId: options.resume?.attemptId ?? attemptId(), previous, markers: [SUCCESS_NAME, MANIFEST_NAME], resume: resumable, ...(signal ? { signal } : {}) });
  } catch (error) {
    await destination.close();
    throw error;
  }
  const layout = layoutFingerprint(resolved);
  const partName = (part: number) => partFileName(meta.executionId, part, format.extension);
  const journaling = resumable && tx.saveJournal !== undefined && tx.retain !== undefined;
  let kept: JournalPart[] = [];
  let pageSize: number | undefined;
  try {
    if (tx.journal !== undefined && tx.retain) {
      const journal = parseJournal(tx.journal);
      const usable = journaling && journal !== undefined && journal.execution_id === meta.executionId && journal.layout === layout;
      const candidates = usable ? resumablePrefix(journal, partName, resolved.maxRowsPerFile) : [];
      const intact = new Set(await tx.retain(candidates.map((p) => ({ name: p.path, bytes: p.bytes }))));
      const firstMissing = candidates.findIndex((p) => !intact.has(p.path));
      kept = firstMissing === -1 ? candidates : candidates.slice(0, firstMissing);
      pageSize = journal?.page_size ?? undefined;
    }
  } catch (error) {
    await tx.abort(error);
    await destination.close();
    throw error;
  }

  /** Ends without committing: keeps what is resumable when the caller asked to stop, else discards. */
  const end = (reason: unknown): Promise<void> =>
    journaling && options.keepOnStop?.aborted === true && tx.suspend !== undefined ? tx.suspend() : tx.abort(reason);
  const startRow = kept.reduce((n, p) => n + p.rows, 0);
  const resumedFiles = kept.map(fileEntryOf);
  let used = false;
  return {
    startRow,
    pageSize: kept.length > 0 ? pageSize : undefined,
    resumedFiles,
    async write(input, writeOptions = {}) {
      if (used) throw new Error('openExport: write or discard may be called once');
      used = true;
      const signal = writeOptions.signal ?? options.signal;
      try {
        checkColumns(input.schema, resolved);
        signal?.throwIfAborted();
        const journal: Journal = { version: 1, execution_id: input.meta.executionId, layout, page_size: input.meta.pageSize ?? null, parts: [...kept] };
        let saving = Promise.resolve();
        const record = journaling
          ? (part: JournalPart): Promise<void> => {
              // One save at a time, each with every part complete so far, in part order.
              saving = saving.then(() => {
                journal.parts.push(part);
                journal.parts.sort((a, b) => a.first_row - b.first_row);
                return tx.saveJournal!(encodeJournal(journal));
              });
              return saving;
            }
          : undefined;
        const files = await writeFiles(input, resolved, format, tx, { ...writeOptions, signal }, { startRow, startPart: kept.length, resumed: resumedFiles, record });
        const rows = files.reduce((n, f) => n + f.rows, 0);
        if (input.meta.totalRowCount !== undefined && rows !== input.meta.totalRowCount) {
          throw new RowCountMismatchError(input.meta.executionId, input.meta.totalRowCount, rows);
        }
        signal?.throwIfAborted();
        const manifest = buildManifest(input, resolved, files);
        await tx.commit(
          destination.multiFile
            ? [
                { name: MANIFEST_NAME, body: encodeManifest(manifest), contentType: 'application/json' },
                { name: SUCCESS_NAME, body: new Uint8Array(), contentType: 'text/plain' },
              ]
            : [],
        );
        return {
          url: destination.url,
          rows,
          bytes: manifest.total_bytes,
          files,
          resumedFiles: resumedFiles.length,
          resumedRows: startRow,
          ...(destination.multiFile ? { manifest } : {}),
        };
      } catch (error) {
        await end(error);
        throw error;
      } finally {
        await destination.close();
      }
    },
    async discard(reason) {
      if (used) return;
      used = true;
      try {
        await end(reason);
      } finally {
        await destination.close();
      }
    },
  };
}

interface Resumed {
  /** Rows (of the result) the kept parts hold: the first batch is row `startRow`. */
  readonly startRow: number;
  readonly startPart: number;
  readonly resumed: readonly FileEntry[];
  /** Records a complete part in the journal; the part counts as written once this resolves. */
  readonly record: ((part: JournalPart) => Promise<void>) | undefined;
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
    if (part === 0 && resolved.partitionBy.length === 0) await openFile('', {});
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

async function previousFiles(destination: Destination, signal?: AbortSignal): Promise<string[]> {
  const bytes = await destination.read(MANIFEST_NAME, signal);
  if (bytes === undefined) return [];
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new ManifestInvalidError(destination.url, `not JSON: ${(error as Error).message}`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) throw new ManifestInvalidError(destination.url, parsed.error.issues[0]?.message ?? 'unexpected shape');
  return [...parsed.data.files.map((f) => f.path), MANIFEST_NAME, SUCCESS_NAME];
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

function buildManifest(input: ExportInput, resolved: ResolvedOutput, files: FileEntry[]): Manifest {
  return {
    version: 1,
    execution_id: input.meta.executionId,
    query_id: input.meta.queryId ?? null,
    parameters: input.meta.parameters ?? null,
    ended_at: input.meta.endedAt ?? null,
    fingerprint: input.meta.fingerprint ?? null,
    written_at: new Date().toISOString(),
    format: resolved.format.type,
    partition_by: [...resolved.partitionBy],
    total_rows: files.reduce((n, f) => n + f.rows, 0),
    total_bytes: files.reduce((n, f) => n + f.bytes, 0),
    files,
    schema: describeSchema(input.schema),
  };
}

function attemptId(): string {
  return `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}
