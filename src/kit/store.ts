/**
 * What a sink implements: the native calls of an object store, and nothing of the commit built on
 * them. Staging, journals, resume, appends, the shards' shared area, conditional publishing and
 * sweeping are written once, over this seam, in src/export (`storeDestination`).
 *
 * Names are `/`-separated relative paths such as `day=2024-01-01/part-00000-x.parquet`, relative to
 * the place the sink was configured with. An object appears only whole: a reader (and `get`,
 * `head`, `list`) sees all of its bytes or no object, never a part of a write.
 */
export interface ObjectStore {
  /** Where the store points, for messages: `file:///srv/exports/out`, `s3://bucket/prefix`. */
  readonly url: string;
  /** An object's bytes and version, or undefined when there is none. */
  get(name: string, signal?: AbortSignal): Promise<StoredObject | undefined>;
  /**
   * Stores an object, streamed as it comes, visible only once complete. `condition` makes it
   * conditional: `{ ifAbsent: true }` stores it only if no object of that name exists,
   * `{ ifVersion }` only while the object is still that version; otherwise nothing of it is visible
   * and the call throws `PreconditionFailedError`. Of two writers racing on one name under a
   * condition, exactly one wins.
   */
  put(name: string, body: Uint8Array | AsyncIterable<Uint8Array>, options?: PutOptions): Promise<PutResult>;
  /** An object's size, version and time of its last write, or undefined when there is none. */
  head(name: string, signal?: AbortSignal): Promise<ObjectInfo | undefined>;
  /** The names of every object that starts with `prefix` ('' for all), in no particular order. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  /** Removes objects; missing ones are fine. */
  delete(names: readonly string[], signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
  /**
   * Optional: checks, without writing, what can be known before anything is spent: credentials
   * resolve, the container answers, a folder can be made and holds nothing sluice did not write.
   * Throws `DestinationCheckError`, or `ConfigError` for missing credentials.
   */
  check?(signal?: AbortSignal, options?: CheckOptions): Promise<void>;
  /**
   * Only for a store whose readers list folders (a file system): the output path is a link to one
   * folder of a private area, swapped in one step. Without it the commit publishes in place (the
   * manifest, written conditionally, is the commit point), as on an object store.
   */
  readonly link?: OutputLink;
}

/**
 * The native calls of a file system that make a commit visible at once to a reader listing the
 * output folder: every commit is a folder of its own in `area`, and the output path a symbolic
 * link renamed over the previous one.
 */
export interface OutputLink {
  /**
   * The private area beside the output (`.<name>.sluice/`): commits' folders, journals, records.
   * Its listing may also name each empty folder, as `name/` (`delete` removes it once empty), so a
   * sweep finds the commit folder of a writer killed before its first file.
   */
  readonly area: ObjectStore;
  /** The folder of `area` the output points at now (`v/<id>/`), a folder of an older layout, or undefined: no output. */
  target(signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Points the output at `to` (a folder of `area`) in one step, only while it points at `expected`
   * (undefined: at nothing; `any`: whatever it points at), else `PreconditionFailedError`.
   */
  swap(to: string, expected: string | undefined | typeof ANY_TARGET): Promise<void>;
  /** Makes `names` of the committed output part of the folder `to` too, without copying (hard links). */
  carry(names: readonly string[], to: string): Promise<void>;
}

/** `OutputLink.swap` whatever the output points at (an unconditional commit). */
export const ANY_TARGET: unique symbol = Symbol('any target');

export interface StoredObject {
  readonly body: Uint8Array;
  /** What a conditional put compares: an ETag, a content hash. */
  readonly version: string;
}

export interface ObjectInfo {
  readonly size: number;
  readonly version: string;
  /** Time of the last write, in ms since the epoch (the store's clock). */
  readonly modified: number;
}

/** When a conditional put may happen: the name is free, or it still holds the version read. */
export type PutCondition = { readonly ifAbsent: true } | { readonly ifVersion: string };

export interface PutOptions {
  readonly condition?: PutCondition | undefined;
  readonly contentType?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * `false`: the object need not survive a crash of the machine (a writer's lease, a record a crash
   * makes moot), so a store that syncs its writes to disk may skip that. Default true.
   */
  readonly durable?: boolean | undefined;
}

export interface PutResult {
  readonly bytes: number;
  readonly version: string;
}

export interface CheckOptions {
  /**
   * Names whose presence at the top of the place shows that sluice committed an output there (the
   * commit protocol's records: `_manifest.json`, `_SUCCESS`; an Iceberg table's `metadata/`), so its
   * files are not foreign. Default: the manifest commit's.
   */
  readonly records?: readonly string[];
}

/**
 * A sink of one stream with no commit (standard output): what is written cannot be taken back.
 */
export interface StreamSink {
  readonly url: string;
  readonly stream: true;
  /** Writes the one stream; resolves to its bytes. */
  write(body: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<number>;
  close(): Promise<void>;
}

/** What a sink's `create` makes: an object store, or a single stream. */
export type Sink = ObjectStore | StreamSink;

export function isStreamSink(sink: Sink): sink is StreamSink {
  return 'stream' in sink && sink.stream === true;
}
