// A gzip decoder that reads ONE member and stops, as Python's zlib.decompressobj and aiohttp do:
// an answer that is several members decodes here to its first member only, so it fails the
// comparison with the uncompressed answer (and the check below that nothing follows the member).
import { crc32, inflateRawSync } from 'node:zlib';

export function gunzipOneMember(body: Buffer): Buffer {
  if (body[0] !== 0x1f || body[1] !== 0x8b || body[2] !== 8) throw new Error('not a gzip member');
  const flags = body[3]!;
  let at = 10;
  if (flags & 4) at += 2 + body.readUInt16LE(at);
  if (flags & 8) at = body.indexOf(0, at) + 1;
  if (flags & 16) at = body.indexOf(0, at) + 1;
  if (flags & 2) at += 2;
  const { buffer, engine } = inflateRawSync(body.subarray(at), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
  const end = at + engine.bytesWritten;
  if (body.length < end + 8) throw new Error('the gzip member has no trailer');
  if (body.readUInt32LE(end) !== crc32(buffer)) throw new Error('gzip CRC32 does not match');
  if (body.readUInt32LE(end + 4) !== buffer.length % 2 ** 32) throw new Error('gzip ISIZE does not match');
  if (end + 8 !== body.length) throw new Error(`${body.length - end - 8} bytes follow the first gzip member (a single-member decoder ignores them)`);
  return buffer;
}
