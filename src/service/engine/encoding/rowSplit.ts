// The JSON and CSV encoders' writing side (encodedResult.ts writeRowEncodings): DuckDB's result
// chunks of rendered rows split into the rows files and their indexes, copying bytes straight from
// DuckDB's memory.
//
// A chunk's texts are read run by run, not row by row: DuckDB makes a vector's strings one after
// the other in its string heap, so most of a chunk's rows are a few runs of adjacent bytes (found
// from the pointers in the vector's string_t entries: a run goes on while the next string starts
// where the last one ended). Each run is one read of DuckDB's memory and one copy into the write
// buffer; the row's end (',' or '\n') is part of its text, rendered by DuckDB. A short string held
// inside its string_t ends the run and is copied from there. Reading a row at a time (a call into
// the bindings, a copy and an index record made with divisions for each) cost more CPU than
// DuckDB's rendering of the rows when both formats were written (docs/performance.md, the
// encoder's rows; bench `firstread`, "where the encoding's time goes").
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import duckdb from '@duckdb/node-bindings';
import type { DuckDBDataChunk } from '@duckdb/node-api';
import { INDEX_RECORD_BYTES, writeRecord } from './indexRecords.ts';

/** The files are written this many bytes at a time (a piece larger than that alone). */
const SPLIT_CHUNK_BYTES = 4 * 1024 * 1024;

/** DuckDB's string_t: a 4-byte length, then up to 12 bytes inline or a 4-byte prefix and a pointer. */
const STRING_T = 16;
const INLINE = 12;
const WORD = 0x1_0000_0000;

/** One format's rows file and index, with their write buffers and the rows file's length so far. */
export class RowFiles {
  readonly rows: FileHandle;
  readonly index: FileHandle;
  readonly rowsOut = new OutBuffer();
  readonly indexOut = new OutBuffer();
  /** Bytes of the rows file so far (buffered ones included). */
  at = 0;

  private constructor(rows: FileHandle, index: FileHandle) {
    this.rows = rows;
    this.index = index;
  }

  static async open(dir: string, rowsFile: string, indexFile: string): Promise<RowFiles> {
    const rows = await open(join(dir, rowsFile), 'w');
    try {
      return new RowFiles(rows, await open(join(dir, indexFile), 'w'));
    } catch (err) {
      await rows.close();
      throw err;
    }
  }

  /** The index record of the next row: where it starts and the result_set_bytes before it (nothing to wait for unless it wrote). */
  record(bytesBefore: number): Promise<void> | undefined {
    if (this.indexOut.room() < INDEX_RECORD_BYTES) return this.indexOut.flush(this.index).then(() => this.record(bytesBefore));
    writeRecord(this.indexOut.buf, this.indexOut.take(INDEX_RECORD_BYTES), this.at, bytesBefore);
    return undefined;
  }

  /**
   * The rows of a chunk's text vector (each text the row with its end), with an index record after
   * each: `rowBytes` holds the rows' result_set_bytes as int64 words, `bytesBefore` the sum before
   * the chunk. Reads the texts run by run (see the header).
   */
  async rowsOf(vector: duckdb.Vector, n: number, rowBytes: Uint32Array, bytesBefore: number): Promise<void> {
    const texts = duckdb.vector_get_data(vector, n * STRING_T);
    const words = uint32Words(texts, n * (STRING_T / 4));
    let sum = bytesBefore;
    // The run: its first row's string_t (where its pointer is), its length, where it ends in memory.
    let runAt = -1;
    let runLength = 0;
    let runEnd = 0;
    const endRun = async (): Promise<void> => {
      if (runLength === 0) return;
      const run = duckdb.get_data_from_pointer(texts.buffer as ArrayBuffer, texts.byteOffset + runAt + 8, runLength);
      runLength = 0;
      const wrote = this.rowsOut.append(this.rows, run);
      if (wrote !== undefined) await wrote;
    };
    for (let i = 0; i < n; i++) {
      const length = words[4 * i]!;
      if (length <= INLINE) {
        await endRun();
        const wrote = this.rowsOut.append(this.rows, texts.subarray(i * STRING_T + 4, i * STRING_T + 4 + length));
        if (wrote !== undefined) await wrote;
      } else {
        const pointer = words[4 * i + 2]! + words[4 * i + 3]! * WORD;
        if (runLength === 0 || pointer !== runEnd) {
          await endRun();
          runAt = i * STRING_T;
          runEnd = pointer;
        }
        runLength += length;
        runEnd += length;
      }
      this.at += length;
      sum += rowBytes[2 * i]! + rowBytes[2 * i + 1]! * WORD;
      // Awaited only when the index buffer was written out (an await per row would cost a turn each).
      const recorded = this.record(sum);
      if (recorded !== undefined) await recorded;
    }
    await endRun();
  }

  /** Both buffers written out (the rows first: a reader trusts an index record only over rows on disk). */
  async flush(): Promise<void> {
    await this.rowsOut.flush(this.rows);
    await this.indexOut.flush(this.index);
  }

  sync(): Array<Promise<void>> {
    return [this.rows.sync(), this.index.sync()];
  }

  async close(): Promise<void> {
    await this.rows.close();
    await this.index.close();
  }
}

/**
 * Splits rendered rows (rn, result_set_bytes b, then the text of each format written: the JSON
 * object and its ',', the CSV line and its '\n') into the rows files and indexes, chunk after
 * chunk. The rows must come in order (a streamed query keeps the table's order): a row number out
 * of place, a NULL or a count other than the result's fails the encoding rather than publish a
 * wrong one.
 */
export class RenderedSplit {
  /** The formats' files, in the order of their text columns. */
  readonly #outs: RowFiles[];
  #row = 0;
  #sumBytes = 0;

  constructor(outs: RowFiles[]) {
    this.#outs = outs;
  }

  /** Rows split so far (written or in the buffers). */
  get rows(): number {
    return this.#row;
  }

  async chunk(chunk: DuckDBDataChunk): Promise<void> {
    const n = chunk.rowCount;
    const vectors = Array.from({ length: 2 + this.#outs.length }, (_, k) => duckdb.data_chunk_get_vector(chunk.chunk, k));
    for (const v of vectors) {
      const mask = duckdb.vector_get_validity(v, Math.ceil(n / 64) * 8) as Uint8Array | null;
      if (mask !== null && !allValid(mask, n)) throw new Error(`encoding: a rendered row after row ${this.#row} is NULL`);
    }
    const [rowNumbers, rowBytes] = vectors.slice(0, 2).map((v) => uint32Words(duckdb.vector_get_data(v, n * 8), n * 2)) as [Uint32Array, Uint32Array];
    for (let i = 0; i < n; i++) {
      const row = this.#row + i;
      if (rowNumbers[2 * i] !== row % WORD || rowNumbers[2 * i + 1] !== Math.floor(row / WORD)) throw new Error(`encoding: rendered row ${row} is out of place`);
    }
    for (const [k, out] of this.#outs.entries()) await out.rowsOf(vectors[2 + k]!, n, rowBytes, this.#sumBytes);
    for (let i = 0; i < n; i++) this.#sumBytes += rowBytes[2 * i]! + rowBytes[2 * i + 1]! * WORD;
    this.#row += n;
  }

  /** The first index record (row 0 starts at 0, nothing before it). */
  async start(): Promise<void> {
    for (const o of this.#outs) await o.record(0);
  }

  /** Every buffer written out; resolves to the rows now readable from the files. */
  async flush(): Promise<number> {
    for (const o of this.#outs) await o.flush();
    return this.#row;
  }

  /** Once every row is written (the last record holds the totals): the buffers written out. */
  async finish(rowCount: number): Promise<void> {
    if (this.#row !== rowCount) throw new Error(`encoding: ${this.#row} rows rendered, the result has ${rowCount}`);
    await this.flush();
  }
}

/** True when the validity mask (bit set = valid) marks all of the first `n` rows valid. */
function allValid(mask: Uint8Array, n: number): boolean {
  const whole = n >> 3;
  for (let b = 0; b < whole; b++) if (mask[b] !== 0xff) return false;
  for (let i = whole << 3; i < n; i++) if ((mask[i >> 3]! & (1 << (i & 7))) === 0) return false;
  return true;
}

/** `count` 32-bit words of a vector's memory (copied when not aligned): int64s low word first, string_t fields. */
function uint32Words(src: Uint8Array, count: number): Uint32Array {
  const aligned = src.byteOffset % 4 === 0 ? src : src.slice(0, count * 4);
  return new Uint32Array(aligned.buffer, aligned.byteOffset, count);
}

/** A file's write buffer of SPLIT_CHUNK_BYTES, written out when full. */
export class OutBuffer {
  readonly buf = Buffer.allocUnsafe(SPLIT_CHUNK_BYTES);
  #used = 0;

  room(): number {
    return this.buf.length - this.#used;
  }

  /** Reserves `bytes` bytes (room() of them are free); returns where they start. */
  take(bytes: number): number {
    const at = this.#used;
    this.#used += bytes;
    return at;
  }

  async flush(h: FileHandle): Promise<void> {
    if (this.#used > 0) await writeFully(h, this.buf, this.#used);
    this.#used = 0;
  }

  /**
   * Appends `bytes`; the buffer is written out first when they do not fit, and bytes larger than
   * the buffer are written out directly. Returns nothing to wait for unless it wrote.
   */
  append(h: FileHandle, bytes: Uint8Array): Promise<void> | undefined {
    if (this.room() < bytes.length) return this.#appendAfterFlush(h, bytes);
    const at = this.take(bytes.length);
    if (bytes.length <= 16) {
      const buf = this.buf;
      for (let k = 0; k < bytes.length; k++) buf[at + k] = bytes[k]!;
    } else {
      this.buf.set(bytes, at);
    }
    return undefined;
  }

  async #appendAfterFlush(h: FileHandle, bytes: Uint8Array): Promise<void> {
    await this.flush(h);
    if (bytes.length <= this.room()) this.buf.set(bytes, this.take(bytes.length));
    else await writeFully(h, bytes, bytes.length);
  }
}

async function writeFully(h: FileHandle, buf: Uint8Array, length: number): Promise<void> {
  let done = 0;
  while (done < length) done += (await h.write(buf, done, length - done)).bytesWritten;
}
