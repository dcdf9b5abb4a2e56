// Content codings of answers (RFC 9110 section 12.5.3, Accept-Encoding): which one an answer is
// sent in, and the compressor writing it. Only what Node's zlib writes and decodes natively.
import { constants, createBrotliCompress, createGzip, createZstdCompress } from 'node:zlib';
import type { Transform } from 'node:stream';

export type Coding = 'zstd' | 'br' | 'gzip';

/** The codings the service writes, in its order of preference when a client accepts several at the same q. */
export const CODINGS: readonly Coding[] = ['zstd', 'br', 'gzip'];

/**
 * Answers smaller than this go uncompressed whatever the client accepts: they fit in the first
 * round trip of a connection anyway, and compressing them costs more CPU than the bytes it saves.
 */
export const MIN_COMPRESSED_BYTES = 4096;

/** `x-gzip` is gzip (RFC 9110 section 8.4.1.3). */
const ALIASES: Record<string, string> = { 'x-gzip': 'gzip' };

/**
 * The coding to send an answer in: one of CODINGS, `identity` (uncompressed), or undefined when
 * the client refused them all (`identity;q=0` or `*;q=0` with no coding of ours above 0: 406).
 * No header: identity (a client that sends none may not decode any coding). Each coding takes the
 * q of its own entry, else of `*`; identity is acceptable unless refused so, and loses ties against
 * a coding the client named. Entries that do not parse (a q that is not a number in [0, 1]) are ignored.
 */
export function negotiateCoding(header: string | undefined): Coding | 'identity' | undefined {
  if (header === undefined) return 'identity';
  const q = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (name === undefined || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) continue;
    let value = 1;
    for (const p of params) {
      const m = /^q\s*=\s*(.*)$/.exec(p);
      if (m !== null) value = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(m[1]!) ? Number(m[1]) : Number.NaN;
    }
    if (!Number.isNaN(value)) q.set(ALIASES[name] ?? name, value);
  }
  const star = q.get('*');
  let best: { coding: Coding; q: number } | undefined;
  for (const coding of CODINGS) {
    const v = q.get(coding) ?? star ?? 0;
    if (v > 0 && (best === undefined || v > best.q)) best = { coding, q: v };
  }
  const identity = q.get('identity') ?? (star === 0 ? 0 : undefined);
  if (best !== undefined && (identity === undefined || best.q >= identity)) return best.coding;
  return identity === 0 ? undefined : 'identity';
}

/** A zlib compressor: a Transform that can also push out what it holds so far. */
export type Compressor = Transform & { flush(callback: () => void): void };

/**
 * A compressor writing `coding`, at the level that pays per request: zstd 1 and gzip 1 compress a
 * JSON page at well over 100 MB/s; brotli is held to quality 3 (its default, 11, takes seconds a page).
 */
export function compressor(coding: Coding, sizeHint: number): Compressor {
  // The compressor takes up to READ_AHEAD bytes before it says to wait: the next reads of the
  // file go on while it compresses (each block it takes is a trip to libuv's thread pool, and at
  // the default 16 KiB the reads waited for every one of them).
  const chunkSize = 256 * 1024;
  const stream = { writableHighWaterMark: READ_AHEAD };
  if (coding === 'zstd') return createZstdCompress({ ...stream, chunkSize, params: { [constants.ZSTD_c_compressionLevel]: 1 } });
  if (coding === 'br') {
    return createBrotliCompress({ ...stream, chunkSize, params: { [constants.BROTLI_PARAM_QUALITY]: 3, [constants.BROTLI_PARAM_SIZE_HINT]: sizeHint } });
  }
  return createGzip({ ...stream, chunkSize, level: 1 });
}

const READ_AHEAD = 2 * 1024 * 1024;
