import type { CheckOptions, ObjectStore, PutCondition } from '../kit/index.ts';

/**
 * The commit API: what the export, the shards' commit and the table formats write through. It is
 * implemented once over a sink's object store (`storeDestination`), and once for a single-stream
 * sink (`streamDestination`); a sink never implements it. Names are `/`-separated relative paths
 * such as `day=2024-01-01/part-00000-x.parquet`.
 */
export interface Destination {
  /** Where this destination points, for messages: `file:///srv/exports/out`, `s3://bucket/prefix`. */
  readonly url: string;
  /** Whether more than one named stream can be stored (stdout takes exactly one). */
  readonly multiFile: boolean;
  /** Reads a small committed object, or undefined when it does not exist. */
  read(name: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /**
   * Starts a transaction. `previous` lists the names the currently committed output consists
   * of (from its manifest); the destination removes those that the new output does not
   * contain on commit, and never touches them on abort.
   */
  begin(options: BeginOptions, layout?: TableLayout): Promise<Transaction>;
  /**
   * Optional: starts what a transaction with `attemptId` needs before its first write (a writer's
   * lease) while the caller still reads the committed output, so that it costs no time of its own.
   * The next `begin` with that id takes it over; `close` releases it if none did.
   */
  startLease?(attemptId: string): void;
  /**
   * Checks, without writing, what can be known before anything is spent: the place can be written
   * (a folder that exists or can be made, not one full of files sluice did not write), credentials
   * resolve, a bucket answers. Throws `DestinationCheckError`, or `ConfigError` for missing
   * credentials; neither is worth retrying. Optional: without it the first write finds out.
   */
  check?(signal?: AbortSignal, options?: CheckOptions): Promise<void>;
  close(): Promise<void>;
  /**
   * The sink's object store itself, for what a table format keeps outside any transaction (an
   * Iceberg table's metadata, written once under new names, its pointer created only if absent).
   * Undefined for a single-stream sink (stdout), which cannot hold a table.
   */
  readonly store?: ObjectStore;
  /** Reads a small committed object with its version: the token a conditional `publish` compares. */
  readVersioned?(name: string, signal?: AbortSignal): Promise<Versioned | undefined>;
  /**
   * Publishes one small object at once, outside any transaction, only if `condition` holds:
   * `{ ifAbsent: true }` creates it only when no object of that name exists (S3 `If-None-Match: *`,
   * an exclusive create on disk); `{ ifVersion }` replaces it only while it is still the version
   * read (S3 `If-Match: <etag>`). Of two publishers racing on one name, exactly one wins; the other
   * gets a `PreconditionFailedError` and nothing of it is visible. Resolves to the new version.
   */
  publish?(name: string, body: Uint8Array, condition: PublishCondition, options?: PublishOptions): Promise<string>;
  /**
   * Removes what earlier attempts at this place left that the committed output does not list:
   * commit folders and journals of dead writers, parts no commit lists. Never anything a writer
   * still alive may yet commit, nor names sluice did not write (see `sweep` in storage/sweep.ts).
   * `owned` reads the committed output's names (undefined: none); it is read before and after
   * listing, and a commit in between makes the sweep remove nothing. With `layout`, the place is a
   * table and its own rule applies (`owned` unused: the layout reads the committed table).
   */
  sweep?(owned: () => Promise<readonly string[] | undefined>, signal?: AbortSignal, layout?: TableLayout): Promise<void>;
  /**
   * Room for one export written by several processes or machines (shards) and committed once.
   * `id` names the export (the same for every shard of it). Optional: a destination without it
   * cannot be sharded.
   */
  shared?(id: string): SharedArea;
}

/**
 * The staging of a sharded export. Two namespaces: small records (the plan, each shard's journal and
 * record of what it wrote), and data streams (the part files) written under the names they will
 * have in the committed output. Nothing here is visible as output until a commit lists it.
 */
export interface SharedArea {
  /** Where it lives, for messages. */
  readonly url: string;
  /** Creates a record only if none of that name exists; otherwise `PreconditionFailedError`. */
  create(name: string, body: Uint8Array, signal?: AbortSignal): Promise<void>;
  /** Replaces a record whole (a shard's journal); a kill leaves the old one or the new one. */
  save(name: string, body: Uint8Array, signal?: AbortSignal): Promise<void>;
  read(name: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /** Names of the records that start with `prefix`, sorted. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  /** Stores one data stream durably under its final name, replacing what a killed attempt left there. */
  write(name: string, body: AsyncIterable<Uint8Array>, options?: WriteOptions): Promise<WriteResult>;
  /** Size of a complete data stream, undefined when there is none. */
  size(name: string, signal?: AbortSignal): Promise<number | undefined>;
  /**
   * A transaction whose commit publishes `files` (data streams of this area) with what it writes
   * itself, without copying them; its abort never removes them (other committers may need them).
   */
  begin(options: BeginOptions, files: readonly string[]): Promise<Transaction>;
  /** Removes the area's records and what it holds that the committed output does not list. */
  remove(signal?: AbortSignal): Promise<void>;
}

/**
 * How a table format stores a transaction's streams: in place, beside the files of its earlier
 * commits, under names of their own (`located`: the stream's name with a token new for every
 * attempt, kept in its journal for a resume), so no committed file is ever replaced. The sweep
 * removes what a dead writer of the table left that the committed table does not reference
 * (`committed`); nothing of a live writer's.
 */
export interface TableLayout {
  /** The folder the parts are stored under (`data/`). */
  readonly prefix: string;
  located(name: string, token: string): string;
  /** The token of a stored part, undefined for any other name. */
  tokenOf(stored: string): string | undefined;
  /**
   * The committed table: `key` changes with every commit; `references` reads every stored name it
   * references (undefined: it cannot tell, and the sweep removes nothing).
   */
  committed(signal?: AbortSignal): Promise<{ readonly key: string; references(signal?: AbortSignal): Promise<ReadonlySet<string> | undefined> }>;
}

/** A small object and its version (S3 ETag; on disk a hash of the content). */
export interface Versioned {
  readonly body: Uint8Array;
  readonly version: string;
}

/** When a conditional publish may happen: the name is free, or it still holds the version read. */
export type PublishCondition = PutCondition;

export interface PublishOptions {
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

export interface BeginOptions {
  /**
   * Identifies this attempt (used in staging names). Unique per run, or stable across the runs
   * that export one execution to one output (so a killed run's staging area is found again).
   * Staging areas of other attempts at the same place, whose writer is gone, are removed.
   */
  readonly attemptId: string;
  /** What the committed output at this place consists of (its manifest's files and the markers). */
  readonly previous: readonly string[];
  /**
   * The commit markers among `previous`, most telling first (`_SUCCESS`, then `_manifest.json`).
   * A destination that must overwrite, in place, an object the committed output lists removes these
   * first: a failure then leaves no committed output rather than one that lists changed objects.
   */
  readonly markers?: readonly string[];
  readonly signal?: AbortSignal;
  /**
   * Reopen what an earlier attempt with the same `attemptId` staged (it was killed) instead of
   * starting empty: its journal shows up as `Transaction.journal`, and the caller then says with
   * `retain` which of its streams to keep. Without it, that staging area is emptied.
   */
  readonly resume?: boolean;
}

/** A stream an earlier attempt wrote completely, with the size its journal recorded. */
export interface StagedStream {
  readonly name: string;
  readonly bytes: number;
}

export interface WriteResult {
  readonly bytes: number;
}

export interface Transaction {
  /** Stores one stream. Safe to call concurrently for different names. */
  write(name: string, body: AsyncIterable<Uint8Array>, options?: WriteOptions): Promise<WriteResult>;
  /**
   * Publishes every written stream, then `markers` in order (the manifest, then `_SUCCESS`),
   * then removes stale names of the previous output. Call only after every write settled.
   *
   * `publish`, for a table format whose commit point is its own (an Iceberg metadata pointer or
   * catalog commit), replaces the markers: it runs where the first marker would be put, under the
   * writer's lease, and resolves to false when it published nothing (another writer committed this
   * very export: the transaction is then aborted). An error it throws with `unknownOutcome: true`
   * leaves everything written (the table may reference it).
   */
  commit(markers: readonly Marker[], publish?: () => Promise<boolean>): Promise<void>;
  /** Where the stream written as `name` is stored (a table layout's name for it); the name itself otherwise. */
  located?(name: string): string;
  /**
   * Discards everything written (retained streams too); settles in-flight work first. Never throws.
   * `keep`: names not to remove even if this transaction wrote them (another writer's commit, which
   * won a conditional publish, lists them).
   */
  abort(reason?: unknown, keep?: readonly string[]): Promise<void>;
  /**
   * Resume support (all three or none; a destination without them always starts afresh).
   * `journal`: what the killed attempt last saved with `saveJournal` (begin with `resume`).
   */
  readonly journal?: Uint8Array | undefined;
  /**
   * Keeps those streams of the killed attempt that still exist with the recorded size and
   * forgets the rest of what it staged; resolves to the names kept. Call once, before writing,
   * whenever `journal` is set (with [] to keep nothing).
   */
  retain?(streams: readonly StagedStream[]): Promise<string[]>;
  /**
   * Durably replaces this attempt's journal: a small blob the caller owns (which streams are
   * complete), read back by the next `begin` with `resume`. Removed on commit and abort. Calls
   * must not overlap.
   */
  saveJournal?(body: Uint8Array): Promise<void>;
  /**
   * Stops without committing, as a kill would but cleanly: settles in-flight work (an open S3
   * upload is aborted), and leaves the streams the saved journal lists, and the journal, for the
   * next `begin` with this attempt id and `resume`. With no journal saved it is `abort`. For a
   * stop the caller asked for (SIGTERM), so that finished parts survive it. Never throws.
   */
  suspend?(): Promise<void>;
  /**
   * Keeps these committed streams (names the previous output lists) in the output this transaction
   * commits, unchanged: what an append needs. A destination that publishes by swapping a whole
   * directory links them into the new one; an object store simply does not delete them. Call before
   * `commit`. Optional: without it a destination cannot append.
   */
  carry?(names: readonly string[]): Promise<void>;
}

export interface WriteOptions {
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

export interface Marker {
  readonly name: string;
  readonly body: Uint8Array;
  readonly contentType?: string;
  /**
   * Publish this marker only if the condition holds when the commit becomes visible (see
   * `Destination.publish`): the commit then fails with `PreconditionFailedError`, publishing nothing,
   * when another writer committed at the same place since the previous commit was read.
   */
  readonly condition?: PublishCondition;
}

