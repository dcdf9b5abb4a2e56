import type { Worker } from 'node:worker_threads';
import { type Schema, Table, tableToIPC } from 'apache-arrow';
import type { Transaction } from './destination.ts';
import { DEFAULT_CONCURRENCY } from '../pipeline/fetchOrdered.ts';
import type { RangeReader } from '../pipeline/stream.ts';
import * as exportErrors from './errors.ts';
import { errorClasses, reviveError } from '../threads/threadErrors.ts';
import { startWorker } from '../threads/workerThreads.ts';
import { RowCountMismatchError } from './errors.ts';
import { storeFile } from './partFile.ts';
import type { PartRange } from './partPlan.ts';
import type { FromPartThread, PartFormat, PartJob, ToPartThread } from './partMessages.ts';

/** The export's own error classes, rebuilt as themselves when a part thread throws one. */
const EXPORT_ERRORS = errorClasses(exportErrors);

export { CHUNK_BYTES, CHUNKS_IN_FLIGHT } from './partMessages.ts';

/** One part of an export to write: its row range and the file name it is stored as. */
export interface PartToWrite {
  readonly range: PartRange;
  readonly name: string;
}

/** A part stored through the transaction. */
export interface WrittenPart extends PartToWrite {
  readonly bytes: number;
  readonly sha256: string;
}

export interface WritePartsOptions {
  /** Part threads (at most one per part). */
  readonly threads: number;
  readonly read: RangeReader;
  readonly schema: Schema;
  readonly format: { readonly module: string; readonly type: string; readonly config: unknown; readonly contentType: string };
  readonly parts: readonly PartToWrite[];
  /** Where parts are stored: the export's transaction, or a shard's shared area. */
  readonly tx: Pick<Transaction, 'write'>;
  readonly signal?: AbortSignal | undefined;
  /** Called once a part is stored (resume journals it); the part counts as written once this resolves. */
  readonly onPart?: (part: WrittenPart) => Promise<void>;
  /** Encoded bytes as they reach the destination. */
  readonly onBytes?: (bytes: number) => void;
}

/**
 * Writes parts of an export side by side, one part per thread at a time, in part order as threads
 * come free. Each part thread reads its part's rows, decodes and encodes them (see partThread.ts);
 * this thread stores the bytes through `tx` (the one transaction of the export, so staging, resume
 * and commit stay as they are) and journals each part once stored.
 *
 * A failure of any part, or `signal` aborting, stops every thread and settles every write before
 * this rejects with the first cause; parts stored and journaled before stay in the transaction (the
 * caller discards or keeps them). Memory: per thread one part, its pages in flight (the read's
 * concurrency shared among the threads, at least 2 each, nothing fetched ahead), the encoder's row
 * group, and `CHUNKS_IN_FLIGHT` chunks of encoded bytes.
 */
export async function writeParts(options: WritePartsOptions): Promise<WrittenPart[]> {
  const queue = [...options.parts];
  const threads = Math.max(0, Math.min(options.threads, queue.length));
  const controller = new AbortController();
  const used: PartThread[] = [];
  let failure: { error: unknown } | undefined;
  const fail = (error: unknown) => {
    failure ??= { error };
    controller.abort(error);
  };
  const onAbort = () => fail(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const schemaIpc = tableToIPC(new Table(options.schema), 'stream');
  // The read's page requests shared among the threads, two at least per thread (one fetching while
  // one is decoded), none fetched ahead: each parsed page is the bulk of a thread's memory. Measured
  // (1M rows, 2 threads, CPU s / peak RSS): over JSON, prefetch 1 5.8 s / 540 MB and concurrency 3
  // 5.7 s / 562 MB against 5.9 s / 526 MB as here; over Arrow prefetch 1 and concurrency 3 no faster
  // either: a thread's pages come faster than it decodes and encodes them, so more ahead only waits.
  const perThread = Math.max(2, Math.ceil((options.read.options.concurrency ?? DEFAULT_CONCURRENCY) / Math.max(1, threads)));
  const readOptions = { ...options.read.options, concurrency: perThread, prefetch: 0 };
  const written: WrittenPart[] = [];
  let nextId = 0;

  const loop = async (): Promise<void> => {
    if (queue.length === 0 || controller.signal.aborted) return;
    const thread = acquire();
    used.push(thread);
    controller.signal.addEventListener('abort', () => thread.stop(controller.signal.reason), { once: true });
    while (queue.length > 0 && !controller.signal.aborted) {
      const part = queue.shift()!;
      const job: PartJob = {
        type: 'part',
        id: nextId++,
        read: { connection: options.read.connection, executionId: options.read.executionId, options: readOptions },
        schema: schemaIpc,
        format: { module: options.format.module, type: options.format.type, config: options.format.config },
        firstRow: part.range.firstRow,
        rows: part.range.rows,
      };
      const run = thread.run(job, options.read);
      const stored = await storeFile(options.tx, part.name, run.chunks, options.format.contentType, controller.signal, options.onBytes).catch(async (error: unknown) => {
        // The write gave up: the thread must not go on encoding for nobody.
        thread.stop(error);
        await run.rows.catch(() => undefined);
        throw error;
      });
      const rows = await run.rows;
      if (rows !== part.range.rows) {
        throw new RowCountMismatchError(options.read.executionId, part.range.rows, rows, `part ${part.range.index} (rows ${part.range.firstRow} to ${part.range.firstRow + part.range.rows})`);
      }
      const done: WrittenPart = { ...part, ...stored };
      await options.onPart?.(done);
      written.push(done);
    }
  };

  try {
    await Promise.all(Array.from({ length: threads }, () => loop().catch((error: unknown) => fail(error))));
    if (failure) throw failure.error;
    return written.sort((a, b) => a.range.index - b.range.index);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    // Threads stopped mid-part are ended (and awaited); the others wait, idle, for the next export.
    await Promise.allSettled(used.map((t) => release(t)));
  }
}

/**
 * Part threads left idle by an export, for the next one: starting a thread loads the reading and
 * encoding code again (about a second on a busy machine). An idle thread holds no reference on the
 * event loop and ends after `IDLE_MS` (a long-lived process, such as the scheduler, gets its memory back).
 */
const idle = new Set<PartThread>();

/**
 * The young generation of a part thread's heap, MB. V8 sizes it per isolate, and each thread's
 * parsed pages die young. Measured on 1M rows over JSON with 2 threads (`npm run bench -- parallel`,
 * two runs each, CPU s of the export process / its peak RSS): V8's default 5.7-5.9 s / 793-801 MB,
 * 64 MB 5.7-6.0 s / 665-669 MB, 32 MB 5.7-5.8 s / 599-613 MB, 16 MB 5.6-6.0 s / 544-550 MB; the CPU
 * time is the same within the noise, the memory is not. 8 MB, measured before: 508 MB for 10% more CPU.
 */
const PART_THREAD_YOUNG_MB = 16;
export const IDLE_MS = 10_000;

/**
 * Starts part threads ahead of an export that will use `count` of them (idle ones count), so that
 * their start-up (loading the client, apache-arrow and, with `format`, the format's code: a few
 * hundred ms of CPU each) runs while the caller waits for the first page or stages the output,
 * instead of in front of the first part. They wait as threads an export left do: idle, ended after
 * `IDLE_MS` unless an export takes them.
 */
export function startPartThreads(count: number, format?: PartFormat): void {
  if (format !== undefined) for (const thread of idle) thread.warm(format);
  for (let i = idle.size; i < count; i++) {
    const thread = newThread();
    if (format !== undefined) thread.warm(format);
    void release(thread);
  }
}

/** Part threads waiting for an export (started ahead, or left by one). */
export function idlePartThreads(): number {
  return idle.size;
}

function acquire(): PartThread {
  for (const thread of idle) {
    idle.delete(thread);
    thread.wake();
    return thread;
  }
  return newThread();
}

function newThread(): PartThread {
  return new PartThread(startWorker('partThread', import.meta.url, { resourceLimits: { maxYoungGenerationSizeMb: PART_THREAD_YOUNG_MB } }));
}

async function release(thread: PartThread): Promise<void> {
  if (thread.stopped) return thread.ended;
  idle.add(thread);
  thread.sleep(IDLE_MS, () => idle.delete(thread));
}

/** The owning side of one part thread: runs one part at a time, hands its chunks over as they come. */
class PartThread {
  readonly #worker: Worker;
  readonly ended: Promise<void>;
  #idleTimer: NodeJS.Timeout | undefined;
  #current: { id: number; chunks: ChunkQueue; rows: { resolve: (n: number) => void; reject: (e: unknown) => void }; read: RangeReader } | undefined;
  #stopped: { error: unknown } | undefined;

  constructor(worker: Worker) {
    this.#worker = worker;
    this.ended = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (message: FromPartThread) => this.#receive(message));
    worker.on('error', (error) => this.stop(new Error(`part thread failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => {
      idle.delete(this);
      this.stop(this.#stopped?.error ?? new Error(`part thread exited with code ${code}`));
    });
  }

  get stopped(): boolean {
    return this.#stopped !== undefined;
  }

  /** Idle: no hold on the event loop, and ended after `ms` unless woken. */
  sleep(ms: number, onEnd: () => void): void {
    this.#worker.unref();
    this.#idleTimer = setTimeout(() => {
      onEnd();
      this.stop(new Error('part thread idle'));
    }, ms);
    this.#idleTimer.unref();
  }

  wake(): void {
    clearTimeout(this.#idleTimer);
    this.#worker.ref();
  }

  /** Loads `format`'s code in the thread now (nothing to answer; a failure shows on the first part). */
  warm(format: PartFormat): void {
    if (!this.#stopped) this.#worker.postMessage({ type: 'warm', format } satisfies ToPartThread);
  }

  run(job: PartJob, read: RangeReader): { chunks: AsyncIterable<Uint8Array>; rows: Promise<number> } {
    let settle!: { resolve: (n: number) => void; reject: (e: unknown) => void };
    const rows = new Promise<number>((resolve, reject) => (settle = { resolve, reject }));
    rows.catch(() => undefined);
    const chunks = new ChunkQueue((acked) => this.#worker.postMessage({ type: 'ack', id: job.id, acked } satisfies ToPartThread));
    if (this.#stopped) {
      chunks.fail(this.#stopped.error);
      settle.reject(this.#stopped.error);
      return { chunks, rows };
    }
    this.#current = { id: job.id, chunks, rows: settle, read };
    this.#worker.postMessage(job satisfies ToPartThread);
    return { chunks, rows };
  }

  /** Fails the part running (if any) with `error` and ends the thread. */
  stop(error: unknown): void {
    this.#stopped ??= { error };
    const current = this.#current;
    this.#current = undefined;
    current?.chunks.fail(error);
    current?.rows.reject(error);
    void this.#worker.terminate();
  }

  #receive(message: FromPartThread): void {
    const current = this.#current;
    if (current === undefined || current.id !== message.id) return;
    switch (message.type) {
      case 'chunk':
        current.chunks.push(message.bytes);
        return;
      case 'page':
        current.read.page(message.rows, message.bytes, message.httpBytes, message.wireBytes);
        return;
      case 'done':
        this.#current = undefined;
        current.chunks.close();
        current.rows.resolve(message.rows);
        return;
      case 'error': {
        this.#current = undefined;
        const error = reviveError(message.error, EXPORT_ERRORS);
        current.chunks.fail(error);
        current.rows.reject(error);
        return;
      }
    }
  }
}

/** Chunks from a part thread, handed to the destination's write in order; `onTake` acknowledges each. */
class ChunkQueue implements AsyncIterable<Uint8Array> {
  readonly #items: Uint8Array[] = [];
  #end: { error?: unknown; failed: boolean } | undefined;
  #wake: (() => void) | undefined;
  #taken = 0;
  readonly #onTake: (taken: number) => void;

  constructor(onTake: (taken: number) => void) {
    this.#onTake = onTake;
  }

  push(chunk: Uint8Array): void {
    this.#items.push(chunk);
    this.#notify();
  }

  close(): void {
    this.#end ??= { failed: false };
    this.#notify();
  }

  fail(error: unknown): void {
    this.#end ??= { error, failed: true };
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.#end?.failed) throw this.#end.error;
      const chunk = this.#items.shift();
      if (chunk !== undefined) {
        this.#onTake(++this.#taken);
        yield chunk;
        continue;
      }
      if (this.#end) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}
