/**
 * Gathers small chunks into pieces of at least `target` bytes. Writers emit many tiny buffers
 * (Arrow IPC writes each buffer separately); handing those one by one to a disk or an S3
 * upload costs a syscall or a copy each.
 */
export async function* coalesce(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, target = 1 << 20): AsyncIterable<Uint8Array> {
  let pending: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    if (chunk.byteLength === 0) continue;
    pending.push(chunk);
    size += chunk.byteLength;
    if (size >= target) {
      yield concat(pending, size);
      pending = [];
      size = 0;
    }
  }
  if (size > 0) yield concat(pending, size);
}

export function concat(chunks: readonly Uint8Array[], size = chunks.reduce((n, c) => n + c.byteLength, 0)): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
