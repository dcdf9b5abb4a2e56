import type { RecordBatch, Schema } from 'apache-arrow';
import type { BeginOptions, Destination, Transaction } from './destination.ts';
import type { Manifest } from './manifest.ts';
import type { FileEntry } from './partFile.ts';

/**
 * Where an incremental job stands, kept in the commit of each output (the manifest; a table format's
 * snapshot summary), so the state travels with the data: it is written exactly when the rows it
 * covers become visible, and a lost state directory neither re-exports nor skips rows.
 */
export interface CursorState {
  /** The result column the job orders its rows by. */
  readonly column: string;
  /** Its type as the service declared it (`column_types`). */
  readonly type: string;
  /** The highest value committed so far, as exact text. */
  readonly value: string;
  /**
   * With `lookback` and `key`: `[cursor value, key]` of every committed row whose cursor lies within
   * the lookback of `value`, so rows read again are recognised. Bounded by the lookback window.
   */
  readonly window?: readonly (readonly [cursor: string, key: string])[];
}

/** A column of a committed output, as the service typed it. */
export interface CommittedColumn {
  readonly name: string;
  /** The service type (`column_types`), or the Arrow type when the writer did not know it. */
  readonly type: string;
}

/**
 * The committed output at a destination, as a commit protocol reads it back: which execution it
 * holds, written how, and every name it owns there.
 */
export interface Commit {
  readonly executionId: string;
  /** `ExportMeta.fingerprint` of the export that wrote it (null when none was given). */
  readonly fingerprint: string | null;
  readonly rows: number;
  readonly bytes: number;
  /** Its data files, relative to the destination. */
  readonly files: readonly string[];
  /** Every name it owns at the destination: the data files, then the protocol's records. */
  readonly owns: readonly string[];
  /** The version of its record (S3 ETag, a content hash on disk): a new commit replaces it only if unchanged. */
  readonly version: string | undefined;
  /** The job that wrote it (`ExportMeta.job`), when its record says. */
  readonly job?: string | undefined;
  /** Format and Hive partition columns of its files: appending needs the same. */
  readonly layout?: { readonly format: string; readonly partitionBy: readonly string[] } | undefined;
  /** Its columns, for the schema check of a later append. */
  readonly columns?: readonly CommittedColumn[] | undefined;
  /**
   * A table format's current schema, its columns in the table's own type names (Iceberg `long`,
   * `decimal(18, 4)`): what the next result is compared with before any page is fetched (schema drift).
   */
  readonly tableColumns?: readonly CommittedColumn[] | undefined;
  /** An incremental job's high-water mark, committed with the rows it covers. */
  readonly cursor?: CursorState | undefined;
  /** Its data files with sizes and checksums, when the record lists them (what an append carries over). */
  readonly entries?: readonly FileEntry[] | undefined;
  /** A table format's name for it, for summaries: the snapshot id. */
  readonly snapshot?: string;
  /** A sharded export's run id and shard count, when its record says. */
  readonly shards?: { readonly runId: string; readonly count: number } | undefined;
}

/** The schema a protocol's data files are written with, and each result batch converted to it. */
export interface PreparedData {
  readonly schema: Schema;
  convert(batch: RecordBatch): RecordBatch;
}

/**
 * How an export becomes visible, and how the next run finds it: manifest + `_SUCCESS` is one
 * implementation (`manifestCommit`); a table format (an Iceberg `vN.metadata.json`, a Delta log entry)
 * is another. `writeExport` stages the data files, then hands their description to `publish`.
 */
export interface CommitProtocol {
  readonly type: string;
  /**
   * Names of the protocol's own records at the destination, most telling first. A destination that
   * must overwrite in place an object the committed output lists removes these first, so a failure
   * leaves no commit rather than one describing changed objects.
   */
  readonly records: readonly string[];
  /** The committed output at `destination`, undefined when there is none; throws when one exists but cannot be read. */
  read(destination: Destination, signal?: AbortSignal): Promise<Commit | undefined>;
  /**
   * Makes `content` (every data file already written to `tx`) the committed output, replacing
   * `previous` only if it is still the committed one (otherwise `PreconditionFailedError`, nothing
   * published). Ends `tx` by committing it. With `content.mode` 'append', `content.files` are this
   * run's files only and the new commit holds `previous`'s files as well (a table format: an append
   * snapshot); `content.incremental`, when set, is recorded so that `read` returns it as `cursor`.
   */
  publish(tx: Transaction, content: Manifest, previous: Commit | undefined, destination: Destination): Promise<Commit>;
  /**
   * Optional: the commit at `destination` that holds `executionId` written with `fingerprint`, when
   * it is still part of the output, else undefined. Without it the skip check compares the current
   * commit (`read`); an appending table format also finds an earlier snapshot still in the table.
   */
  find?(destination: Destination, executionId: string, fingerprint: string, signal?: AbortSignal): Promise<Commit | undefined>;
  /** Completes `commit` where a kill cut its publishing short (a record written, a later one not). */
  finish?(destination: Destination, commit: Commit, signal?: AbortSignal): Promise<void>;
  /**
   * Optional, for a protocol whose commits keep earlier data files (a table format: older snapshots
   * stay readable, appends add to them): the transaction the data files are written in, instead of
   * `destination.begin`, which replaces the whole output.
   */
  begin?(destination: Destination, options: BeginOptions, previous: Commit | undefined): Promise<Transaction>;
  /**
   * Optional: the data files' schema for this result against the committed output (a table format's
   * field ids and stored types). Throws, before anything is written, when the result cannot go there.
   */
  prepare?(schema: Schema, previous: Commit | undefined): PreparedData;
  /**
   * Optional: what can be checked before an execution is spent: that what is at the destination is
   * an output this protocol can commit on top of. Throws an error naming the place and what to do.
   */
  check?(destination: Destination, signal?: AbortSignal): Promise<void>;
  /**
   * True when `check` also checks the destination itself, with the storage credentials the commit
   * will write with (an Iceberg catalog's vended ones): the sink's own `check` is then not run first.
   */
  readonly checksDestination?: boolean;
}
