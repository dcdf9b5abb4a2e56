import type { z } from 'zod';
import type { Sink } from './store.ts';

export interface SinkDescriptor<C extends z.ZodType = z.ZodType, S extends Sink = Sink> {
  readonly type: string;
  readonly description: string;
  /** The paths this sink serves, for messages that list the choices: `s3://bucket/prefix`. */
  readonly paths: string;
  /**
   * Strict config schema of everything the sink is given: the output's path as `url`, plus the
   * fields of its options block. Checks across fields (credentials that go together) live here.
   */
  readonly config: C;
  /**
   * The sink's own block in an output (`s3: {region: ...}`): its key and the schema of its fields
   * (what job files, `sluice schema` and editors see). Absent: the sink takes the path alone.
   */
  readonly options?: SinkOptions;
  /** False when the sink stores one stream only (no partitioning, no rolling); default true. */
  readonly multiFile?: boolean;
  /** Which destination URLs this sink serves (`s3://...`, a local path, `-`). */
  accepts(url: string): boolean;
  /** An object store (the commit is built on it in src/export) or a single stream. May do I/O lazily; creating a client must not contact the store. */
  create(config: z.output<C>): S;
}

export interface SinkOptions {
  /** The key of the block in an output, e.g. `s3`. */
  readonly key: string;
  /** Strict object schema of the block, described per field. */
  readonly schema: z.ZodType;
}

export function defineSink<C extends z.ZodType, S extends Sink>(descriptor: SinkDescriptor<C, S>): SinkDescriptor<C, S> {
  return Object.freeze(descriptor);
}
