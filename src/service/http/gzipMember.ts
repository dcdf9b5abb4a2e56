// One gzip member around a stored deflate stream. Several members one after another are valid gzip
// (RFC 1952 section 2.2), but many decoders stop after the first: Python's zlib.decompressobj and
// aiohttp (the official Python client's async transport), among others, read only the page's head.
// So a page served from a stored frame is ONE member, as its zstd answer is one frame:
//
//   gzip header | head as stored deflate blocks | the stored deflate stream | tail as stored blocks,
//   the last one final | CRC32 and length of head + rows + tail
//
// The stored stream is raw deflate ended with a sync flush (RFC 1951: no final block, ending on a
// byte boundary with an empty stored block), so blocks may follow it; its back references reach
// only inside itself. Its CRC32 is kept in the file's last 4 bytes, and combined with the head's
// and the tail's per request (crc32Combine: no re-read of the stored rows).
import { constants, crc32, createDeflateRaw } from 'node:zlib';
import type { FileHandle } from 'node:fs/promises';
import type { Compressor } from './contentCoding.ts';
import { partsBody, type PartsBody } from './reply.ts';

/** The stored frame's trailer: the CRC32 of the uncompressed range, little-endian. */
export const STORED_CRC_BYTES = 4;

/** The deflater a gzip frame is stored with: raw deflate, its end a sync flush (not a final block). */
export function storedDeflate(): Compressor {
  const stream = { writableHighWaterMark: 2 * 1024 * 1024 };
  return createDeflateRaw({ ...stream, level: 1, chunkSize: 256 * 1024, finishFlush: constants.Z_SYNC_FLUSH });
}

/** The bytes to append to a stored deflate stream: the CRC32 of what it holds. */
export function storedTrailer(crc: number): Buffer {
  const b = Buffer.allocUnsafe(STORED_CRC_BYTES);
  b.writeUInt32LE(crc >>> 0, 0);
  return b;
}

/** Gzip header: magic, deflate, no flags, no mtime, no extra flags, unknown OS. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
const STORED_BLOCK_MAX = 0xffff;

/** The page as one gzip member: `frame` holds the stored deflate stream of `rowsLength` bytes, then its CRC. */
export async function gzipMember(head: Uint8Array, frame: FileHandle, rowsLength: number, tail: Uint8Array): Promise<PartsBody> {
  const { size } = await frame.stat();
  const trailer = Buffer.allocUnsafe(STORED_CRC_BYTES);
  const { bytesRead } = await frame.read(trailer, 0, STORED_CRC_BYTES, size - STORED_CRC_BYTES);
  if (size < STORED_CRC_BYTES || bytesRead !== STORED_CRC_BYTES) throw new Error(`stored gzip frame of ${size} bytes has no CRC`);
  const crc = crc32(tail, crc32Combine(crc32(head), trailer.readUInt32LE(0), rowsLength));
  const end = Buffer.allocUnsafe(8);
  end.writeUInt32LE(crc >>> 0, 0);
  end.writeUInt32LE((head.byteLength + rowsLength + tail.byteLength) % 2 ** 32, 4);
  return partsBody([GZIP_HEADER, ...storedBlocks(head, false), { handle: frame, start: 0, end: size - STORED_CRC_BYTES }, ...storedBlocks(tail, true), end]);
}

/** `bytes` as stored deflate blocks (byte-aligned: a header byte, LEN, NLEN); one empty block when empty and last. */
function storedBlocks(bytes: Uint8Array, last: boolean): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.byteLength || (last && out.length === 0); at += STORED_BLOCK_MAX) {
    const chunk = bytes.subarray(at, Math.min(bytes.byteLength, at + STORED_BLOCK_MAX));
    const head = Buffer.allocUnsafe(5);
    head[0] = last && at + STORED_BLOCK_MAX >= bytes.byteLength ? 1 : 0;
    head.writeUInt16LE(chunk.byteLength, 1);
    head.writeUInt16LE(~chunk.byteLength & 0xffff, 3);
    out.push(head, Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return out;
}

// CRC32 combination (zlib's crc32_combine): the CRC of A then B from the CRCs of A and B and B's
// length, by multiplying A's CRC by x^(8 len(B)) modulo the CRC polynomial (reflected).
const POLY = 0xedb88320;

function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N: number[] = [];
for (let p = 1 << 30, k = 0; k < 32; k++, p = multModP(p, p)) X2N.push(p);

/** x^(n 2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000;
  for (; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
  return p;
}

export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA) ^ crcB) >>> 0;
}
