// When the engine encodes its stored results, and in what sizes: the defaults of the encoding
// settings, and the policy an execution follows (execution/execution.ts) made from them.
import type { EncodePolicy } from '../execution/execution.ts';
import type { EngineCeilings } from '../memory/resourceBounds.ts';
import type { EncodeMode } from './encodings.ts';

/**
 * Results smaller than this (result_set_bytes) are not pre-encoded: their page query costs a few
 * milliseconds, less than writing, syncing and opening the files would.
 */
export const DEFAULT_ENCODE_MIN_BYTES = 64 * 1024;
/** The protocol's default page size (32,000 rows, at most 250,000 values). */
export const defaultArrowChunkRows = (columnCount: number): number => Math.min(32_000, Math.max(1, Math.floor(250_000 / Math.max(1, columnCount))));
/**
 * Results larger than this (result_set_bytes), or of more rows, are encoded in the background
 * when idle, even with encoding at completion: 100M rows of one BIGINT (800 MB) took over 30
 * minutes to encode on a loaded machine (the execution's default timeout), 37 bytes of index a row.
 */
export const ENCODE_AT_COMPLETION_MAX_BYTES = 1024 ** 3;
export const ENCODE_AT_COMPLETION_MAX_ROWS = 10_000_000;
/** Results from this size (result_set_bytes) on are encoded after a trim (execution/execution.ts). */
const TRIM_BEFORE_ENCODING_BYTES = 16 * 1024 * 1024;
/** Results from this size (result_set_bytes) on are encoded in two passes with a trim between them. */
export const ENCODE_APART_BYTES = 64 * 1024 * 1024;

/** The policy of the engine's options: the smallest result encoded, when, and the sizes that change it. */
export function encodePolicy(minBytes: number | undefined, mode: EncodeMode | undefined, ceilings: EngineCeilings | undefined): EncodePolicy {
  return {
    minBytes: minBytes ?? DEFAULT_ENCODE_MIN_BYTES,
    atCompletion: mode === 'at_completion',
    atCompletionMax: {
      bytes: ceilings?.encodeAtCompletionMax?.bytes ?? ENCODE_AT_COMPLETION_MAX_BYTES,
      rows: ceilings?.encodeAtCompletionMax?.rows ?? ENCODE_AT_COMPLETION_MAX_ROWS,
    },
    trimBeforeBytes: ceilings?.trim?.beforeEncodingBytes ?? TRIM_BEFORE_ENCODING_BYTES,
  };
}
