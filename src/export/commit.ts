import type { Destination, Transaction } from '../kit/index.ts';
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
  publish(tx: Transaction, content: Manifest, previous: Commit | undefined): Promise<Commit>;
  /** Completes `commit` where a kill cut its publishing short (a record written, a later one not). */
  finish?(destination: Destination, commit: Commit, signal?: AbortSignal): Promise<void>;
}
