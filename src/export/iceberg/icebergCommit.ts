import { randomBytes } from 'node:crypto';
import type { Schema } from 'apache-arrow';
import type { BeginOptions, Destination, StagedStream, Transaction, WriteOptions } from '../destination.ts';
import type { Commit, CommitProtocol, CursorState } from '../commit.ts';
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
 * One instance serves one export (`commitFor` makes one per call): `read` remembers the table it
 * loaded, and `prepare` the schema the files are written with, for `publish`.
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

    async finish(destination, commit) {
      if (rest !== undefined) return;
      // The vN file is the commit; the hint, for readers that do not list, may lag after a kill.
      const version = commit.version === undefined ? undefined : versionOf(commit.version);
      const storage = destinationStorage(destination);
      const hint = await storage.read(VERSION_HINT).then((b) => (b ? new TextDecoder().decode(b).trim() : undefined));
      if (version !== undefined && hint !== String(version)) await writeHint(storage, version);
    },

    begin(destination, beginOptions) {
      return tableTransaction(mine(destination), beginOptions);
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
      const own = locations.get(tx);
      if (own === undefined) throw new Error('icebergCommit: publish takes the transaction its begin made');
      const { located, keep } = own;
      const files = content.files.map((f) => ({ path: located(f.path), rows: f.rows, bytes: f.bytes, partition: f.partition }));
      const summary = await commitSnapshot(
        destinationStorage(mine(destination)),
        {
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
        },
        table.pointer,
      ).catch((error: unknown) => {
        if (!(error instanceof IcebergCatalogError && error.unknownOutcome)) throw error;
        // The table may reference them: they stay, and the error lists them.
        keep();
        throw new IcebergCatalogError('CATALOG_COMMIT_FAILED', catalog?.name ?? '', error.message.replace(/^Iceberg catalog [^:]*: /, ''), { cause: error, unknownOutcome: true, orphans: files.map((f) => f.path) });
      });
      // A concurrent writer committed this very export first: the table has it, these files are spare.
      if (summary.skipped) await tx.abort();
      else await tx.commit([]);
      await release();
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
  };
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

/** The names of one export's data files in the table, by the name `writeExport` gave each; `keep` makes abort leave them. */
const locations = new WeakMap<Transaction, { located: (name: string) => string; keep: () => void }>();

const JOURNAL_PREFIX = '.sluice-journal-';

/**
 * The data files of one export, written in place under `data/` (each appears only once complete) and
 * named `<part name>-<token>.<ext>`: the token is new for every attempt (a killed one's too), so no
 * file of an earlier snapshot is ever replaced; a resumed attempt finds its token in its journal.
 * Commit keeps the files (the snapshot lists them); abort removes them. A run killed outright leaves
 * its files unreferenced by any snapshot (orphans, as engines call them), never in the table.
 *
 * Resume: the journal is `<table>/.sluice-journal-<attemptId>.json` (the token and the caller's
 * journal); a part it lists is kept when it exists, which means complete, since a file appears only
 * whole and is journaled only after that.
 */
async function tableTransaction(destination: Destination, options: BeginOptions): Promise<Transaction> {
  const storage = destinationStorage(destination);
  const journalName = `${JOURNAL_PREFIX}${options.attemptId}.json`;
  const saved = options.resume ? parseSaved(await destination.read(journalName, options.signal)) : undefined;
  const token = saved?.token ?? randomBytes(4).toString('hex');
  const located = (name: string): string => `data/${name.replace(/(\.[A-Za-z0-9]+)?$/, (ext) => `-${token}${ext}`)}`;
  const written = new Set<string>();
  const inFlight = new Map<Promise<unknown>, AbortController>();
  let journalSaved = saved !== undefined;
  let kept = false;

  const settle = async (reason: string): Promise<void> => {
    for (const controller of inFlight.values()) controller.abort(new Error(reason));
    await Promise.allSettled([...inFlight.keys()]);
  };
  const abort = async (_reason?: unknown, keep: readonly string[] = []): Promise<void> => {
    await settle('transaction aborted');
    if (kept) return;
    const protect = new Set(keep);
    const ours = [...written].filter((n) => !protect.has(n));
    if (journalSaved) ours.push(journalName);
    await storage.delete(ours).catch(() => undefined);
  };

  const tx: Transaction = {
    journal: saved?.journal,

    async write(name, body, opts: WriteOptions = {}) {
      const physical = located(name);
      const controller = new AbortController();
      const signal = opts.signal ? AbortSignal.any([opts.signal, controller.signal]) : controller.signal;
      written.add(physical);
      const done = storage.put(physical, body, { ...(opts.contentType ? { contentType: opts.contentType } : {}), signal });
      inFlight.set(done, controller);
      try {
        return { bytes: await done };
      } finally {
        inFlight.delete(done);
      }
    },

    async retain(streams: readonly StagedStream[]) {
      const present = new Set(await storage.list('data/', options.signal));
      const kept = streams.filter((s) => present.has(located(s.name))).map((s) => s.name);
      for (const name of kept) written.add(located(name));
      // What the killed attempt wrote beyond them (its token is in the name) is referenced by nothing: drop it.
      const keep = new Set(kept.map(located));
      await storage.delete([...present].filter((n) => n.includes(`-${token}.`) && !keep.has(n)));
      return kept;
    },

    async saveJournal(body) {
      journalSaved = true;
      const record = JSON.stringify({ token, journal: Buffer.from(body).toString('base64') });
      await storage.put(journalName, new TextEncoder().encode(`${record}\n`), { contentType: 'application/json' });
    },

    async commit() {
      await Promise.allSettled([...inFlight.keys()]);
      if (journalSaved) await storage.delete([journalName]).catch(() => undefined);
    },

    abort,

    async suspend() {
      if (!journalSaved) return abort();
      // Finished files and the journal stay for the next attempt with this id.
      await settle('transaction suspended');
    },
  };
  locations.set(tx, { located, keep: () => (kept = true) });
  return tx;
}

function parseSaved(bytes: Uint8Array | undefined): { token: string; journal: Uint8Array } | undefined {
  if (bytes === undefined) return undefined;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { token?: unknown; journal?: unknown };
    if (typeof parsed.token !== 'string' || !/^[0-9a-f]{8}$/.test(parsed.token) || typeof parsed.journal !== 'string') return undefined;
    return { token: parsed.token, journal: new Uint8Array(Buffer.from(parsed.journal, 'base64')) };
  } catch {
    return undefined; // unreadable: start afresh
  }
}

