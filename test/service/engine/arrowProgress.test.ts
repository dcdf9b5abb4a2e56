// The Arrow encoder tells the readers of a first read how far it is (WriteProgress.advance): a
// reader woken for rows [a, b) must find every chunk of them written, in the encoder's index and
// in rows.arrow. A reader woken too early finds its page missing and falls back to a page query,
// which costs the first read the time of building the page again beside the encoder.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { encodedArrowPage, writeArrowChunks, type ArrowIndex, type EncodedArrowPage } from '../../../src/service/engine/encoding/arrowEncoding.ts';
import type { ArrowChunk } from '../../../src/service/engine/encoding/arrowChunks.ts';
import type { ResultInfo } from '../../../src/service/engine/types.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The page's batch messages (between its schema and end-of-stream), from memory or read from rows.arrow; the file closed. */
async function batchesOf(page: EncodedArrowPage): Promise<{ bytes: Uint8Array; fromFile: boolean }> {
  const pieces: Uint8Array[] = [];
  let fromFile = false;
  for (const part of page.parts.slice(1, -1)) {
    if (part instanceof Uint8Array) pieces.push(part);
    else {
      fromFile = true;
      pieces.push((await part.handle.readFile()).subarray(part.start, part.end));
      await part.handle.close();
    }
  }
  return { bytes: Uint8Array.from(Buffer.concat(pieces)), fromFile };
}

/** Chunk k: a schema message and a batch message of 100 + k bytes, all bytes k (told apart when read back). */
function chunkOf(k: number, rowCount: number): ArrowChunk {
  const batch = new Uint8Array(100 + k).fill(k);
  return { schema: Uint8Array.of(1, 2, 3), batch: [batch.subarray(0, 10), batch.subarray(10)], batchBytes: batch.byteLength, rowCount };
}

test('each advance(n) of the Arrow encoder comes once the chunks of rows [0, n) are written and readable as pages', async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-arrow-progress-'));
  const chunkRows = 1000;
  const rowCount = 5500;
  const info: ResultInfo = { columnNames: ['a'], columnTypes: ['bigint'], rowCount, bytes: 0, truncated: false };
  const index: ArrowIndex = { chunkRows: 1, starts: [0], bytes: [0], schema: undefined };
  const seen: Array<{ rows: number; page: Uint8Array | undefined; pageRows: number | undefined }> = [];
  const checks: Array<Promise<void>> = [];
  const progress = {
    hungry: () => true as boolean,
    advance(rows: number): void {
      // What a reader woken now for the last chunk announced reads (before the encoder goes on).
      const last = Math.floor((rows - 1) / chunkRows) * chunkRows;
      const entry: (typeof seen)[number] = { rows, page: undefined, pageRows: undefined };
      seen.push(entry);
      checks.push(
        encodedArrowPage(dir!, info, last, chunkRows, index).then(async (page) => {
          if (page === undefined) return;
          entry.pageRows = page.rowCount;
          entry.page = (await batchesOf(page)).bytes;
        }),
      );
    },
  };
  async function* chunks(): AsyncGenerator<ArrowChunk> {
    for (let k = 0; k * chunkRows < rowCount; k++) {
      // The next chunk takes a moment to build: the write of the one before ends meanwhile.
      await new Promise((wake) => setTimeout(wake, 5));
      yield chunkOf(k, Math.min(chunkRows, rowCount - k * chunkRows));
    }
  }
  await writeArrowChunks(dir, chunkRows, rowCount, chunks(), () => false, { info, index, progress });
  await Promise.all(checks);

  expect(seen.map((s) => s.rows)).toEqual([1000, 2000, 3000, 4000, 5000, 5500]);
  for (const [k, s] of seen.entries()) {
    expect(s.pageRows, `the page of rows ${k * chunkRows}.. when told ${s.rows} rows are written`).toBe(Math.min(chunkRows, rowCount - k * chunkRows));
    expect(s.page, `chunk ${k}'s bytes`).toEqual(new Uint8Array(100 + k).fill(k));
  }
  expect((await readFile(join(dir, 'rows.arrow'))).byteLength).toBe(Array.from({ length: 6 }, (_, k) => 100 + k).reduce((a, b) => a + b));
});

test('while the encoder runs, a page of chunks just written is sent from its buffers, the same bytes as the page read from rows.arrow once stored', async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-arrow-recent-'));
  const chunkRows = 1000;
  const rowCount = 5500;
  const info: ResultInfo = { columnNames: ['a'], columnTypes: ['bigint'], rowCount, bytes: 0, truncated: false };
  const index: ArrowIndex = { chunkRows: 1, starts: [0], bytes: [0], schema: undefined };
  const live: Array<Promise<{ offset: number; limit: number; bytes: Uint8Array; fromFile: boolean; kept: number | undefined }>> = [];
  const progress = {
    hungry: () => true as boolean,
    advance(rows: number): void {
      // The reader of the chunk just written, and one of the two chunks before it together.
      const last = Math.floor((rows - 1) / chunkRows) * chunkRows;
      const pages = last >= chunkRows ? [[last, chunkRows], [last - chunkRows, 2 * chunkRows]] : [[last, chunkRows]];
      const kept = index.recent?.bytes;
      for (const [offset, limit] of pages as Array<[number, number]>) {
        live.push(encodedArrowPage(dir!, info, offset, limit, index).then(async (page) => ({ offset, limit, kept, ...(await batchesOf(page!)) })));
      }
    },
  };
  async function* chunks(): AsyncGenerator<ArrowChunk> {
    for (let k = 0; k * chunkRows < rowCount; k++) yield chunkOf(k, Math.min(chunkRows, rowCount - k * chunkRows));
  }
  await writeArrowChunks(dir, chunkRows, rowCount, chunks(), () => false, { info, index, progress });
  const served = await Promise.all(live);
  expect(served).toHaveLength(11);
  // Nothing kept once the encoder has ended: later readers read the stored files.
  expect(index.recent).toBeUndefined();
  for (const s of served) {
    expect(s.fromFile, `page ${s.offset}+${s.limit} from the encoder's buffers`).toBe(false);
    expect(s.kept).toBeGreaterThan(0);
    const stored = await encodedArrowPage(dir, info, s.offset, s.limit);
    const fromFile = await batchesOf(stored!);
    expect(fromFile.fromFile).toBe(true);
    expect(s.bytes, `page ${s.offset}+${s.limit}`).toEqual(fromFile.bytes);
  }
});
