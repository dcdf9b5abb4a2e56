import { createHash } from 'node:crypto';
import type { RecordBatch, Schema } from 'apache-arrow';
import type { Format } from '../kit/index.ts';
import type { Transaction } from './destination.ts';
import { Channel } from './channel.ts';

export interface FileEntry {
  /** Name relative to the export root, `/`-separated. */
  readonly path: string;
  readonly rows: number;
  readonly bytes: number;
  readonly sha256: string;
  /** Partition column -> value text (null for SQL NULL); empty without partitioning. */
  readonly partition: Readonly<Record<string, string | null>>;
}

/** One output file being written: batches in through a channel, bytes out to the transaction. */
export class PartFile {
  readonly name: string;
  /** Offset in the result of the file's first row. */
  readonly firstRow: number;
  rows = 0;
  bytes = 0;
  readonly #channel = new Channel<RecordBatch>();
  readonly #done: Promise<FileEntry>;

  constructor(
    tx: Pick<Transaction, 'write'>,
    format: Format,
    schema: Schema,
    name: string,
    partition: Readonly<Record<string, string | null>>,
    signal: AbortSignal | undefined,
    firstRow = 0,
  ) {
    this.name = name;
    this.firstRow = firstRow;
    const stored = storeFile(tx, name, format.encode(schema, this.#channel, signal), format.contentType, signal, (n) => (this.bytes += n));
    this.#done = stored.then(({ bytes, sha256 }) => ({ path: name, rows: this.rows, bytes, sha256, partition }));
    // If the write fails, the encoder stops pulling: refuse further pushes instead of hanging.
    this.#done.catch((error: unknown) => this.#channel.cancel(error));
  }

  async push(batch: RecordBatch): Promise<void> {
    this.rows += batch.numRows;
    await this.#channel.push(batch);
  }

  /** Ends the file and resolves once it is stored. */
  finish(): Promise<FileEntry> {
    this.#channel.close();
    return this.#done;
  }

  /** Ends the file with `error` (the encoder throws it, so the write fails) and waits for that. */
  async fail(error: unknown): Promise<void> {
    this.#channel.fail(error);
    await this.#done.catch(() => undefined);
  }
}

/**
 * Stores one file's encoded bytes through `tx`, counting and hashing them on the way (what the
 * manifest and the resume journal record). `onBytes` sees each chunk's size as it passes.
 */
export async function storeFile(
  tx: Pick<Transaction, 'write'>,
  name: string,
  chunks: AsyncIterable<Uint8Array>,
  contentType: string,
  signal: AbortSignal | undefined,
  onBytes?: (bytes: number) => void,
): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const counted = (async function* () {
    for await (const chunk of chunks) {
      hash.update(chunk);
      bytes += chunk.byteLength;
      onBytes?.(chunk.byteLength);
      yield chunk;
    }
  })();
  await tx.write(name, counted, { contentType, ...(signal ? { signal } : {}) });
  return { bytes, sha256: hash.digest('hex') };
}
