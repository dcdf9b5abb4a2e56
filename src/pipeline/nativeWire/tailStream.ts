import { execFile } from 'node:child_process';
import { constants, createReadStream, openSync } from 'node:fs';
import { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createZstdDecompress } from 'node:zlib';
import type { NativeEngine, StagedPage } from './nativeEngine.ts';
import type { NativePart } from './nativeParts.ts';

/** A page as the page grid says it will come: where it starts, its rows, and which of them the part takes. */
export interface PageShape {
  readonly offset: number;
  readonly rowCount: number;
  readonly skip: number;
  readonly take: number;
}

/**
 * The pages of `part` after its first one (`first`, in), as the page grid says they will come: pages
 * of `pageSize` rows one after another, the last one ending at `totalRows`. A service may answer a
 * page with fewer rows; then a page comes in that is not one of these (`TailStream.add` says so).
 */
export function gridPages(part: NativePart, first: PageShape, pageSize: number, totalRows: number): PageShape[] {
  const end = part.firstRow + part.rows;
  const pages: PageShape[] = [first];
  for (let offset = first.offset + first.rowCount; offset < end; offset += pageSize) {
    const rowCount = Math.min(offset + pageSize, totalRows) - offset;
    if (rowCount <= 0) break;
    pages.push({ offset, rowCount, skip: 0, take: Math.min(end, offset + rowCount) - offset });
  }
  return pages;
}

/**
 * The last part of an export read by DuckDB as its pages come in, so that its statement ends shortly
 * after its last page instead of starting then (over a link, that whole statement was the export's
 * tail). The part's one `COPY` reads one named pipe (FIFO) per page, in the order of the page grid
 * (`gridPages`), and each page, once in, is written into its pipe, decoded (DuckDB reads no zstd
 * from a pipe). DuckDB reads a pipe as it reads a file of the same text, a file after another in
 * the same chunks, so the part's file is the one the statement over the staged pages writes, byte
 * for byte (test/pipeline/nativeWire.test.ts).
 *
 * The pages are staged as files as always: whatever goes other than planned (a page not where the
 * grid said, a statement that failed or wrote another count of rows) stops the stream, and the part
 * is written from its staged pages as any other (`result` says undefined), which also names a value
 * DuckDB refused. Neither side blocks a thread on a pipe's opening for ever: DuckDB opens the pipes
 * in order and waits for a writer; each is opened here non-blocking once DuckDB has it open (ENXIO
 * until then), tried again every millisecond, and given up once the statement ended. Once stopped,
 * each pipe DuckDB opens is closed at once, so that it sees every page end and the interrupt.
 */
/**
 * A stream runs in this process: one at a time. Its statement holds a thread of libuv's pool while
 * it waits for a page, and its pages are read on that pool; streams of exports run side by side
 * could hold every thread waiting for pages that need one. Other statements never wait on anything.
 */
let streaming = false;

export class TailStream {
  readonly #part: NativePart;
  readonly #shapes: readonly PageShape[];
  readonly #pipes: readonly string[];
  readonly #arrived: PromiseWithResolvers<StagedPage | undefined>[];
  readonly #stop = new AbortController();
  readonly #written: Promise<number>;
  readonly #fed: Promise<void>;
  readonly #file: string;
  #count = 0;
  /** DuckDB's statement ended. */
  #settled = false;
  /** Stopped before the statement ended: a page not where the grid said, a pipe not fed, the export stopped. */
  #abandoned = false;

  private constructor(engine: NativeEngine, part: NativePart, shapes: readonly PageShape[], pipes: readonly string[], stop: AbortSignal) {
    this.#part = part;
    this.#shapes = shapes;
    this.#pipes = pipes;
    this.#arrived = shapes.map(() => Promise.withResolvers<StagedPage | undefined>());
    this.#file = engine.partFile(part);
    stop.addEventListener('abort', () => this.stop(), { once: true });
    const first = shapes[0]!;
    const whole = shapes.every((p) => p.skip === 0 && p.take === p.rowCount);
    this.#written = engine.copy(engine.partQuery(part, pipes, whole, first.skip), this.#file, AbortSignal.any([this.#stop.signal, stop]));
    const settle = () => {
      this.#settled = true;
      this.stop();
    };
    this.#written.then(settle, settle);
    this.#fed = this.#feed();
    const free = () => {
      streaming = false;
    };
    void Promise.allSettled([this.#written, this.#fed]).then(free);
  }

  /**
   * Starts reading `part` (its pages `shapes`, the first one in) through pipes of the engine's
   * folder; undefined where pipes cannot be made (no `mkfifo`) or another stream runs. `stop` stops it.
   */
  static async start(engine: NativeEngine, part: NativePart, shapes: readonly PageShape[], stop: AbortSignal): Promise<TailStream | undefined> {
    if (streaming) return undefined;
    streaming = true;
    const pipes = shapes.map((_, i) => engine.path(`tail-${part.index}-${i}.csv`));
    try {
      await promisify(execFile)('mkfifo', ['-m', '600', ...pipes]);
    } catch {
      streaming = false;
      return undefined;
    }
    return new TailStream(engine, part, shapes, pipes, stop);
  }

  /** The part's next page, staged: fed to DuckDB if it is the page the grid said, else the stream stops. */
  add(page: StagedPage): void {
    const i = this.#count++;
    const shape = this.#shapes[i];
    if (shape === undefined || shape.offset !== page.offset || shape.rowCount !== page.rowCount || shape.skip !== page.skip || shape.take !== page.take) {
      this.stop();
      return;
    }
    this.#arrived[i]!.resolve(page);
  }

  /** No more pages will be fed; DuckDB's statement is interrupted and its pipes closed as it opens them. */
  stop(): void {
    if (!this.#settled) this.#abandoned = true;
    this.#stop.abort(new Error('the tail stream stopped'));
    for (const arrived of this.#arrived) arrived.resolve(undefined);
  }

  /**
   * Once the statement and the feeding ended: the part's file if DuckDB wrote it from every page the
   * grid said (`staged`, the pages the part got) and the part's count of rows, else undefined (the
   * part is to be written from its staged pages). Throws only `signal`'s reason (the export stopped).
   */
  async result(staged: readonly StagedPage[], signal?: AbortSignal): Promise<string | undefined> {
    if (staged.length !== this.#shapes.length) this.stop();
    const written = await this.#written.catch(() => undefined);
    await this.#fed;
    signal?.throwIfAborted();
    return !this.#abandoned && this.#count === this.#shapes.length && written === this.#part.rows ? this.#file : undefined;
  }

  /** Stops, and waits for the statement and the feeding to end (an export that failed, before DuckDB is closed). */
  async ended(): Promise<void> {
    this.stop();
    await this.#written.catch(() => undefined);
    await this.#fed;
  }

  async #feed(): Promise<void> {
    for (let i = 0; i < this.#pipes.length; i++) {
      const page = await this.#arrived[i]!.promise;
      const fd = await this.#openWriter(this.#pipes[i]!);
      if (fd === undefined) return;
      const socket = new Socket({ fd, readable: false, writable: true });
      // EPIPE: DuckDB stopped reading; its statement's end says why.
      socket.on('error', () => undefined);
      if (page === undefined || this.#stop.signal.aborted) {
        await closed(socket);
        continue;
      }
      const text = page.file.endsWith('.zst') ? createZstdDecompress({ chunkSize: 64 << 10 }) : new PassThrough();
      await pipeline(createReadStream(page.file), text, socket).catch(() => this.stop());
    }
  }

  /** The pipe's write end, opened once DuckDB has it open for reading, or undefined once its statement ended. */
  async #openWriter(pipe: string): Promise<number | undefined> {
    for (;;) {
      if (this.#settled) return undefined;
      try {
        return openSync(pipe, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENXIO') {
          this.stop();
          return undefined;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }
}

function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.destroy();
  });
}
