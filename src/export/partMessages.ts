import type { RangeReader } from '../pipeline/stream.ts';
import type { SentError } from '../threads/threadErrors.ts';

/**
 * The messages between an export's thread and its part threads, apart from the code of either
 * side: a part thread loads this, not the owning side's (partWorkers.ts and what it imports).
 */

/**
 * Encoded chunks a part thread may send ahead of what the destination has taken: with `CHUNK_BYTES`
 * each, the bound on a part's bytes in flight between the threads (the encoder's own unit of work,
 * a row group, comes on top, in the part thread).
 */
export const CHUNKS_IN_FLIGHT = 4;
/** Encoded bytes gathered into one message: fewer, larger hand-overs. */
export const CHUNK_BYTES = 1 << 20;

/** The output format, as a part thread loads it: the module exporting its descriptor, and the checked config. */
export interface PartFormat {
  readonly module: string;
  readonly type: string;
  readonly config: unknown;
}

/** A part to write, as a part thread receives it. */
export interface PartJob {
  readonly type: 'part';
  readonly id: number;
  readonly read: Pick<RangeReader, 'connection' | 'executionId' | 'options'>;
  /** The export's Arrow schema as an IPC stream (no batches): the files carry its metadata. */
  readonly schema: Uint8Array;
  readonly format: PartFormat;
  readonly firstRow: number;
  readonly rows: number;
}

/** Load the format's code now (a thread started ahead of its first part): the first part then only works. */
export interface WarmUp {
  readonly type: 'warm';
  readonly format: PartFormat;
}

export type ToPartThread = PartJob | WarmUp | { readonly type: 'ack'; readonly id: number; readonly acked: number };

export type FromPartThread =
  | { readonly type: 'chunk'; readonly id: number; readonly bytes: Uint8Array }
  | { readonly type: 'page'; readonly id: number; readonly rows: number; readonly bytes: number; readonly httpBytes: number; readonly wireBytes: number }
  | { readonly type: 'done'; readonly id: number; readonly rows: number }
  | { readonly type: 'error'; readonly id: number; readonly error: SentError };
