/**
 * The few storage calls an Iceberg commit needs. Names are `/`-separated and relative to the
 * table's location. `createIfAbsent` is the commit point: it must be atomic against another
 * writer (exclusive create on disk, `If-None-Match: *` on S3), or two commits can both win.
 */
export interface TableStorage {
  /** The table's location as engines address it: `file:///srv/lake/events`, `s3://bucket/lake/events`. */
  readonly url: string;
  /** A small object's bytes, or undefined when it does not exist. */
  read(name: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /** Every name under `prefix` ('' for all), in no particular order. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  /** Stores `body` under `name` unless something is already there; false when it was. */
  createIfAbsent(name: string, body: Uint8Array, signal?: AbortSignal): Promise<boolean>;
  /** Stores (or replaces) an object; a stream is written as it comes, and appears only once complete. */
  put(name: string, body: Uint8Array | AsyncIterable<Uint8Array>, options?: { contentType?: string; signal?: AbortSignal }): Promise<number>;
  /** Removes objects; missing ones are fine. */
  delete(names: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where a table's current metadata is kept and how a commit swaps it: the one thing the path and the
 * catalog commits do differently. The path pointer creates `metadata/v<N+1>.metadata.json` only if
 * absent; a REST catalog takes the change with its requirements (`assert-table-uuid`,
 * `assert-ref-snapshot-id`). Everything else (data files, manifests, the snapshot) is written once.
 */
export interface TablePointer {
  /** How messages name what a commit on top of `base` goes to: the next metadata file, or the table in its catalog. */
  target(base: import('./writeIcebergTable.ts').LoadedTable): string;
  /**
   * The table as it is now (`metadata` undefined: no table yet). `create`: what a write needs may be
   * made (a catalog's namespace); without it loading changes nothing (`--plan`).
   */
  load(signal?: AbortSignal, options?: { create?: boolean }): Promise<import('./writeIcebergTable.ts').LoadedTable>;
  /**
   * Makes `next` the table's current metadata if the table is still `base`. Returns the new current
   * metadata's name (relative to the table, or a catalog's metadata location), or undefined when
   * another writer committed first (the caller reloads and commits again on top).
   */
  swap(base: import('./writeIcebergTable.ts').LoadedTable, next: import('./metadata.ts').TableMetadata, signal?: AbortSignal): Promise<string | undefined>;
}
