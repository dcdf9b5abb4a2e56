// Stored compressed frames of pre-encoded result pages. A page read from the encoded files is a
// head (the JSON text before the rows, the CSV header line, the Arrow schema), a byte range of a
// file that never changes once published, and a tail. That range is compressed once, the first
// time a client asks for it in a coding, and kept as a file; the page is then sent as the head and
// tail around the stored bytes, with its length, and nothing of it is compressed per request.
//
// - gzip: ONE member (gzipMember.ts): the stored raw deflate stream, ended by a sync flush, with
//   the head and tail as stored deflate blocks around it and the combined CRC32 after (several
//   members are valid gzip, but many decoders read only the first).
// - zstd: a stream may hold several frames (RFC 8878 section 3), but Node's decoder (and so our
//   client's and fetch's) stops after the first. So the answer is ONE frame, spliced: the stored
//   frame's header, the head as raw blocks, the stored frame's blocks, and the tail as raw blocks,
//   the last one marked last. That is valid: a frame with no content size and no checksum may
//   hold any blocks up to its window, a raw block changes neither the repeat offsets nor the
//   entropy tables the compressed blocks start from, and their matches reach back only inside
//   the stored content. The stored file is the frame with its last block unmarked.
// - br: brotli streams neither concatenate nor splice at a byte boundary: compressed per request.
//
// A frame is named for its source range (`rows.json.<start>-<end>.zstd`, `.deflate` for gzip), not for a page number,
// so a change of the page size serves no wrong frame: it only stores others.
//
// Crash safety: a frame is written under a scratch name in the results directory (removed at
// start, with every scratch file a crash left), synced, then renamed into the frames directory:
// a frame there is whole. The frames directory lives inside the result's encoding, so it goes when
// the result is dropped.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { crc32, zstdDecompressSync } from 'node:zlib';
import { compressor, type Coding } from './contentCoding.ts';
import { gzipMember, storedDeflate, storedTrailer } from './gzipMember.ts';
import { partsBody, type FileRange, type PartsBody } from './reply.ts';

/** Where a result's frames are kept, and the path prefix a frame is written under first. */
export interface FrameStore {
  dir: string;
  scratch: string;
}

/**
 * A page that can be served from a stored frame: `rows` is a range of the encoded file `file`, open
 * (the caller closes it), or by its path (opened only to write the frame: an Arrow page sent from
 * the encoder's buffers has no file open).
 */
export interface FramedPage {
  store: FrameStore;
  file: 'rows.json' | 'rows.csv' | 'rows.arrow';
  head: string | Uint8Array;
  rows: FileRange | PathRange;
  tail: string | Uint8Array;
}

/** Bytes [start, end) of the file at `path`. */
export interface PathRange {
  path: string;
  start: number;
  end: number;
}

/** What a reply offers the server: its body in `coding` from stored frames, or undefined (compress per request then). */
export type Precompressed = (coding: Coding) => Promise<PartsBody | undefined>;

/** Frames being written by this process, by path: a second reader of the same frame waits for the first. */
const writing = new Map<string, Promise<void>>();

/** The page's body in zstd or gzip from its stored frame, the frame compressed and stored first if it is not yet. */
export function storedFrames(page: FramedPage): Precompressed {
  return async (coding) => {
    if (coding === 'br') return undefined;
    const path = join(page.store.dir, `${page.file}.${page.rows.start}-${page.rows.end}.${coding === 'gzip' ? 'deflate' : coding}`);
    let frame = await openIfStored(path);
    if (frame === undefined) {
      let pending = writing.get(path);
      if (pending === undefined) {
        pending = writeFrame(page, coding, path).finally(() => writing.delete(path));
        writing.set(path, pending);
      }
      await pending;
      frame = await open(path, 'r');
    }
    try {
      return coding === 'zstd' ? await splicedZstd(page, frame) : await gzipMember(bytesOf(page.head), frame, page.rows.end - page.rows.start, bytesOf(page.tail));
    } catch (err) {
      await frame.close();
      throw err;
    }
  };
}

/** zstd: magic number, frame header descriptor, window descriptor (what checkZstdFrame lets through). */
const ZSTD_HEADER_BYTES = 6;
const ZSTD_MAGIC = 0xfd2fb528;
/** Raw blocks hold at most this (RFC 8878 Block_Maximum_Size: the window, up to 128 KiB). */
const ZSTD_BLOCK_MAX = 128 * 1024;

async function splicedZstd(page: FramedPage, frame: FileHandle): Promise<PartsBody> {
  const { size } = await frame.stat();
  const header = Buffer.allocUnsafe(ZSTD_HEADER_BYTES);
  const { bytesRead } = await frame.read(header, 0, ZSTD_HEADER_BYTES, 0);
  if (bytesRead !== ZSTD_HEADER_BYTES) throw new Error(`stored zstd frame of ${size} bytes has no header`);
  const wd = header[5]!;
  const windowLog = 10 + (wd >> 3);
  const window = 2 ** windowLog + (2 ** windowLog / 8) * (wd & 7);
  const blockMax = Math.min(ZSTD_BLOCK_MAX, window);
  return partsBody([
    header,
    ...rawBlocks(page.head, blockMax, false),
    { handle: frame, start: ZSTD_HEADER_BYTES, end: size },
    ...rawBlocks(page.tail, blockMax, true),
  ]);
}

/** `piece` as raw zstd blocks (a 3-byte header each: size << 3, type raw, last bit); one empty block when it is empty and last. */
function rawBlocks(piece: string | Uint8Array, blockMax: number, last: boolean): Buffer[] {
  const bytes = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length || (last && out.length === 0); at += blockMax) {
    const chunk = bytes.subarray(at, Math.min(bytes.length, at + blockMax));
    const head = Buffer.allocUnsafe(3);
    head.writeUIntLE((chunk.length << 3) | (last && at + blockMax >= bytes.length ? 1 : 0), 0, 3);
    out.push(head, chunk);
  }
  return out;
}

/**
 * Checks a zstd frame just written (one frame, its header exactly magic, a descriptor with no
 * content size, no single segment, no checksum, no dictionary, and a window descriptor), and
 * clears the last-block bit of its final block, so that blocks may follow it (splicedZstd).
 * Anything else is refused: the answer is then compressed per request.
 */
async function unmarkLastZstdBlock(file: FileHandle): Promise<void> {
  const { size } = await file.stat();
  const buf = Buffer.allocUnsafe(ZSTD_HEADER_BYTES);
  await file.read(buf, 0, ZSTD_HEADER_BYTES, 0);
  if (size < ZSTD_HEADER_BYTES + 3 || buf.readUInt32LE(0) !== ZSTD_MAGIC || buf[4] !== 0) {
    throw new Error(`the compressor wrote a zstd frame header this service does not splice (descriptor 0x${buf[4]?.toString(16)})`);
  }
  const block = Buffer.allocUnsafe(3);
  for (let at = ZSTD_HEADER_BYTES; ; ) {
    await file.read(block, 0, 3, at);
    const h = block.readUIntLE(0, 3);
    const type = (h >> 1) & 3;
    const end = at + 3 + (type === 1 ? 1 : h >> 3);
    if (type === 3 || end > size) throw new Error(`stored zstd frame: block at ${at} is reserved or runs past the end`);
    if ((h & 1) === 1) {
      if (end !== size) await dropEmptyFrame(file, end, size);
      block.writeUIntLE(h & ~1, 0, 3);
      await file.write(block, 0, 3, at);
      return;
    }
    at = end;
  }
}

async function openIfStored(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Compresses the page's range into a scratch file, syncs it and renames it to `path`. The frames
 * directory is made without its parents: when the result's encoding was dropped meanwhile this
 * fails (and the answer is compressed per request) rather than bring back a piece of it.
 */
async function writeFrame(page: FramedPage, coding: 'zstd' | 'gzip', path: string): Promise<void> {
  await mkdir(page.store.dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const scratch = `${page.store.scratch}${randomBytes(8).toString('hex')}`;
  const out = await open(scratch, 'w+');
  // A range given by its path is opened here, for the frame alone, and closed here.
  let opened: FileHandle | undefined;
  try {
    const rows = 'handle' in page.rows ? page.rows : { handle: (opened = await open(page.rows.path, 'r')), start: page.rows.start, end: page.rows.end };
    const z = coding === 'gzip' ? storedDeflate() : compressor(coding, rows.end - rows.start);
    // The range is read into the compressor (waiting when it is full) while what it makes is
    // written out; a failed read fails the compressor, which ends the loop below.
    const feed = feedRange(rows, z).catch((err: unknown) => void z.destroy(err as Error));
    for await (const chunk of z) {
      const bytes = chunk as Buffer;
      for (let done = 0; done < bytes.length; ) done += (await out.write(bytes, done, bytes.length - done)).bytesWritten;
    }
    const crc = await feed;
    if (coding === 'zstd') await unmarkLastZstdBlock(out);
    else if (crc === undefined) throw new Error('the stored deflate stream ended without its CRC');
    else await out.write(storedTrailer(crc), 0, 4, (await out.stat()).size);
    await out.datasync();
    await out.close();
    await rename(scratch, path);
  } catch (err) {
    await out.close().catch(() => undefined);
    await rm(scratch, { force: true });
    throw err;
  } finally {
    await opened?.close().catch(() => undefined);
  }
}

/** Feeds the range to the compressor; its CRC32 (undefined when the compressor failed first). */
async function feedRange(rows: FileRange, z: Writable): Promise<number | undefined> {
  const chunk = Buffer.allocUnsafe(READ_BYTES);
  let crc = 0;
  for (let at = rows.start; at < rows.end; ) {
    // Destroyed: the writing side failed (its error is the one reported), nothing more to feed.
    if (z.destroyed) return undefined;
    const { bytesRead } = await rows.handle.read(chunk, 0, Math.min(READ_BYTES, rows.end - at), at);
    if (bytesRead === 0) throw new Error(`the encoded file ends at ${at}, before byte ${rows.end} of the frame`);
    at += bytesRead;
    crc = crc32(chunk.subarray(0, bytesRead), crc);
    // The compressor copies what it is given only when it takes it: one buffer per write.
    if (!z.write(Buffer.from(chunk.subarray(0, bytesRead)))) await Promise.race([once(z, 'drain'), once(z, 'close')]);
  }
  z.end();
  return crc;
}

const READ_BYTES = 256 * 1024;

/**
 * Node's zstd stream, ended after its last write, ends the frame and then writes a second, empty
 * one (9 bytes): that is cut. Any other bytes after the frame (a checksum, content) are refused.
 */
async function dropEmptyFrame(file: FileHandle, end: number, size: number): Promise<void> {
  const rest = Buffer.allocUnsafe(size - end);
  if (rest.length <= 32) await file.read(rest, 0, rest.length, end);
  if (rest.length > 32 || rest.readUInt32LE(0) !== ZSTD_MAGIC || zstdDecompressSync(rest).length !== 0) {
    throw new Error(`stored zstd frame: ${rest.length} bytes after the last block are not an empty frame`);
  }
  await file.truncate(end);
}

function bytesOf(piece: string | Uint8Array): Uint8Array {
  return typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
}
