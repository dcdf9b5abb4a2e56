// One format of one result being encoded for the readers that asked for it (encodings.ts): how far
// the encoder is, and the readers waiting for rows it has not written yet. Readers read what is
// written straight from the files as they grow; the encoder writes its buffers out early once they
// hold every row a waiting reader needs (WriteProgress.hungry).
import type { DuckDBConnection } from '@duckdb/node-api';
import type { StoredFormat, WriteProgress } from './encodedResult.ts';
import type { ArrowIndex } from './arrowEncoding.ts';
import type { ResultInfo } from '../types.ts';

/**
 * A reader waits for the encoder when its page starts at most this many pages past what is
 * written (the connector reads up to six pages ahead); a page further on is built per request.
 */
const WAIT_AHEAD_PAGES = 8;

export type LiveOutcome = 'ready' | 'far' | 'ended';

export class LiveEncoding implements WriteProgress {
  readonly format: StoredFormat;
  /** The format's directory, read while it is written. */
  readonly dir: string;
  readonly info: ResultInfo;
  /** Arrow only: the chunks written so far. */
  readonly arrowIndex: ArrowIndex = { chunkRows: 1, starts: [0], bytes: [0], schema: undefined };
  /** Settles when the encoder has ended (written, failed or stopped). */
  done: Promise<void> = Promise.resolve();
  stopped = false;
  conn: DuckDBConnection | undefined;
  #rows = 0;
  #ended = false;
  #waiters: Array<{ rows: number; wake: () => void }> = [];

  constructor(format: StoredFormat, dir: string, info: ResultInfo) {
    this.format = format;
    this.dir = dir;
    this.info = info;
  }

  /** Rows readable from the files. */
  get rows(): number {
    return this.#rows;
  }

  hungry(rows: number): boolean {
    return this.#waiters.some((w) => w.rows > this.#rows && w.rows <= rows);
  }

  advance(rows: number): void {
    this.#rows = Math.max(this.#rows, rows);
    this.#wake((w) => w.rows <= this.#rows);
  }

  /** The encoder has ended: every waiter wakes (and finds the encoding stored, or not). */
  end(): void {
    this.#ended = true;
    this.#wake(() => true);
  }

  /** Stops the encoder (a drop, the engine closing): its connection is interrupted. */
  stop(): void {
    this.stopped = true;
    this.conn?.interrupt();
  }

  /**
   * Waits until rows [from, to) are written ('ready'); 'far' at once when `from` is more than
   * WAIT_AHEAD_PAGES pages past what is written, 'ended' when the encoder ends first.
   */
  async waitFor(from: number, to: number): Promise<LiveOutcome> {
    for (;;) {
      if (this.#rows >= to) return 'ready';
      if (this.#ended) return 'ended';
      if (from > this.#rows + WAIT_AHEAD_PAGES * Math.max(1, to - from)) return 'far';
      await new Promise<void>((wake) => this.#waiters.push({ rows: to, wake }));
    }
  }

  #wake(which: (w: { rows: number }) => boolean): void {
    const woken = this.#waiters.filter(which);
    this.#waiters = this.#waiters.filter((w) => !which(w));
    for (const w of woken) w.wake();
  }
}
