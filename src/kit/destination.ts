import type { z } from 'zod';

/**
 * Where the bytes land. The seam is deliberately small: store named byte streams inside a
 * transaction that becomes visible all at once (or as close to that as the store allows; each
 * sink documents its guarantee), read back one small named object (the previous manifest), and
 * close. Names are `/`-separated relative paths such as `day=2024-01-01/part-00000-x.parquet`.
 */
export interface Destination {
  /** Where this destination points, for messages: `file:///tmp/out`, `s3://bucket/prefix`. */
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
  begin(options: BeginOptions): Promise<Transaction>;
  close(): Promise<void>;
}

export interface BeginOptions {
  /** Identifies this attempt (used in staging names); unique per run. */
  readonly attemptId: string;
  readonly previous: readonly string[];
  readonly signal?: AbortSignal;
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
   */
  commit(markers: readonly Marker[]): Promise<void>;
  /** Discards everything written; settles in-flight work first. Never throws. */
  abort(reason?: unknown): Promise<void>;
}

export interface WriteOptions {
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

export interface Marker {
  readonly name: string;
  readonly body: Uint8Array;
  readonly contentType?: string;
}

export interface SinkDescriptor<C extends z.ZodType = z.ZodType> {
  readonly type: string;
  readonly description: string;
  /** Strict config schema; the only field shared by convention is `url`. */
  readonly config: C;
  /** Which destination URLs this sink serves (`s3://...`, a local path, `-`). */
  accepts(url: string): boolean;
  /** May do I/O lazily; creating a client must not contact the store. */
  create(config: z.output<C>): Destination;
}

export function defineSink<C extends z.ZodType>(descriptor: SinkDescriptor<C>): SinkDescriptor<C> {
  return Object.freeze(descriptor);
}
