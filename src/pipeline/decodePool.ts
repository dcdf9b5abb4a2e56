import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { ResultPage } from '../protocol/index.ts';
import type { ArrowTypeOptions } from '../types/arrow.ts';
import type { ColumnSpec, DecodeOptions } from '../types/decode.ts';
import type { PackedRows } from './packedRows.ts';
import { startWorker } from '../workerThreads.ts';
import { ArrowValueError, ValueDecodeError, type ColumnValueDetail } from '../types/errors.ts';

/** One JSON page to decode: its body (transferred, so it must own its ArrayBuffer) and its row offset. */
export interface DecodeTask {
  readonly id: number;
  readonly body: Uint8Array;
  readonly offset: number;
  readonly int256As: ArrowTypeOptions['int256As'];
  /** Typed rows `[skip, take)` of the page (page-relative), packed, instead of Arrow. */
  readonly rows?: RowsTask | undefined;
  /** The rows `[skip, take)` of the page (page-relative) to build into Arrow; all of them when not given. */
  readonly range?: PageRange | undefined;
  /**
   * The result's columns, when the caller knows them (every page after the first): the thread then
   * reads the rows straight from the page's text, as the calling thread does.
   */
  readonly columns?: readonly ColumnSpec[] | undefined;
}

/** Rows `[skip, take)` of a page, page-relative (`take` may run past the page's end). */
export interface PageRange {
  readonly skip: number;
  readonly take: number;
}

/** What `rows()` asks of a page: the rows it will yield, decoded as it decodes them. */
export interface RowsTask extends PageRange {
  readonly dates: DecodeOptions['dates'];
  readonly timestamps: DecodeOptions['timestamps'];
}

/** Decoded rows of a page from `from` on; a value that failed to decode ends them, with its error. */
export interface DecodedRows<E = WorkerError> {
  readonly from: number;
  readonly packed: PackedRows;
  readonly error?: E;
}

/** A failure in a decode thread, as it crosses back: the typed errors are rebuilt on this side. */
export type WorkerError =
  | { kind: 'value-decode' | 'arrow-value'; detail: ColumnValueDetail }
  | { kind: 'response'; message: string }
  | { kind: 'other'; message: string };

export type DecodeReply =
  | { readonly id: number; readonly ok: true; readonly page: ResultPage; readonly ipc?: Uint8Array; readonly ipcFrom?: number; readonly rows?: DecodedRows }
  | { readonly id: number; readonly ok: false; readonly error: WorkerError };

/**
 * A decoded page: the envelope (rows empty) and, when it has a result, its rows as an Arrow IPC
 * stream, or (asked with `rows`) as packed typed rows.
 */
export interface DecodedPage {
  readonly page: ResultPage;
  readonly ipc: Uint8Array | undefined;
  /** The page row the IPC stream starts at, when it holds only the range asked for. */
  readonly ipcFrom?: number | undefined;
  readonly rows?: DecodedRows<Error> | undefined;
}

/** A page the service described as invalid JSON or not matching the protocol (the message says which). */
export class DecodeResponseError extends Error {}

/** Pages queued on one thread at most: one decoding, one waiting, so a thread never idles between pages. */
export const PAGES_PER_THREAD = 2;

/**
 * The default size of the pool, for `batches()` and `rows()`: every core but the one the fetching
 * thread runs on. With two cores or fewer that is none: measured on two cores (`npm run bench --
 * parallel`, 1M rows over JSON), one decode thread was slower than decoding on the calling thread,
 * and rows on two decode threads took 2.0-2.2 s against 1.9-2.0 s on the calling thread (the
 * service, the fetching and the writer already share both cores, and handing pages over costs
 * more than it frees).
 */
export function defaultDecodeThreads(): number {
  const cores = availableParallelism();
  return cores <= 2 ? 0 : cores - 1;
}

interface Slot {
  worker: Worker;
  /** Tasks sent to this thread and not answered yet, in the order sent (a thread answers in order). */
  readonly pending: Map<number, { resolve: (page: DecodedPage) => void; reject: (error: unknown) => void }>;
}

interface Waiting {
  readonly task: Omit<DecodeTask, 'id'>;
  readonly resolve: (page: DecodedPage) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Worker threads that turn JSON result pages into Arrow, in parallel. Plain `Worker`s rather than a
 * pool library: the work is one message in, one out, with transfer lists both ways, and the bound we
 * need (pages queued per thread) is a counter. Threads hold no reference on the event loop while idle,
 * so a program that forgets `close()` still exits.
 *
 * Order is the caller's business (the fetcher yields pages in offset order whatever order they
 * finish in); memory is bounded by `PAGES_PER_THREAD` per thread plus the caller's own bound on
 * pages in flight.
 */
export class DecodePool {
  readonly size: number;
  readonly #slots: (Slot | undefined)[];
  readonly #waiting: Waiting[] = [];
  #nextId = 0;
  #closed = false;

  constructor(size: number = defaultDecodeThreads()) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`decode threads must be a positive integer, got ${size}`);
    this.size = size;
    this.#slots = Array.from({ length: size }, () => undefined);
  }

  /** Decodes a JSON page; `body` is transferred (unusable here afterwards) when it owns its whole buffer. */
  decode(body: Uint8Array, offset: number, options: ArrowTypeOptions & { rows?: RowsTask; range?: PageRange; columns?: readonly ColumnSpec[] | undefined } = {}): Promise<DecodedPage> {
    if (this.#closed) return Promise.reject(new Error('decode pool is closed'));
    return new Promise((resolve, reject) => {
      this.#waiting.push({ task: { body, offset, int256As: options.int256As, rows: options.rows, range: options.range, columns: options.columns }, resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends every thread; pages still queued fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const closing = new Error('decode pool is closed');
    for (const w of this.#waiting.splice(0)) w.reject(closing);
    await Promise.all(
      this.#slots.map(async (slot, i) => {
        if (slot === undefined) return;
        this.#slots[i] = undefined;
        for (const p of slot.pending.values()) p.reject(closing);
        await slot.worker.terminate();
      }),
    );
  }

  #dispatch(): void {
    while (this.#waiting.length > 0) {
      const slot = this.#leastBusy();
      if (slot === undefined) return;
      const next = this.#waiting.shift()!;
      const id = this.#nextId++;
      slot.pending.set(id, { resolve: next.resolve, reject: next.reject });
      if (slot.pending.size === 1) slot.worker.ref();
      const body = next.task.body;
      // A body that shares its buffer (a pooled small Buffer) is copied rather than detaching the pool.
      const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : body.slice();
      try {
        slot.worker.postMessage({ ...next.task, id, body: owned } satisfies DecodeTask, [owned.buffer as ArrayBuffer]);
      } catch {
        // An ArrayBuffer Node marked untransferable (its Buffer pool): sent as a copy instead.
        slot.worker.postMessage({ ...next.task, id, body: owned.slice() } satisfies DecodeTask);
      }
    }
  }

  #leastBusy(): Slot | undefined {
    let best: Slot | undefined;
    for (let i = 0; i < this.size; i++) {
      let slot = this.#slots[i];
      // Threads start on first need: a stream of one page never pays for the others.
      if (slot === undefined) {
        if (best !== undefined && best.pending.size === 0) break;
        slot = this.#start(i);
      }
      if (slot.pending.size < PAGES_PER_THREAD && (best === undefined || slot.pending.size < best.pending.size)) best = slot;
    }
    return best;
  }

  #start(i: number): Slot {
    const worker = startWorker('decodeWorker', import.meta.url);
    worker.unref();
    const slot: Slot = { worker, pending: new Map() };
    this.#slots[i] = slot;
    worker.on('message', (reply: DecodeReply) => {
      const p = slot.pending.get(reply.id);
      if (p === undefined) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) worker.unref();
      if (reply.ok) {
        const rows = reply.rows;
        p.resolve({
          page: reply.page,
          ipc: reply.ipc,
          ipcFrom: reply.ipcFrom,
          rows: rows === undefined ? undefined : { from: rows.from, packed: rows.packed, ...(rows.error === undefined ? {} : { error: rebuild(rows.error) }) },
        });
      }
      else p.reject(rebuild(reply.error));
      this.#dispatch();
    });
    const fail = (error: unknown) => {
      if (this.#slots[i] === slot) this.#slots[i] = undefined;
      for (const p of slot.pending.values()) p.reject(error);
      slot.pending.clear();
      this.#dispatch();
    };
    worker.on('error', (error) => fail(new Error(`decode thread failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => {
      if (!this.#closed) fail(new Error(`decode thread exited with code ${code}`));
    });
    return slot;
  }
}

function rebuild(error: WorkerError): Error {
  switch (error.kind) {
    case 'value-decode':
      return new ValueDecodeError(error.detail);
    case 'arrow-value':
      return new ArrowValueError(error.detail);
    case 'response':
      return new DecodeResponseError(error.message);
    case 'other':
      return new Error(`decode thread: ${error.message}`);
  }
}

let shared: DecodePool | undefined;

/** The process's pool, started on first use (threads themselves start on first need). */
export function sharedDecodePool(): DecodePool {
  shared ??= new DecodePool(Math.max(1, defaultDecodeThreads()));
  return shared;
}
