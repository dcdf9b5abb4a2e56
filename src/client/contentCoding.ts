// The content codings the client asks for and decodes (RFC 9110 section 8.4): those Node's zlib
// decodes natively, most compact first. A body is decoded as it arrives, chunk by chunk.
import { createBrotliDecompress, createGunzip, createInflate, createZstdDecompress } from 'node:zlib';
import type { Transform } from 'node:stream';

/** The Accept-Encoding the client sends when it asks for compressed answers. */
export const ACCEPT_ENCODING = 'zstd, br, gzip';

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
 * the order they were applied): empty for none or `identity`; `{ unknown }` names a coding the
 * client cannot decode.
 */
export function decodersFor(header: string | undefined): { decoders: Transform[]; codings: string[] } | { unknown: string } {
  const codings = (header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const unknown = codings.find((c) => DECODERS[c] === undefined);
  if (unknown !== undefined) return { unknown };
  return { decoders: codings.toReversed().map((c) => DECODERS[c]!()), codings };
}
