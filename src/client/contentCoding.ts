// The content codings the client asks for and decodes (RFC 9110 section 8.4): those Node's zlib
// decodes natively, most compact first. A body is decoded as it arrives, chunk by chunk.
import { brotliDecompressSync, createBrotliDecompress, createGunzip, createInflate, createZstdDecompress, gunzipSync, inflateSync, zstdDecompressSync } from 'node:zlib';
import { Transform } from 'node:stream';

/** The Accept-Encoding the client sends when it asks for compressed answers. */
export const ACCEPT_ENCODING = 'zstd, br, gzip';

/**
 * The body's chunks joined into blocks of at least this many bytes before they go to the decoder:
 * each block it takes is a trip to libuv's thread pool and back, and the network hands over
 * chunks of 64 KiB or less (some 190 trips for a 12 MB result, each waiting on a busy event loop).
 */
const BLOCK = 1024 * 1024;

/** Joins chunks into blocks of at least BLOCK bytes (the last one, whatever is left). */
export function blocks(): Transform {
  let held: Buffer[] = [];
  let size = 0;
  const take = () => {
    const block = held.length === 1 ? held[0]! : Buffer.concat(held, size);
    held = [];
    size = 0;
    return block;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      held.push(chunk);
      size += chunk.length;
      done(null, size >= BLOCK ? take() : undefined);
    },
    flush(done) {
      done(null, size > 0 ? take() : undefined);
    },
  });
}

/**
 * Bytes a decoder makes per step. Each step is a trip to libuv's thread pool and back: at zlib's
 * default (16 KiB) a 4.7 MB JSON page took some 300 of them, and on a busy machine decoding it
 * took 3x as long as in 1 MiB steps.
 */
const CHUNK = 1024 * 1024;

const DECODERS: Record<string, () => Transform> = {
  zstd: () => createZstdDecompress({ chunkSize: CHUNK }),
  br: () => createBrotliDecompress({ chunkSize: CHUNK }),
  gzip: () => createGunzip({ chunkSize: CHUNK }),
  'x-gzip': () => createGunzip({ chunkSize: CHUNK }),
  // Not asked for, but a server may send it anyway, and zlib decodes it.
  deflate: () => createInflate({ chunkSize: CHUNK }),
};

/**
 * The decoders of a `Content-Encoding` value, in the order to apply them (codings are listed in
 * the order they were applied), after one joining the body's chunks into blocks: empty for none
 * or `identity`; `{ unknown }` names a coding the client cannot decode.
 */
export function decodersFor(header: string | undefined): { decoders: Transform[]; codings: string[] } | { unknown: string } {
  const codings = (header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const unknown = codings.find((c) => DECODERS[c] === undefined);
  if (unknown !== undefined) return { unknown };
  if (codings.length === 0) return { decoders: [], codings };
  return { decoders: [blocks(), ...codings.toReversed().map((c) => DECODERS[c]!())], codings };
}

const SYNC_DECODERS: Record<string, (body: Buffer) => Buffer> = { zstd: zstdDecompressSync, br: brotliDecompressSync, gzip: gunzipSync, 'x-gzip': gunzipSync, deflate: inflateSync };

/** A whole body decoded from one coding at once (a body a caller kept coded, read as text after all). */
export function decodeSync(coding: string, body: Buffer): Buffer {
  const decode = SYNC_DECODERS[coding];
  if (decode === undefined) throw new Error(`no decoder for the content coding ${JSON.stringify(coding)}`);
  return decode(body);
}
