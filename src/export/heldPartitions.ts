import { appendFile, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import type { PartitionRun } from './partitions.ts';

/**
 * Rows of partitions whose file was finished to make room for another (more partitions than
 * max_open_files, arriving interleaved). Opening a new file each time such a partition comes back
 * made one file per row for rows arriving round-robin. Instead its later rows go to a local spill
 * file of its own (Arrow IPC, length-prefixed, under the system temp directory) and are written
 * after the last batch, one partition at a time. So whatever the arrival order, a partition gets
 * at most two files (plus rolling by max_rows/max_bytes_per_file), memory holds one batch, and
 * sorted input, where a finished partition never comes back, never touches the disk.
 */
export class HeldPartitions {
  readonly #held = new Map<string, { values: PartitionRun['values']; file?: string }>();
  #dir: Promise<string> | undefined;
  #files = 0;
  #draining = false;
  /** Rows waiting in spill files. */
  rows = 0;

  /** The file of `directory` was finished to make room: hold its later rows. */
  hold(directory: string): void {
    if (!this.#draining && !this.#held.has(directory)) this.#held.set(directory, { values: {} });
  }

  /** True when `run` was taken (its partition is held): the caller writes nothing for it now. */
  async take(run: PartitionRun): Promise<boolean> {
    const held = this.#held.get(run.directory);
    if (!held || this.#draining) return false;
    held.values = run.values;
    this.#dir ??= mkdtemp(join(tmpdir(), 'sluice-partitions-'));
    held.file ??= join(await this.#dir, `${this.#files++}.arrows`);
    const ipc = tableToIPC(new Table([run.batch]), 'stream');
    const frame = Buffer.allocUnsafe(4 + ipc.byteLength);
    frame.writeUInt32LE(ipc.byteLength, 0);
    frame.set(ipc, 4);
    await appendFile(held.file, frame);
    this.rows += run.batch.numRows;
    return true;
  }

  /** The held rows after the last batch, partition by partition, in arrival order within each. */
  async *drain(): AsyncIterable<PartitionRun> {
    this.#draining = true;
    for (const [directory, held] of this.#held) {
      if (held.file === undefined) continue;
      const handle = await open(held.file, 'r');
      try {
        const header = Buffer.alloc(4);
        for (let position = 0; ; ) {
          if ((await handle.read(header, 0, 4, position)).bytesRead < 4) break;
          const chunk = Buffer.allocUnsafe(header.readUInt32LE(0));
          await handle.read(chunk, 0, chunk.byteLength, position + 4);
          position += 4 + chunk.byteLength;
          for (const batch of tableFromIPC(chunk).batches) {
            this.rows -= batch.numRows;
            yield { directory, values: held.values, batch };
          }
        }
      } finally {
        await handle.close();
      }
      await rm(held.file, { force: true });
    }
  }

  /** Removes the spill files (also after a failure). */
  async close(): Promise<void> {
    if (this.#dir) await rm(await this.#dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
