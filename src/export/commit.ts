import type { RecordBatch, Schema } from 'apache-arrow';
import type { BeginOptions, Destination, Transaction } from '../kit/index.ts';
import type { Manifest } from './manifest.ts';

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
  /** A table format's name for it, for summaries: the snapshot id. */
  readonly snapshot?: string;
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
   * published). Ends `tx` by committing it.
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
}
