import { constants, zstdDecompressSync } from 'node:zlib';

/**
 * Zstandard bodies DuckDB reads as they came off the wire (RFC 8878). DuckDB's CSV reader does not
 * tell a stream cut short from a whole one: it reads the blocks that are there, and a page cut at
 * a block's end loses its last rows without an error. So a body is walked first, block header to
 * block header (a few dozen per page, no decompression), and must end exactly where its last
 * frame does.
 */

const FRAME_MAGIC = 0xfd2fb528;
/** Skippable frames: magic numbers 0x184D2A50 to 0x184D2A5F, then a 4-byte length. */
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const DICTIONARY_ID_BYTES = [0, 1, 2, 4] as const;
const CONTENT_SIZE_BYTES = [0, 2, 4, 8] as const;

/** Why `body` is not whole zstd (frames that end where the body ends), or undefined when it is. */
export function zstdIncomplete(body: Uint8Array): string | undefined {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (body.length === 0) return 'the body is empty';
  let at = 0;
  while (at < body.length) {
    if (at + 4 > body.length) return `${body.length - at} bytes after the last frame`;
    const magic = view.getUint32(at, true);
    if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      if (at + 8 > body.length) return 'a skippable frame cut short';
      at += 8 + view.getUint32(at + 4, true);
      if (at > body.length) return 'a skippable frame cut short';
      continue;
    }
    if (magic !== FRAME_MAGIC) return `no zstd frame at byte ${at}`;
    const end = frameEnd(view, at + 4);
    if (typeof end === 'string') return end;
    at = end;
  }
  return undefined;
}

/** The byte after the frame whose header starts at `at` (after the magic number), or why it is cut short. */
function frameEnd(view: DataView, start: number): number | string {
  if (start >= view.byteLength) return 'a frame header cut short';
  const descriptor = view.getUint8(start);
  const singleSegment = (descriptor & 0x20) !== 0;
  const checksum = (descriptor & 0x04) !== 0;
  const contentSizeFlag = descriptor >> 6;
  const contentSizeBytes = contentSizeFlag === 0 && singleSegment ? 1 : CONTENT_SIZE_BYTES[contentSizeFlag as 0 | 1 | 2 | 3];
  let at = start + 1 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[(descriptor & 0x03) as 0 | 1 | 2 | 3] + contentSizeBytes;
  for (;;) {
    if (at + 3 > view.byteLength) return `a block header cut short at byte ${at}`;
    const header = view.getUint8(at) | (view.getUint8(at + 1) << 8) | (view.getUint8(at + 2) << 16);
    const last = (header & 1) === 1;
    const type = (header >> 1) & 3;
    const size = header >>> 3;
    if (type === 3) return `a reserved block type at byte ${at}`;
    // An RLE block holds one byte, repeated `size` times.
    at += 3 + (type === 1 ? 1 : size);
    if (at > view.byteLength) return `a block cut short (it ends at byte ${at} of ${view.byteLength})`;
    if (last) break;
  }
  at += checksum ? 4 : 0;
  return at > view.byteLength ? 'the frame checksum cut short' : at;
}

/**
 * The start of a zstd body, decoded: at least `bytes` of it (or all of it). Only the blocks needed
 * are decoded, the compressed bytes read in growing steps.
 */
export function zstdHead(body: Uint8Array, bytes: number): Buffer {
  for (let take = 64 * 1024; ; take *= 4) {
    const whole = take >= body.length;
    const out = zstdDecompressSync(body.subarray(0, Math.min(take, body.length)), whole ? {} : { finishFlush: constants.ZSTD_e_flush });
    if (whole || out.length >= bytes) return out.subarray(0, Math.min(out.length, bytes));
  }
}
