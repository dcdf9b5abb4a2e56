// The batch messages of the chunks an Arrow encoder wrote last, kept in memory while it runs, for
// the readers of a first read (arrowEncoding.ts). Such a reader waits for its chunk and is woken
// the moment it is written: reading the chunk back from rows.arrow (an open and a read per 256 KB
// on the thread pool, on the event loop that also builds the next chunk) cost the first read more
// than sending it did. The bytes are the ones the encoder wrote to the file, so a page is the same
// either way; a reader whose chunks are no longer kept reads them from the file.
//
// Bounded: at most `maxBytes` of batches, the oldest dropped first (readers ask for the chunks just
// written; one that lags goes to the file). A chunk larger than the bound on its own is not kept.
// The bound counts the messages' bytes; the column buffers behind them may be somewhat larger (a
// text column's is reserved ahead), and they would be garbage otherwise, not yet collected.

/** What a ring keeps by default: a few chunks of a default page (about 2 MB of a 1M-row x 8 result). */
export const RECENT_CHUNK_BYTES = 8 * 1024 * 1024;

export class RecentChunks {
  readonly #maxBytes: number;
  /** Chunk number to its batch message pieces, oldest first (Map keeps insertion order). */
  readonly #chunks = new Map<number, { pieces: Uint8Array[]; bytes: number }>();
  #bytes = 0;

  constructor(maxBytes: number = RECENT_CHUNK_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes of the batches kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Chunks kept. */
  get size(): number {
    return this.#chunks.size;
  }

  /** Keeps chunk `k`'s batch message (written, never changed after), dropping the oldest kept to make room. */
  add(k: number, pieces: Uint8Array[], bytes: number): void {
    if (bytes > this.#maxBytes) return;
    for (const [old, c] of this.#chunks) {
      if (this.#bytes + bytes <= this.#maxBytes) break;
      this.#chunks.delete(old);
      this.#bytes -= c.bytes;
    }
    this.#chunks.set(k, { pieces, bytes });
    this.#bytes += bytes;
  }

  /** The batch messages of chunks [a, b) in order, or undefined unless every one of them is kept. */
  take(a: number, b: number): Uint8Array[] | undefined {
    const out: Uint8Array[] = [];
    for (let k = a; k < b; k++) {
      const c = this.#chunks.get(k);
      if (c === undefined) return undefined;
      out.push(...c.pieces);
    }
    return out;
  }

  clear(): void {
    this.#chunks.clear();
    this.#bytes = 0;
  }
}
