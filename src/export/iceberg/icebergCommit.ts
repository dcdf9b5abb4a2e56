import type { Schema } from 'apache-arrow';
import type { Destination } from '../destination.ts';
import type { Commit, CommitProtocol, CommittedColumn, CursorState } from '../commit.ts';
import { decodeAvroFile } from './avro.ts';
import { toTableBatch } from './convert.ts';
import { destinationStorage } from './destinationStorage.ts';
import { type Snapshot, SUMMARY_CURSOR, SUMMARY_EXECUTION_ID, SUMMARY_FINGERPRINT, VERSION_HINT, versionOf } from './metadata.ts';
import type { TablePointer, TableStorage } from './storage.ts';
import type { CatalogConfig } from './catalog/catalogConfig.ts';
import { IcebergCatalogError } from './catalog/catalogErrors.ts';
import { RestCatalog } from './catalog/restCatalog.ts';
import { restTablePointer } from './catalog/restTable.ts';
import { prepareSchema, type PreparedSchema } from './tableSchema.ts';
import { tableLayout } from './tableLayout.ts';
import { typeText } from './types.ts';
import { commitSnapshot, committed, type IcebergMode, type LoadedTable, pathPointer, type VendedCredentials, partitionSpec, readManifestList, type Spec, writeHint } from './writeIcebergTable.ts';

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
  let table: { storage: TableStorage; pointer: TablePointer; base: LoadedTable } | undefined;
  let prepared: { result: Schema; schema: PreparedSchema; spec: Spec } | undefined;
  const rest = options.catalog?.type === 'rest' ? options.catalog : undefined;
  // One catalog client per export: the warehouse prefix is asked once (OAuth2 tokens are shared per process).
  const catalog = rest === undefined ? undefined : new RestCatalog(rest);
  const pointerOf = (storage: TableStorage): TablePointer => (rest === undefined ? pathPointer(storage) : restTablePointer(rest, storage.url, catalog));

  // The output's destination opened with the credentials the catalog vended, when it vended some:
  // opened when first needed, closed after each read-only call (a plan's) and after the commit.
  let credentials: VendedCredentials | undefined;
  let vended: Destination | undefined;
  const mine = (destination: Destination) => {
    if (credentials !== undefined && options.reopen !== undefined) vended ??= options.reopen(credentials);
    return vended ?? destination;
  };
  const release = async () => {
    const open = vended;
    vended = undefined;
    await open?.close();
  };

  const load = async (destination: Destination, signal?: AbortSignal, create = false) => {
    const pointer = pointerOf(destinationStorage(destination));
    const base = await pointer.load(signal, { create });
    if (JSON.stringify(base.credentials) !== JSON.stringify(credentials)) await release();
    credentials = base.credentials;
    table = { storage: destinationStorage(mine(destination)), pointer, base };
    return table;
  };

  // What marks a folder as a table sluice writes: its metadata, or the data files of a first export
  // stopped before its commit. `check` then reads what is there to be sure. A catalog names its
  // metadata files itself (no version hint).
  const records = rest === undefined ? [VERSION_HINT, 'data/'] : ['metadata/', 'data/'];

  return {
    type: 'iceberg',
    records,

    async read(destination, signal) {
      try {
        const { storage, base } = await load(destination, signal);
        if (base.metadata === undefined) return undefined;
        const current = base.metadata.snapshots?.find((s) => String(s['snapshot-id']) === String(base.metadata?.['current-snapshot-id']));
        return await commitOf(storage, base, current);
      } finally {
        await release();
      }
    },

    async find(destination, executionId, fingerprint, signal) {
      const { storage, base } = await load(destination, signal);
      // The same rule as the commit's own no-op check: in append mode any snapshot since the last overwrite.
      const snapshot = committed(base, { executionId, fingerprint }, options.mode);
      try {
        return snapshot === undefined ? undefined : await commitOf(storage, base, snapshot);
      } finally {
        await release();
      }
    },

    // A catalog may vend the credentials to write with: the destination is checked with those.
    checksDestination: rest !== undefined,

    async check(destination, signal) {
      // Before a run: a catalog's namespace is made here, so the table's location is checked (staged) before the query runs.
      await load(destination, signal, true);
      try {
        if (rest !== undefined) await mine(destination).check?.(signal, { records });
      } finally {
        await release();
      }
    },

    async finish(destination, commit, signal) {
      // A catalog's table is tidied by its commits only: its storage may take the credentials the catalog vends.
      if (rest !== undefined) return;
      // What dead writers of the table left that no snapshot references goes, as after a commit.
      const storage = destinationStorage(destination);
      await destination.sweep?.(async () => undefined, signal, tableLayout(() => storage, pointerOf(storage)));
      // The vN file is the commit; the hint, for readers that do not list, may lag after a kill.
      const version = commit.version === undefined ? undefined : versionOf(commit.version);
      const hint = await storage.read(VERSION_HINT).then((b) => (b ? new TextDecoder().decode(b).trim() : undefined));
      if (version !== undefined && hint !== String(version)) await writeHint(storage, version);
    },

    begin(destination, beginOptions) {
      if (table === undefined) throw new Error('icebergCommit: begin before read');
      const { pointer } = table;
      const target = mine(destination);
      // A destination that cannot hold a table (stdout) says so here, before anything is written.
      destinationStorage(target);
      // The files of earlier snapshots stay: nothing of the table is replaced, nothing withdrawn.
      return target.begin({ ...beginOptions, previous: [], markers: [] }, tableLayout(() => destinationStorage(mine(destination)), pointer));
    },

    prepare(schema) {
      if (table === undefined) throw new Error('icebergCommit: prepare before read');
      const { storage, base, pointer } = table;
      // Messages name the metadata file of a path table, the table in its catalog otherwise.
      const prepSchema = prepareSchema(schema, base.metadata, storage.url, rest === undefined ? base.file : pointer.target(base));
      const spec = partitionSpec(prepSchema, options.partitionBy, base.metadata, storage.url);
      prepared = { result: schema, schema: prepSchema, spec };
      return { schema: prepSchema.fileSchema, convert: (batch) => toTableBatch(batch, prepSchema.fileSchema, prepSchema.columns) };
    },

    async publish(tx, content, _previous, destination) {
      if (table === undefined || prepared === undefined) throw new Error('icebergCommit: publish before read and prepare');
      if (tx.located === undefined) throw new Error('icebergCommit: publish takes the transaction its begin made');
      const files = content.files.map((f) => ({ path: tx.located!(f.path), rows: f.rows, bytes: f.bytes, partition: f.partition }));
      const change = {
        base: table.base,
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
      let summary: Awaited<ReturnType<typeof commitSnapshot>> | undefined;
      // The snapshot is the commit point of the one transaction: under its lease, its sweep after it.
      // A concurrent writer that committed this very export first makes these files spare (aborted).
      await tx.commit([], async () => {
        summary = await commitSnapshot(destinationStorage(mine(destination)), change, table!.pointer).catch((error: unknown) => {
          if (!(error instanceof IcebergCatalogError && error.unknownOutcome)) throw error;
          // The table may reference them: they stay (the transaction leaves them), and the error lists them.
          throw new IcebergCatalogError('CATALOG_COMMIT_FAILED', catalog?.name ?? '', error.message.replace(/^Iceberg catalog [^:]*: /, ''), { cause: error, unknownOutcome: true, orphans: files.map((f) => f.path) });
        });
        return !summary.skipped;
      });
      await release();
      if (summary === undefined) throw new Error('icebergCommit: the transaction did not publish');
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
      } satisfies Commit;
    },
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
