import { randomBytes } from 'node:crypto';
import type { RecordBatch, Schema } from 'apache-arrow';
import { ConfigError, type Destination, type Format, type Transaction } from '../kit/index.ts';
import { ManifestInvalidError, RowCountMismatchError } from './errors.ts';
import { describeSchema, encodeManifest, MANIFEST_NAME, type Manifest, manifestSchema, SUCCESS_NAME } from './manifest.ts';
import { partFileName } from './partFileName.ts';
import { type FileEntry, PartFile } from './partFile.ts';
import { partitioner } from './partitions.ts';
import { builtins, type Registry, resolveOutput, type ResolvedOutput } from './outputConfig.ts';

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
}

export interface ExportProgress {
  rows: number;
  bytes: number;
  files: number;
}

export interface WriteExportOptions {
  signal?: AbortSignal;
  onProgress?: (progress: ExportProgress) => void;
  registry?: Registry;
}

export interface ExportSummary {
  /** Where the export was committed (`file:///...`, `s3://bucket/prefix`, `stdout:`). */
  url: string;
  rows: number;
  bytes: number;
  files: FileEntry[];
  /** The manifest as written, or undefined for a single-stream destination. */
  manifest?: Manifest;
}

/**
 * Writes one result: validate (pure) -> create the destination -> stage every file -> check
 * the row count -> commit (files, then `_manifest.json`, then `_SUCCESS`) -> close. Any
 * failure, including an error from `input.batches` or `signal` aborting, settles every
 * in-flight write, discards what was staged and rethrows: nothing new becomes visible.
 */
export async function writeExport(input: ExportInput, output: unknown, options: WriteExportOptions = {}): Promise<ExportSummary> {
  const resolved = resolveOutput(output, options.registry ?? builtins);
  checkColumns(input.schema, resolved);
  const format = resolved.format.create(resolved.formatConfig);
  const destination = resolved.sink.create(resolved.sinkConfig);
  const { signal } = options;
  try {
    signal?.throwIfAborted();
    const previous = destination.multiFile ? await previousFiles(destination, signal) : [];
    const tx = await destination.begin({ attemptId: attemptId(), previous, ...(signal ? { signal } : {}) });
    try {
      const files = await writeFiles(input, resolved, format, tx, options);
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
      return { url: destination.url, rows, bytes: manifest.total_bytes, files, ...(destination.multiFile ? { manifest } : {}) };
    } catch (error) {
      await tx.abort(error);
      throw error;
    }
  } finally {
    await destination.close();
  }
}

async function writeFiles(
  input: ExportInput,
  resolved: ResolvedOutput,
  format: Format,
  tx: Transaction,
  options: WriteExportOptions,
): Promise<FileEntry[]> {
  const { signal, onProgress } = options;
  const split = partitioner(input.schema, resolved.partitionBy);
  const open = new Map<string, PartFile>();
  const finishing: Promise<FileEntry>[] = [];
  let part = 0;
  let rows = 0;
  let doneBytes = 0;

  const openFile = (directory: string, values: Record<string, string | null>): PartFile => {
    const name = partFileName(input.meta.executionId, part++, format.extension, directory);
    const file = new PartFile(tx, format, split.dataSchema, name, values, signal);
    open.set(directory, file);
    return file;
  };
  const finish = (directory: string, file: PartFile): void => {
    open.delete(directory);
    const done = file.finish().then((entry) => {
      doneBytes += entry.bytes;
      return entry;
    });
    done.catch(() => undefined); // awaited below; this only keeps an early failure from going unhandled
    finishing.push(done);
  };

  try {
    for await (const batch of input.batches) {
      signal?.throwIfAborted();
      if (batch.numRows === 0) continue;
      for (const run of split.split(batch)) {
        let rest = run.batch;
        while (rest.numRows > 0) {
          const file = open.get(run.directory) ?? openFile(run.directory, { ...run.values });
          const room = resolved.maxRowsPerFile - file.rows;
          const piece = rest.numRows <= room ? rest : rest.slice(0, room);
          rest = piece === rest ? rest.slice(rest.numRows) : rest.slice(room);
          await file.push(piece);
          rows += piece.numRows;
          if (file.rows >= resolved.maxRowsPerFile || file.bytes >= resolved.maxBytesPerFile) finish(run.directory, file);
        }
      }
      onProgress?.({ rows, bytes: doneBytes + [...open.values()].reduce((n, f) => n + f.bytes, 0), files: part });
    }
    signal?.throwIfAborted();
    // An empty, unpartitioned result still gets one file, so readers see the columns.
    if (part === 0 && resolved.partitionBy.length === 0) openFile('', {});
    for (const [directory, file] of [...open]) finish(directory, file);
    const settled = await Promise.allSettled(finishing);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<FileEntry>).value);
  } catch (error) {
    // Settle every writer before the transaction is aborted (their uploads must not outlive it).
    await Promise.allSettled([...[...open.values()].map((f) => f.fail(error)), ...finishing]);
    throw error;
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
  if (resolved.partitionBy.length > 0 && resolved.partitionBy.length === schema.fields.length) {
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
