import { RecordBatch, Schema } from 'apache-arrow';
import type { ServiceClient } from '../../client/serviceClient.ts';
import type { Job } from '../../config/jobSchema.ts';
import type { Progress } from '../../pipeline/progress.ts';
import { type ResultInfo, type ResultStream, stream, type StreamOptions } from '../../pipeline/stream.ts';
import type { ExecutionStatus } from '../../protocol/index.ts';
import { SCHEMA_METADATA_KEYS } from '../../types/arrow.ts';
import type { ReadyChunk } from './backfillChunks.ts';
import { readOptions } from '../run/readOptions.ts';

/** What the write phase reads of a result (`writeOutputs`): one execution's stream, or a backfill's chunks as one. */
export type RunResult = Pick<ResultStream, 'seek' | 'info' | 'schema' | 'batches' | 'rangeReader' | 'progress'> & Partial<Pick<ResultStream, 'headStart'>>;

/**
 * A backfill's chunks read as one result: their rows in chunk order, one row offset across them,
 * under one execution id (the backfill's), so the write and commit phase works as for one
 * execution: one commit per output, and a killed export resumes at a row offset (the chunk holding
 * it is read from there on the same page grid). Every chunk's result can be read before this is
 * made; each is read by its own stream, one after the other.
 */
export class BackfillStream implements RunResult {
  readonly #client: ServiceClient;
  readonly #job: Job;
  readonly #id: string;
  readonly #chunks: readonly ReadyChunk[];
  readonly #signal: AbortSignal;
  readonly #onProgress: ((p: Progress) => void) | undefined;
  #startOffset = 0;
  #pageSize: number | undefined;
  /** The stream of the chunk the read starts in: it answers `info` and `schema`. */
  #first: { index: number; stream: ResultStream } | undefined;
  #schema: Schema | undefined;
  /** Progress of the chunks read to their end, and of the one being read. */
  #done: Omit<Progress, 'totalRows' | 'elapsedMs' | 'rowsPerSecond' | 'etaMs'> = { pages: 0, rows: 0, bytes: 0, httpBytes: 0, wireBytes: 0 };
  #current: ResultStream | undefined;
  readonly #began = performance.now();

  constructor(client: ServiceClient, job: Job, id: string, chunks: readonly ReadyChunk[], options: { signal: AbortSignal; onProgress?: (p: Progress) => void }) {
    this.#client = client;
    this.#job = job;
    this.#id = id;
    this.#chunks = chunks;
    this.#signal = options.signal;
    this.#onProgress = options.onProgress;
  }

  get totalRows(): number {
    return this.#chunks.reduce((n, c) => n + c.rows, 0);
  }

  seek(position: Pick<StreamOptions, 'startOffset' | 'pageSize'>): void {
    if (position.startOffset !== undefined) this.#startOffset = position.startOffset;
    if (position.pageSize !== undefined) this.#pageSize = position.pageSize;
  }

  async info(): Promise<ResultInfo> {
    const info = await this.#open().stream.info();
    return { ...info, executionId: this.#id, started: this.#chunks.some((c) => !c.reused), totalRows: this.totalRows, status: backfillStatus(this.#id, this.#chunks) };
  }

  async schema(): Promise<Schema> {
    if (this.#schema === undefined) {
      const schema = await this.#open().stream.schema();
      const metadata = new Map(schema.metadata);
      metadata.set(SCHEMA_METADATA_KEYS.executionId, this.#id);
      metadata.delete(SCHEMA_METADATA_KEYS.endedAt);
      this.#schema = new Schema(schema.fields, metadata);
    }
    return this.#schema;
  }

  /** Chunks are read by one stream each, on the page grid of the first (part files are then cut where a read from row 0 cuts them). */
  async *batches(): AsyncGenerator<RecordBatch, void, undefined> {
    const first = this.#open();
    const schema = await this.schema();
    const pageSize = (await first.stream.info()).pageSize;
    for (let index = first.index; index < this.#chunks.length; index++) {
      const chunk = this.#chunks[index]!;
      if (chunk.rows === 0) continue;
      const read = index === first.index ? first.stream : this.#stream(chunk, 0, pageSize);
      this.#current = read;
      for await (const batch of read.batches()) yield new RecordBatch(schema, batch.data);
      const p = read.progress;
      if (p !== undefined) this.#done = { pages: this.#done.pages + p.pages, rows: this.#done.rows + p.rows, bytes: this.#done.bytes + p.bytes, httpBytes: this.#done.httpBytes + p.httpBytes, wireBytes: this.#done.wireBytes + p.wireBytes };
      this.#current = undefined;
    }
  }

  /** Range reads address one execution: a backfill's rows come from one per chunk, so none. */
  async rangeReader(): Promise<undefined> {
    return undefined;
  }

  get progress(): Progress | undefined {
    const p = this.#current?.progress;
    const d = this.#done;
    const elapsedMs = performance.now() - this.#began;
    const rows = d.rows + (p?.rows ?? 0);
    return {
      pages: d.pages + (p?.pages ?? 0),
      rows,
      bytes: d.bytes + (p?.bytes ?? 0),
      httpBytes: d.httpBytes + (p?.httpBytes ?? 0),
      wireBytes: d.wireBytes + (p?.wireBytes ?? 0),
      totalRows: this.totalRows,
      elapsedMs,
      rowsPerSecond: elapsedMs > 0 ? (rows * 1000) / elapsedMs : 0,
      etaMs: undefined,
    };
  }

  /** The chunk holding the start offset, and its stream from there. */
  #open(): { index: number; stream: ResultStream } {
    if (this.#first === undefined) {
      let offset = this.#startOffset;
      let index = 0;
      // The first chunk with rows at or after the offset (the last one when the offset is the end).
      while (index < this.#chunks.length - 1 && offset >= this.#chunks[index]!.rows) offset -= this.#chunks[index++]!.rows;
      this.#first = { index, stream: this.#stream(this.#chunks[index]!, offset, this.#pageSize) };
    }
    return this.#first;
  }

  #stream(chunk: ReadyChunk, startOffset: number, pageSize: number | undefined): ResultStream {
    const { allowPartialResults: _partial, ...options } = readOptions(this.#job);
    return stream(this.#client, { executionId: chunk.executionId }, {
      ...options,
      signal: this.#signal,
      ...(startOffset > 0 ? { startOffset } : {}),
      ...(pageSize === undefined ? {} : { pageSize }),
      onProgress: () => {
        const p = this.progress;
        if (p !== undefined) this.#onProgress?.(p);
      },
    });
  }
}

/** One status for the backfill, as the runner's checks read it (budget, contract, row count): the chunks' sums under the backfill's id. */
export function backfillStatus(id: string, chunks: readonly ReadyChunk[]): ExecutionStatus {
  const last = chunks.at(-1)!.status;
  const meta = chunks[0]!.status.result_metadata;
  const sum = (f: (c: ReadyChunk) => number | undefined) => chunks.reduce((n, c) => n + (f(c) ?? 0), 0);
  return {
    ...last,
    execution_id: id,
    execution_cost_credits: sum((c) => (c.reused ? 0 : c.status.execution_cost_credits)),
    ...(meta === undefined
      ? {}
      : {
          result_metadata: {
            ...meta,
            total_row_count: sum((c) => c.rows),
            total_result_set_bytes: sum((c) => c.status.result_metadata?.total_result_set_bytes),
            datapoint_count: sum((c) => c.status.result_metadata?.datapoint_count),
          },
        }),
  };
}
