import type { Schema } from 'apache-arrow';
import type { BeginOptions, Destination, Transaction } from '../destination.ts';
import type { Commit, CommitProtocol, CommittedColumn, CursorState, PreparedData } from '../commit.ts';
import type { Manifest } from '../manifest.ts';
import { decodeAvroFile } from './avro.ts';
import { toTableBatch } from './convert.ts';
import { destinationStorage } from './destinationStorage.ts';
import { type Snapshot, SUMMARY_CURSOR, SUMMARY_EXECUTION_ID, SUMMARY_FINGERPRINT, VERSION_HINT, versionOf } from './metadata.ts';
import type { TablePointer, TableStorage } from './storage.ts';
import type { CatalogConfig, RestCatalogConfig } from './catalog/catalogConfig.ts';
import { IcebergCatalogError } from './catalog/catalogErrors.ts';
import { RestCatalog } from './catalog/restCatalog.ts';
import { restTablePointer } from './catalog/restTable.ts';
import { prepareSchema, type PreparedSchema } from './tableSchema.ts';
import { tableLayout } from './tableLayout.ts';
import { typeText } from './types.ts';
import {
  commitSnapshot,
  committed,
  type IcebergCommitSummary,
  type IcebergDataFile,
  type IcebergMode,
  type LoadedTable,
  pathPointer,
  type SnapshotChange,
  type VendedCredentials,
  partitionSpec,
  readManifestList,
  type Spec,
  writeHint,
} from './writeIcebergTable.ts';

export interface IcebergCommitOptions {
  /** `append`: each export adds a snapshot; `replace`: each export replaces the table's data (an `overwrite` snapshot). */
  readonly mode: IcebergMode;
  /** Identity partition spec of the table (the output's `partition_by`). */
  readonly partitionBy: readonly string[];
  /** Commits tried before giving up to concurrent writers (default 4). */
  readonly commitAttempts?: number;
  /** Where the table's current metadata is kept: its path (default) or an Iceberg REST catalog. */
  readonly catalog?: CatalogConfig | undefined;
  /** Opens the output's destination again with credentials a catalog vended (S3 outputs); without it they are not used. */
  readonly reopen?: ((credentials: VendedCredentials) => Destination) | undefined;
}

/**
 * An Iceberg table as the commit of an export (`table: iceberg`): `writeExport` writes the Parquet
 * data files (partitions, rolling, resume as for any output), this protocol gives them the table's
 * field ids and types (`prepare`), stores them under `data/` beside the files of earlier snapshots
 * (`begin`: in place, never replacing the table), and commits them as one snapshot (`publish`,
 * through `commitSnapshot`, the same commit as `writeIcebergTable`). A failed export removes its data
 * files: the table stays at its previous snapshot.
 *
 * One instance serves one opened output (`commitFor` makes one per call), its exports one after
 * another: `read` remembers the table it loaded, and `prepare` the schema the files are written
 * with, for `publish`.
 */
export function icebergCommit(options: IcebergCommitOptions): CommitProtocol {
  return new IcebergCommit(options);
}

/** The table `read` (or `check`) loaded: where it is stored, its pointer and its current metadata. */
interface LoadedAt {
  readonly storage: TableStorage;
  readonly pointer: TablePointer;
  readonly base: LoadedTable;
}

/** What `prepare` decided for the files of this export: the result's schema and the table's. */
interface Prepared {
  readonly result: Schema;
  readonly schema: PreparedSchema;
  readonly spec: Spec;
}

class IcebergCommit implements CommitProtocol {
  readonly type = 'iceberg';
  /**
   * What marks a folder as a table sluice writes: its metadata, or the data files of a first export
   * stopped before its commit. `check` then reads what is there to be sure. A catalog names its
   * metadata files itself (no version hint).
   */
  readonly records: readonly string[];
  /** A catalog may vend the credentials to write with: the destination is checked with those. */
  readonly checksDestination: boolean;
  readonly #options: IcebergCommitOptions;
  readonly #rest: RestCatalogConfig | undefined;
  /** One catalog client per export: the warehouse prefix is asked once (OAuth2 tokens are shared per process). */
  readonly #catalog: RestCatalog | undefined;
  readonly #vended: VendedDestination;
  #table: LoadedAt | undefined;
  #prepared: Prepared | undefined;

  constructor(options: IcebergCommitOptions) {
    this.#options = options;
    this.#rest = options.catalog?.type === 'rest' ? options.catalog : undefined;
    this.#catalog = this.#rest === undefined ? undefined : new RestCatalog(this.#rest);
    this.#vended = new VendedDestination(options.reopen);
    this.records = this.#rest === undefined ? [VERSION_HINT, 'data/'] : ['metadata/', 'data/'];
    this.checksDestination = this.#rest !== undefined;
  }

  async read(destination: Destination, signal?: AbortSignal): Promise<Commit | undefined> {
    try {
      const { storage, base } = await this.#load(destination, signal);
      if (base.metadata === undefined) return undefined;
      const current = base.metadata.snapshots?.find((s) => String(s['snapshot-id']) === String(base.metadata?.['current-snapshot-id']));
      return await commitOf(storage, base, current);
    } finally {
      await this.#vended.release();
    }
  }

  async find(destination: Destination, executionId: string, fingerprint: string, signal?: AbortSignal): Promise<Commit | undefined> {
    const { storage, base } = await this.#load(destination, signal);
    // The same rule as the commit's own no-op check: in append mode any snapshot since the last overwrite.
    const snapshot = committed(base, { executionId, fingerprint }, this.#options.mode);
    try {
      return snapshot === undefined ? undefined : await commitOf(storage, base, snapshot);
    } finally {
      await this.#vended.release();
    }
  }

  async check(destination: Destination, signal?: AbortSignal): Promise<void> {
    // Before a run: a catalog's namespace is made here, so the table's location is checked (staged) before the query runs.
    await this.#load(destination, signal, true);
    try {
      if (this.#rest !== undefined) await this.#vended.of(destination).check?.(signal, { records: this.records });
    } finally {
      await this.#vended.release();
    }
  }

  async finish(destination: Destination, commit: Commit, signal?: AbortSignal): Promise<void> {
    // A catalog's table is tidied by its commits only: its storage may take the credentials the catalog vends.
    if (this.#rest !== undefined) return;
    // What dead writers of the table left that no snapshot references goes, as after a commit.
    const storage = destinationStorage(destination);
    await destination.sweep?.(async () => undefined, signal, tableLayout(() => storage, this.#pointerOf(storage)));
    // The vN file is the commit; the hint, for readers that do not list, may lag after a kill.
    const version = commit.version === undefined ? undefined : versionOf(commit.version);
    const hint = await storage.read(VERSION_HINT).then((b) => (b ? new TextDecoder().decode(b).trim() : undefined));
    if (version !== undefined && hint !== String(version)) await writeHint(storage, version);
  }

  begin(destination: Destination, beginOptions: BeginOptions): Promise<Transaction> {
    if (this.#table === undefined) throw new Error('icebergCommit: begin before read');
    const { pointer } = this.#table;
    const target = this.#vended.of(destination);
    // A destination that cannot hold a table (stdout) says so here, before anything is written.
    destinationStorage(target);
    // The files of earlier snapshots stay: nothing of the table is replaced, nothing withdrawn.
    return target.begin({ ...beginOptions, previous: [], markers: [] }, tableLayout(() => destinationStorage(this.#vended.of(destination)), pointer));
  }

  prepare(schema: Schema): PreparedData {
    if (this.#table === undefined) throw new Error('icebergCommit: prepare before read');
    const { storage, base, pointer } = this.#table;
    // Messages name the metadata file of a path table, the table in its catalog otherwise.
    const prepSchema = prepareSchema(schema, base.metadata, storage.url, this.#rest === undefined ? base.file : pointer.target(base));
    const spec = partitionSpec(prepSchema, this.#options.partitionBy, base.metadata, storage.url);
    this.#prepared = { result: schema, schema: prepSchema, spec };
    return { schema: prepSchema.fileSchema, convert: (batch) => toTableBatch(batch, prepSchema.fileSchema, prepSchema.columns) };
  }

  async publish(tx: Transaction, content: Manifest, _previous: Commit | undefined, destination: Destination): Promise<Commit> {
    if (this.#table === undefined || this.#prepared === undefined) throw new Error('icebergCommit: publish before read and prepare');
    if (tx.located === undefined) throw new Error('icebergCommit: publish takes the transaction its begin made');
    const files = content.files.map((f) => ({ path: tx.located!(f.path), rows: f.rows, bytes: f.bytes, partition: f.partition }));
    const change = snapshotChange(this.#table.base, this.#prepared, this.#options, files, content);
    const pointer = this.#table.pointer;
    let summary: IcebergCommitSummary | undefined;
    // The snapshot is the commit point of the one transaction: under its lease, its sweep after it.
    // A concurrent writer that committed this very export first makes these files spare (aborted).
    await tx.commit([], async () => {
      summary = await commitSnapshot(destinationStorage(this.#vended.of(destination)), change, pointer).catch((error: unknown) => {
        throw this.#withOrphans(error, files);
      });
      return !summary.skipped;
    });
    await this.#vended.release();
    if (summary === undefined) throw new Error('icebergCommit: the transaction did not publish');
    return snapshotCommit(content, summary, files);
  }

  /** A catalog commit whose outcome is unknown: the table may reference the files, which stay, and the error lists them. */
  #withOrphans(error: unknown, files: readonly { path: string }[]): unknown {
    if (!(error instanceof IcebergCatalogError && error.unknownOutcome)) return error;
    return new IcebergCatalogError('CATALOG_COMMIT_FAILED', this.#catalog?.name ?? '', error.message.replace(/^Iceberg catalog [^:]*: /, ''), { cause: error, unknownOutcome: true, orphans: files.map((f) => f.path) });
  }

  #pointerOf(storage: TableStorage): TablePointer {
    return this.#rest === undefined ? pathPointer(storage) : restTablePointer(this.#rest, storage.url, this.#catalog);
  }

  async #load(destination: Destination, signal?: AbortSignal, create = false): Promise<LoadedAt> {
    const pointer = this.#pointerOf(destinationStorage(destination));
    const base = await pointer.load(signal, { create });
    await this.#vended.use(base.credentials);
    this.#table = { storage: destinationStorage(this.#vended.of(destination)), pointer, base };
    return this.#table;
  }
}

/**
 * The output's destination opened with the credentials the catalog vended, when it vended some:
 * opened when first needed, closed after each read-only call (a plan's) and after the commit.
 */
class VendedDestination {
  readonly #reopen: IcebergCommitOptions['reopen'];
  #credentials: VendedCredentials | undefined;
  #open: Destination | undefined;

  constructor(reopen: IcebergCommitOptions['reopen']) {
    this.#reopen = reopen;
  }

  /** Takes the credentials the table was loaded with: other ones close what the previous opened. */
  async use(credentials: VendedCredentials | undefined): Promise<void> {
    if (JSON.stringify(credentials) !== JSON.stringify(this.#credentials)) await this.release();
    this.#credentials = credentials;
  }

  /** The destination to write with: reopened with the vended credentials, or `destination` itself. */
  of(destination: Destination): Destination {
    if (this.#credentials !== undefined && this.#reopen !== undefined) this.#open ??= this.#reopen(this.#credentials);
    return this.#open ?? destination;
  }

  async release(): Promise<void> {
    const open = this.#open;
    this.#open = undefined;
    await open?.close();
  }
}


/** The snapshot this export adds: its files, its schema and spec, and the summary that names the export. */
function snapshotChange(base: LoadedTable, prepared: Prepared, options: IcebergCommitOptions, files: IcebergDataFile[], content: Manifest): SnapshotChange {
  return {
    base,
    result: prepared.result,
    schema: prepared.schema,
    spec: prepared.spec,
    partitionBy: options.partitionBy,
    files,
    meta: {
      executionId: content.execution_id,
      ...(content.fingerprint === null ? {} : { fingerprint: content.fingerprint }),
      // The high-water mark only: a key window (lookback) is refused for Iceberg outputs, a summary is no place for it.
      ...(content.incremental === null ? {} : { cursor: JSON.stringify({ column: content.incremental.column, type: content.incremental.type, value: content.incremental.value }) }),
    },
    mode: options.mode,
    commitAttempts: options.commitAttempts,
  };
}

/** The commit a published (or skipped: another writer committed this export first) snapshot makes. */
function snapshotCommit(content: Manifest, summary: IcebergCommitSummary, files: readonly IcebergDataFile[]): Commit {
  const paths = summary.skipped ? [] : files.map((f) => f.path);
  return {
    executionId: content.execution_id,
    fingerprint: content.fingerprint,
    rows: summary.skipped ? 0 : summary.rows,
    bytes: summary.bytes,
    files: paths,
    owns: [...paths, summary.metadataFile],
    version: summary.metadataFile,
    snapshot: summary.snapshotId,
  };
}

/** A snapshot as the commit of the export that wrote it: its execution, its rows and the files it added. */
async function commitOf(storage: TableStorage, base: LoadedTable, snapshot: Snapshot | undefined): Promise<Commit> {
  const files = snapshot ? await addedFiles(storage, snapshot) : [];
  return {
    executionId: snapshot?.summary[SUMMARY_EXECUTION_ID] ?? '',
    fingerprint: snapshot?.summary[SUMMARY_FINGERPRINT] || null,
    rows: Number(snapshot?.summary['added-records'] ?? 0),
    bytes: Number(snapshot?.summary['added-files-size'] ?? 0),
    files,
    owns: [...files, base.file],
    version: base.file,
    ...(snapshot ? { snapshot: String(snapshot['snapshot-id']) } : {}),
    cursor: cursorOf(snapshot?.summary[SUMMARY_CURSOR]),
    tableColumns: currentColumns(base),
  };
}

/** The columns of the table's current schema (as the catalog or the metadata file gave it), in Iceberg type names. */
function currentColumns(base: LoadedTable): CommittedColumn[] | undefined {
  const metadata = base.metadata;
  const current = metadata?.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  return current?.fields.map((f) => ({ name: f.name, type: typeText(f.type) }));
}

/** The cursor state a snapshot summary records (undefined: none, or not one this version reads). */
function cursorOf(text: string | undefined): CursorState | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<CursorState>;
    return typeof parsed.column === 'string' && typeof parsed.type === 'string' && typeof parsed.value === 'string' ? { column: parsed.column, type: parsed.type, value: parsed.value } : undefined;
  } catch {
    return undefined;
  }
}

/** The data files `snapshot` added (relative to the table), from its manifest list and its own manifests. */
async function addedFiles(storage: TableStorage, snapshot: Snapshot): Promise<string[]> {
  const manifests = (await readManifestList(storage, snapshot['manifest-list'], storage.url)).filter((m) => String(m.added_snapshot_id) === String(snapshot['snapshot-id']));
  const files: string[] = [];
  for (const manifest of manifests) {
    const name = manifest.manifest_path.startsWith(`${storage.url}/`) ? manifest.manifest_path.slice(storage.url.length + 1) : undefined;
    const bytes = name === undefined ? undefined : await storage.read(name);
    if (bytes === undefined) continue;
    for (const entry of await decodeAvroFile(bytes)) {
      const path = (entry.data_file as { file_path: string }).file_path;
      if (entry.status === 1 && path.startsWith(`${storage.url}/`)) files.push(path.slice(storage.url.length + 1));
    }
  }
  return files;
}
