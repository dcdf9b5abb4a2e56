import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { Format } from '../../kit/index.ts';
import { Channel } from '../channel.ts';
import { RowCountMismatchError } from '../errors.ts';
import { partitioner } from '../partitions.ts';
import { decodeAvroFile, encodeAvroFile, type ManifestEntry, manifestEntrySchema, type ManifestFile, manifestFileSchema, partitionAvroType, type PartitionSpecField } from './avro.ts';
import { IcebergCatalogError } from './catalog/catalogErrors.ts';
import { IcebergCommitConflictError, IcebergMetadataError, IcebergNotATableError, IcebergPartitionError } from './errors.ts';
import { encodeMetadata, METADATA_DIR, metadataFileName, parseMetadata, type Snapshot, SUMMARY_CURSOR, SUMMARY_EXECUTION_ID, SUMMARY_FINGERPRINT, type TableMetadata, VERSION_HINT, versionOf } from './metadata.ts';
import type { TablePointer, TableStorage } from './storage.ts';
import { prepareSchema, type PreparedSchema } from './tableSchema.ts';
import { toTableBatch } from './convert.ts';
import { typeText } from './types.ts';

/**
 * `append` adds a snapshot with this run's files; `replace` replaces the table's data in one
 * snapshot (Iceberg's `overwrite` operation). The same two words as every output's `mode`.
 */
export type IcebergMode = 'append' | 'replace';

export interface IcebergTableInput {
  schema: Schema;
  batches: AsyncIterable<RecordBatch>;
  meta: {
    executionId: string;
    /** What besides the execution decides the rows (result shaping, output options); recorded in the snapshot summary. */
    fingerprint?: string;
    /** When given, nothing is committed unless exactly this many rows were written. */
    totalRowCount?: number;
    /** An incremental job's cursor state (JSON), recorded in the snapshot summary with the rows it covers. */
    cursor?: string;
  };
}

export interface IcebergTableOptions {
  storage: TableStorage;
  /** The Parquet format (Iceberg data files here are Parquet). */
  format: Format;
  /** `append` adds a snapshot with this run's files; `replace` replaces the table's data in one snapshot (operation `overwrite`). */
  mode: IcebergMode;
  /** Identity partition spec; data files go to Hive-style `data/col=value/` directories. */
  partitionBy?: readonly string[];
  maxRowsPerFile?: number;
  maxOpenFiles?: number;
  /** Commits tried before giving up to concurrent writers (default 4). */
  commitAttempts?: number;
  signal?: AbortSignal;
  onProgress?: (progress: { rows: number; bytes: number; files: number }) => void;
}

export interface IcebergDataFile {
  /** Relative to the table location. */
  readonly path: string;
  readonly rows: number;
  readonly bytes: number;
  readonly partition: Readonly<Record<string, string | null>>;
}

export interface IcebergCommitSummary {
  readonly url: string;
  /** True when the table's snapshots already hold this execution with this fingerprint: nothing was written. */
  readonly skipped: boolean;
  readonly snapshotId: string;
  /** The metadata file that is now current, relative to the table location. */
  readonly metadataFile: string;
  readonly rows: number;
  readonly bytes: number;
  readonly files: readonly IcebergDataFile[];
  /** Commit attempts (more than one when a concurrent writer committed first). */
  readonly attempts: number;
}

export const DEFAULT_COMMIT_ATTEMPTS = 4;

export interface LoadedTable {
  /** The path table's version (v<N>); 0 for a catalog's table. */
  readonly version: number;
  /** The current metadata file: relative to the table for a path table, a catalog's metadata location. */
  readonly file: string;
  readonly metadata: TableMetadata | undefined;
  /** A catalog's table not created yet: the uuid and location its staged creation gave. */
  readonly staged?: { readonly uuid: string; readonly location: string } | undefined;
  /** Storage credentials a catalog vended for the table's location (S3), when it did. */
  readonly credentials?: VendedCredentials | undefined;
}

/** Short-lived S3 credentials a catalog hands out for one table (`s3.access-key-id` and friends). */
export interface VendedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

/** The path table's pointer: `metadata/v<N+1>.metadata.json` created only if absent, then the hint. */
export function pathPointer(storage: TableStorage): TablePointer {
  return {
    target: (base) => metadataFileName(base.version + 1),
    load: (signal) => loadTable(storage, signal),
    async swap(base, next, signal) {
      const file = metadataFileName(base.version + 1);
      if (!(await storage.createIfAbsent(file, encodeMetadata(next), signal))) return undefined;
      await writeHint(storage, base.version + 1);
      return file;
    },
  };
}

/**
 * Writes one result as a new snapshot of an Iceberg (format v2) table: load the current metadata
 * -> check the schema and partition spec -> stage the Parquet files and a manifest -> write a
 * manifest list and `metadata/v<N+1>.metadata.json`, created only if absent. A writer that loses
 * that race re-reads the table and commits again on top (append and replace both commute with
 * a concurrent append), up to `commitAttempts`. Any failure removes what this run staged: the
 * table stays at its previous snapshot. Re-running an execution with the same fingerprint that a
 * snapshot already records is a no-op.
 */
export async function writeIcebergTable(input: IcebergTableInput, options: IcebergTableOptions): Promise<IcebergCommitSummary> {
  const { storage, signal } = options;
  const url = storage.url;
  const partitionBy = options.partitionBy ?? [];
  const base = await loadTable(storage, signal);
  const done = committed(base, input.meta, options.mode);
  if (done) return skipped(url, base, done);

  const schema = prepareSchema(input.schema, base.metadata, url, base.file);
  const spec = partitionSpec(schema, partitionBy, base.metadata, url);
  const runId = randomBytes(4).toString('hex');
  const staged: string[] = [];
  try {
    const files = await writeDataFiles(input, options, schema, spec, runId, staged);
    const rows = files.reduce((n, f) => n + f.rows, 0);
    if (input.meta.totalRowCount !== undefined && rows !== input.meta.totalRowCount) {
      throw new RowCountMismatchError(input.meta.executionId, input.meta.totalRowCount, rows);
    }
    const summary = await commitSnapshot(storage, { base, result: input.schema, schema, spec, partitionBy, files, meta: input.meta, mode: options.mode, commitAttempts: options.commitAttempts, signal });
    if (summary.skipped) await storage.delete(staged).catch(() => undefined);
    return summary;
  } catch (error) {
    await storage.delete(staged).catch(() => undefined);
    throw error;
  }
}

/** What `commitSnapshot` makes a snapshot of: data files already stored, checked against the table as loaded. */
export interface SnapshotChange {
  /** The table as it was when the files were written (their field ids come from its schema). */
  readonly base: LoadedTable;
  /** The result's Arrow schema (checked again if a concurrent writer changed the table). */
  readonly result: Schema;
  readonly schema: PreparedSchema;
  readonly spec: Spec;
  readonly partitionBy: readonly string[];
  /** The data files, paths relative to the table location, with their Hive partition text. */
  readonly files: readonly { readonly path: string; readonly rows: number; readonly bytes: number; readonly partition: Readonly<Record<string, string | null>> }[];
  readonly meta: IcebergTableInput['meta'];
  readonly mode: IcebergMode;
  readonly commitAttempts?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Commits data files (already stored under the table location) as one snapshot: an Avro manifest
 * and manifest list under `metadata/`, then `metadata/v<N+1>.metadata.json`, created only if absent.
 * A commit lost to a concurrent writer re-reads the table and commits again on top, up to
 * `commitAttempts`; when the table meanwhile holds this execution (the same fingerprint), nothing
 * is committed and the summary says `skipped` (the caller removes its data files). Whatever this
 * writes under `metadata/` is removed again when it fails; the data files are the caller's.
 */
export async function commitSnapshot(storage: TableStorage, change: SnapshotChange, pointer: TablePointer = pathPointer(storage)): Promise<IcebergCommitSummary> {
  const { signal, meta, mode } = change;
  const url = storage.url;
  let { base, schema, spec } = change;
  const snapshotId = BigInt(randomInt(1, 2 ** 47)) * 64n + BigInt(randomInt(0, 64));
  const files = change.files.map((f) => ({ ...f, values: spec.values(f.partition) }));
  const rows = files.reduce((n, f) => n + f.rows, 0);
  const bytes = files.reduce((n, f) => n + f.bytes, 0);
  const staged: string[] = [];
  try {
    const ownManifest = await writeManifest(storage, { files, snapshotId, schema, spec, signal }, staged);

    const attempts = change.commitAttempts ?? DEFAULT_COMMIT_ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      const sequence = (base.metadata?.['last-sequence-number'] ?? 0) + 1;
      const parent = base.metadata?.snapshots?.find((s) => String(s['snapshot-id']) === String(base.metadata?.['current-snapshot-id']));
      const carried = mode === 'append' && parent ? await readManifestList(storage, parent['manifest-list'], url) : [];
      const own = ownManifestFile(ownManifest, spec.id, sequence, snapshotId);
      const list = [own, ...carried];
      const listName = `${METADATA_DIR}/snap-${snapshotId}-${attempt}-${randomUUID()}.avro`;
      staged.push(listName);
      await storage.put(
        listName,
        await encodeAvroFile(manifestFileSchema, list, {
          'snapshot-id': String(snapshotId),
          'parent-snapshot-id': parent ? String(parent['snapshot-id']) : 'null',
          'sequence-number': String(sequence),
          'format-version': '2',
        }),
        { contentType: 'avro/binary', ...(signal ? { signal } : {}) },
      );
      const next = nextMetadata(base, {
        url,
        schema,
        spec,
        snapshotId,
        sequence,
        parent,
        manifestList: `${url}/${listName}`,
        summary: snapshotSummary(mode, meta, { files: files.length, rows, bytes }, list, parent),
      });
      const lost = pointer.target(base);
      const file = await pointer.swap(base, next, signal);
      if (file !== undefined) {
        return { url, skipped: false, snapshotId: String(snapshotId), metadataFile: file, rows, bytes, files: files.map(({ values: _, ...f }) => f), attempts: attempt };
      }
      // Lost the race: another writer committed first. Re-read, then commit on top.
      await storage.delete([listName]);
      staged.pop();
      if (attempt >= attempts) throw new IcebergCommitConflictError(url, lost, attempt);
      base = await pointer.load(signal);
      const now = committed(base, meta, mode);
      if (now) {
        await storage.delete(staged).catch(() => undefined);
        return skipped(url, base, now);
      }
      const again = prepareSchema(change.result, base.metadata, url, base.file);
      if (!sameIds(again, schema)) {
        // The concurrent writer added columns with the ids this run's files already carry.
        throw new IcebergCommitConflictError(url, lost, attempt);
      }
      schema = again;
      spec = partitionSpec(schema, change.partitionBy, base.metadata, url);
    }
  } catch (error) {
    // A commit whose outcome is unknown may have made these part of the table.
    if (!(error instanceof IcebergCatalogError && error.unknownOutcome)) await storage.delete(staged).catch(() => undefined);
    throw error;
  }
}

/** This snapshot's manifest of its data files, written under metadata/ (its name added to `staged`). */
async function writeManifest(
  storage: TableStorage,
  what: { files: readonly (SnapshotChange['files'][number] & { values: ManifestEntry['data_file']['partition'] })[]; snapshotId: bigint; schema: SnapshotChange['schema']; spec: SnapshotChange['spec']; signal: AbortSignal | undefined },
  staged: string[],
): Promise<{ path: string; length: bigint; files: number; rows: bigint }> {
  const { files, snapshotId, schema, spec, signal } = what;
  const url = storage.url;
  const manifestName = `${METADATA_DIR}/${randomUUID()}-m0.avro`;
  const manifestBytes = await encodeAvroFile(
    manifestEntrySchema(spec.avro),
    files.map((f): ManifestEntry => ({
      status: 1,
      snapshot_id: snapshotId,
      sequence_number: null,
      file_sequence_number: null,
      data_file: { content: 0, file_path: `${url}/${f.path}`, file_format: 'PARQUET', partition: f.values, record_count: BigInt(f.rows), file_size_in_bytes: BigInt(f.bytes) },
    })),
    {
      schema: JSON.stringify(schema.table),
      'schema-id': String(schema.table['schema-id']),
      'partition-spec': JSON.stringify(spec.fields),
      'partition-spec-id': String(spec.id),
      'format-version': '2',
      content: 'data',
    },
  );
  staged.push(manifestName);
  await storage.put(manifestName, manifestBytes, { contentType: 'avro/binary', ...(signal ? { signal } : {}) });
  return { path: `${url}/${manifestName}`, length: BigInt(manifestBytes.byteLength), files: files.length, rows: BigInt(files.reduce((n, f) => n + f.rows, 0)) };
}

/** The manifest list's entry of this snapshot's own manifest. */
function ownManifestFile(manifest: { path: string; length: bigint; files: number; rows: bigint }, specId: number, sequence: number, snapshotId: bigint): ManifestFile {
  return {
    manifest_path: manifest.path,
    manifest_length: manifest.length,
    partition_spec_id: specId,
    content: 0,
    sequence_number: BigInt(sequence),
    min_sequence_number: BigInt(sequence),
    added_snapshot_id: snapshotId,
    added_files_count: manifest.files,
    existing_files_count: 0,
    deleted_files_count: 0,
    added_rows_count: manifest.rows,
    existing_rows_count: 0n,
    deleted_rows_count: 0n,
  };
}

export function skipped(url: string, base: LoadedTable, snapshot: Snapshot): IcebergCommitSummary {
  return { url, skipped: true, snapshotId: String(snapshot['snapshot-id']), metadataFile: base.file, rows: 0, bytes: 0, files: [], attempts: 0 };
}

/** The snapshot that already holds this execution with this fingerprint, if any. */
export function committed(base: LoadedTable, meta: IcebergTableInput['meta'], mode: IcebergMode): Snapshot | undefined {
  const metadata = base.metadata;
  if (!metadata?.snapshots) return undefined;
  const byId = new Map(metadata.snapshots.map((s) => [String(s['snapshot-id']), s]));
  const matches = (s: Snapshot) => s.summary[SUMMARY_EXECUTION_ID] === meta.executionId && s.summary[SUMMARY_FINGERPRINT] === (meta.fingerprint ?? '');
  let snapshot = byId.get(String(metadata['current-snapshot-id']));
  // Replace: only if the current data is that export. Append: if any snapshot still in the table's history added it.
  while (snapshot) {
    if (matches(snapshot)) return snapshot;
    if (mode === 'replace' || snapshot.summary.operation === 'overwrite') return undefined;
    snapshot = snapshot['parent-snapshot-id'] === undefined ? undefined : byId.get(String(snapshot['parent-snapshot-id']));
  }
  return undefined;
}

/**
 * `version-hint.text` is for readers that do not list (icebird, DuckDB); the vN file alone is the
 * commit. A concurrent writer may put an older number after ours, so after writing, look again and
 * put the newest version seen until it stays (the last writer to finish leaves the newest). Best
 * effort: the commit has happened whatever becomes of the hint.
 */
export async function writeHint(storage: TableStorage, version: number): Promise<void> {
  try {
    let hinted = version;
    for (let i = 0; i < 3; i++) {
      await storage.put(VERSION_HINT, new TextEncoder().encode(String(hinted)), { contentType: 'text/plain' });
      const newest = Math.max(...(await storage.list(`${METADATA_DIR}/`)).map((n) => versionOf(n) ?? 0));
      if (newest <= hinted) return;
      hinted = newest;
    }
  } catch {
    // The hint is only a hint.
  }
}

/** Names sluice gives a table's files before any commit names them: writers' leases, resume journals, data files. */
const UNCOMMITTED = /^(?:\.sluice-(?:journal-[A-Za-z0-9._-]+\.json|lease-[A-Za-z0-9._~-]+)|data\/(?:[^/]+=[^/]*\/)*part-\d{5,}-[^/]+\.parquet)$/;

export async function loadTable(storage: TableStorage, signal?: AbortSignal, tries = 3): Promise<LoadedTable> {
  const names = await storage.list(`${METADATA_DIR}/`, signal);
  const versions = names.map(versionOf).filter((v): v is number => v !== undefined);
  if (versions.length === 0) {
    // What a first export stopped before its commit left (its journal, its data files) is not foreign.
    const anything = (names.length > 0 ? names : await storage.list('', signal)).filter((n) => !UNCOMMITTED.test(n));
    if (anything.length > 0) throw new IcebergNotATableError(storage.url, anything.sort()[0]!);
    return { version: 0, file: metadataFileName(0), metadata: undefined };
  }
  const version = Math.max(...versions);
  const file = metadataFileName(version);
  const bytes = await storage.read(file, signal);
  // Listed but gone (removed between the two calls): look again, a few times.
  if (bytes === undefined) {
    if (tries <= 1) throw new IcebergMetadataError(storage.url, file, 'listed but could not be read');
    return loadTable(storage, signal, tries - 1);
  }
  return { version, file, metadata: parseMetadata(bytes, storage.url, file) };
}

export async function readManifestList(storage: TableStorage, location: string, url: string): Promise<ManifestFile[]> {
  const name = location.startsWith(`${url}/`) ? location.slice(url.length + 1) : undefined;
  const bytes = name === undefined ? undefined : await storage.read(name);
  if (bytes === undefined) throw new IcebergNotATableError(url, `${location} (the current snapshot's manifest list, missing or outside the table)`);
  return (await decodeAvroFile(bytes)) as unknown as ManifestFile[];
}

export interface Spec {
  readonly id: number;
  readonly fields: PartitionSpecField[];
  readonly avro: { field: PartitionSpecField; avroType: unknown }[];
  /** Partition column -> value from its Hive text. */
  readonly values: (text: Readonly<Record<string, string | null>>) => Record<string, unknown>;
}

const PARTITION_FIELD_BASE = 1000;

export function partitionSpec(schema: PreparedSchema, partitionBy: readonly string[], base: TableMetadata | undefined, url: string): Spec {
  const fields: PartitionSpecField[] = [];
  const avro: Spec['avro'] = [];
  const parsers: ((text: string) => unknown)[] = [];
  for (const [i, column] of partitionBy.entries()) {
    const field = schema.fields.find((f) => f.name === column);
    if (!field) throw new IcebergPartitionError(url, `partition_by[${i}]: no column ${column} in the result`);
    const before = schema.promoted.get(column);
    // The table's partition values keep the source's type: its manifests would disagree about it.
    if (before !== undefined) {
      throw new IcebergPartitionError(url, `partition_by[${i}]: column ${column} is ${typeText(before)} in the table and ${typeText(field.type)} in this result; a partition column keeps its type: cast it back to ${typeText(before)} in the query`);
    }
    const avroType = partitionAvroType(field.type);
    if (avroType === undefined) {
      throw new IcebergPartitionError(url, `partition_by[${i}]: column ${column} is ${typeText(field.type)}; identity partitions take boolean, int, long, string or date columns`);
    }
    const specField = { 'source-id': field.id, 'field-id': PARTITION_FIELD_BASE + i, name: column, transform: 'identity' };
    fields.push(specField);
    avro.push({ field: specField, avroType });
    parsers.push(partitionParser(field.type as string));
  }
  let id = 0;
  if (base) {
    const current = base['partition-specs'].find((s) => s['spec-id'] === base['default-spec-id']);
    const same = current !== undefined && JSON.stringify(current.fields.map(specKey)) === JSON.stringify(fields.map(specKey));
    if (!same) {
      const had = current?.fields.map((f) => `${f.name} (${f.transform})`).join(', ') || 'none';
      throw new IcebergPartitionError(url, `partition_by [${partitionBy.join(', ')}] differs from the table's partition spec [${had}]; keep the table's partitioning, or write to a new table location`);
    }
    id = current.fields.length === fields.length ? current['spec-id'] : id;
    fields.splice(0, fields.length, ...current.fields);
    avro.forEach((a, i) => (a.field = current.fields[i]!));
  }
  return {
    id,
    fields,
    avro,
    values: (text) => Object.fromEntries(avro.map((a, i) => [a.field.name, text[partitionBy[i]!] == null ? null : parsers[i]!(text[partitionBy[i]!]!)])),
  };
}

const specKey = (f: PartitionSpecField) => `${f['source-id']}:${f.transform}:${f.name}`;

function partitionParser(type: string): (text: string) => unknown {
  switch (type) {
    case 'boolean':
      return (t) => t === 'true';
    case 'int':
      return (t) => Number(t);
    case 'long':
      return (t) => BigInt(t);
    case 'date':
      return (t) => {
        const m = /^(-?\d+)-(\d\d)-(\d\d)$/.exec(t)!;
        const date = new Date(0);
        date.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
        return Math.round(date.getTime() / 86_400_000);
      };
    default:
      return (t) => t;
  }
}

function sameIds(a: PreparedSchema, b: PreparedSchema): boolean {
  return a.fileSchema.fields.every((f, i) => f.metadata.get('PARQUET:field_id') === b.fileSchema.fields[i]!.metadata.get('PARQUET:field_id')) && JSON.stringify(a.fields) === JSON.stringify(b.fields);
}

interface StagedFile extends IcebergDataFile {
  readonly values: Record<string, unknown>;
}

async function writeDataFiles(
  input: IcebergTableInput,
  options: IcebergTableOptions,
  schema: PreparedSchema,
  spec: Spec,
  runId: string,
  staged: string[],
): Promise<StagedFile[]> {
  const { storage, format, signal } = options;
  const partitionBy = options.partitionBy ?? [];
  const maxRows = options.maxRowsPerFile ?? Number.POSITIVE_INFINITY;
  const maxOpen = options.maxOpenFiles ?? 16;
  // Iceberg data files keep every column (engines read identity partition values from the files too).
  const split = partitioner(input.schema, partitionBy, true);
  const safeId = input.meta.executionId.replace(/[^A-Za-z0-9._-]/g, '_');

  interface Open {
    name: string;
    text: Record<string, string | null>;
    channel: Channel<RecordBatch>;
    rows: number;
    stored: Promise<number>;
  }
  const open = new Map<string, Open>();
  const finishing: Promise<StagedFile>[] = [];
  let part = 0;
  let rows = 0;
  let bytes = 0;

  const openFile = async (directory: string, text: Record<string, string | null>): Promise<Open> => {
    const lru = open.size >= maxOpen ? [...open.entries()][0] : undefined;
    if (lru) await finish(lru[0], lru[1]);
    const file = `part-${String(part++).padStart(5, '0')}-${safeId}-${runId}.parquet`;
    const name = directory === '' ? `data/${file}` : `data/${directory}/${file}`;
    staged.push(name);
    const channel = new Channel<RecordBatch>();
    const stored = storage.put(name, format.encode(schema.fileSchema, channel, signal), { contentType: format.contentType, ...(signal ? { signal } : {}) });
    stored.catch((error: unknown) => channel.cancel(error));
    const entry = { name, text, channel, rows: 0, stored };
    open.set(directory, entry);
    return entry;
  };
  const finish = (directory: string, file: Open): Promise<StagedFile> => {
    open.delete(directory);
    file.channel.close();
    const done = file.stored.then((size) => {
      bytes += size;
      return { path: file.name, rows: file.rows, bytes: size, partition: file.text, values: spec.values(file.text) };
    });
    done.catch(() => undefined);
    finishing.push(done);
    return done;
  };
  try {
    for await (const batch of input.batches) {
      signal?.throwIfAborted();
      if (batch.numRows === 0) continue;
      for (const run of split.split(batch)) {
        let rest = toTableBatch(run.batch, schema.fileSchema, schema.columns);
        while (rest.numRows > 0) {
          let file = open.get(run.directory);
          if (file) {
            open.delete(run.directory);
            open.set(run.directory, file);
          } else file = await openFile(run.directory, { ...run.values });
          const room = maxRows - file.rows;
          const piece = rest.numRows <= room ? rest : rest.slice(0, room);
          rest = rest.slice(piece.numRows);
          file.rows += piece.numRows;
          await file.channel.push(piece);
          rows += piece.numRows;
          if (file.rows >= maxRows) void finish(run.directory, file);
        }
      }
      options.onProgress?.({ rows, bytes, files: part });
    }
    signal?.throwIfAborted();
    for (const [directory, file] of [...open]) void finish(directory, file);
    const settled = await Promise.allSettled(finishing);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<StagedFile>).value);
  } catch (error) {
    for (const file of open.values()) file.channel.fail(error);
    await Promise.allSettled([...[...open.values()].map((f) => f.stored), ...finishing]);
    throw error;
  }
}

function snapshotSummary(
  mode: IcebergMode,
  meta: IcebergTableInput['meta'],
  added: { files: number; rows: number; bytes: number },
  list: readonly ManifestFile[],
  parent: Snapshot | undefined,
): Record<string, string> {
  const totalFiles = list.reduce((n, m) => n + m.added_files_count + m.existing_files_count, 0);
  const totalRows = list.reduce((n, m) => n + m.added_rows_count + m.existing_rows_count, 0n);
  const summary: Record<string, string> = {
    operation: mode === 'append' ? 'append' : 'overwrite',
    'added-data-files': String(added.files),
    'added-records': String(added.rows),
    'added-files-size': String(added.bytes),
    'total-data-files': String(totalFiles),
    'total-records': String(totalRows),
    'total-delete-files': '0',
    'total-position-deletes': '0',
    'total-equality-deletes': '0',
    [SUMMARY_EXECUTION_ID]: meta.executionId,
    [SUMMARY_FINGERPRINT]: meta.fingerprint ?? '',
    ...(meta.cursor === undefined ? {} : { [SUMMARY_CURSOR]: meta.cursor }),
  };
  if (mode === 'replace' && parent) {
    if (parent.summary['total-data-files'] !== undefined) summary['deleted-data-files'] = parent.summary['total-data-files'];
    if (parent.summary['total-records'] !== undefined) summary['deleted-records'] = parent.summary['total-records'];
  }
  return summary;
}

function nextMetadata(
  base: LoadedTable,
  change: {
    url: string;
    schema: PreparedSchema;
    spec: Spec;
    snapshotId: bigint;
    sequence: number;
    parent: Snapshot | undefined;
    manifestList: string;
    summary: Record<string, string>;
  },
): TableMetadata {
  const now = Date.now();
  const previous = base.metadata;
  const snapshot: Snapshot = {
    'snapshot-id': change.snapshotId,
    ...(change.parent ? { 'parent-snapshot-id': change.parent['snapshot-id'] } : {}),
    'sequence-number': change.sequence,
    'timestamp-ms': now,
    'manifest-list': change.manifestList,
    summary: change.summary as Snapshot['summary'],
    'schema-id': change.schema.table['schema-id'],
  };
  const schemas = previous ? [...previous.schemas] : [];
  if (change.schema.changed) schemas.push(change.schema.table);
  return {
    ...(previous ?? {}),
    'format-version': 2,
    'table-uuid': previous?.['table-uuid'] ?? randomUUID(),
    location: previous?.location ?? change.url,
    'last-sequence-number': change.sequence,
    'last-updated-ms': now,
    'last-column-id': change.schema.lastColumnId,
    'current-schema-id': change.schema.table['schema-id'],
    schemas,
    'default-spec-id': change.spec.id,
    'partition-specs': previous?.['partition-specs'] ?? [{ 'spec-id': change.spec.id, fields: change.spec.fields }],
    'last-partition-id': Math.max(previous?.['last-partition-id'] ?? 999, ...change.spec.fields.map((f) => f['field-id'])),
    'default-sort-order-id': 0,
    'sort-orders': (previous as Record<string, unknown> | undefined)?.['sort-orders'] ?? [{ 'order-id': 0, fields: [] }],
    properties: previous?.properties ?? { 'write.format.default': 'parquet' },
    'current-snapshot-id': change.snapshotId,
    snapshots: [...(previous?.snapshots ?? []), snapshot],
    'snapshot-log': [...(previous?.['snapshot-log'] ?? []), { 'timestamp-ms': now, 'snapshot-id': change.snapshotId }],
    'metadata-log': previous ? [...(previous['metadata-log'] ?? []), { 'timestamp-ms': previous['last-updated-ms'], 'metadata-file': `${change.url}/${base.file}` }] : [],
    refs: { ...(previous?.refs ?? {}), main: { 'snapshot-id': change.snapshotId, type: 'branch' } },
  } as TableMetadata;
}
