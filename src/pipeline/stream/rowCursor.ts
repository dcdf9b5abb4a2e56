/** The rows of `rows()`: a cursor over pages of rows, cheaper per row than an async generator. */
import type { Row } from '../../types/decode.ts';

/** The rows of one page for `rows()`: row i is `at(i)` for i in `[next, end)`. */
export interface RowPage {
  readonly at: (i: number) => Row;
  next: number;
  readonly end: number;
}

const DONE: IteratorResult<Row, void> = Object.freeze({ done: true, value: undefined });

/**
 * Rows handed out at once between two turns of the event loop. A `for await` over rows that are
 * all handed out at once never leaves the microtask queue: the sockets of the pages fetched ahead
 * are not read meanwhile, their data waits in the kernel (and the server with it) until the page
 * is used up, and the next page then arrives late. One row in so many waits a turn (setImmediate).
 */
const ROWS_PER_TURN = 2048;

/**
 * The rows of a stream as an async generator, served from the current page without the machinery
 * of an async generator per row (measured: a generator's `yield` costs about twice a settled
 * promise, some 0.2 s per million rows). Calls are handled in order as a generator handles them;
 * a failure (a value that does not decode, a page that cannot be read) ends it, and closing it
 * (`return`, a `break` out of `for await`) closes the pages underneath, which stops their requests.
 */
export class RowCursor implements AsyncGenerator<Row, void, undefined> {
  readonly #pages: AsyncGenerator<RowPage, void, undefined>;
  #page: RowPage | undefined;
  #done = false;
  /** The last call queued (a page being read, the pages being closed); later calls wait for it. */
  #queue: Promise<unknown> | undefined;
  /** Calls queued and not settled yet: while there are any, a row cannot be handed out at once. */
  #busy = 0;
  /** Rows handed out at once since the last turn of the event loop. */
  #handed = 0;

  constructor(pages: AsyncGenerator<RowPage, void, undefined>) {
    this.#pages = pages;
  }

  next(): Promise<IteratorResult<Row, void>> {
    const page = this.#page;
    if (this.#busy === 0 && !this.#done && page !== undefined && page.next < page.end) {
      let value: Row;
      try {
        value = page.at(page.next++);
      } catch (error) {
        return this.#enqueue(() => this.#fail(error));
      }
      if (++this.#handed < ROWS_PER_TURN) return Promise.resolve({ done: false, value });
      this.#handed = 0;
      // Queued, so that a call made meanwhile is answered after this one.
      const result: IteratorResult<Row, void> = { done: false, value };
      return this.#enqueue(() => new Promise<IteratorResult<Row, void>>((resolve) => setImmediate(resolve, result)));
    }
    return this.#enqueue(() => this.#advance());
  }

  return(): Promise<IteratorResult<Row, void>> {
    return this.#enqueue(async () => {
      await this.#close();
      return DONE;
    });
  }

  throw(error: unknown): Promise<IteratorResult<Row, void>> {
    return this.#enqueue(() => this.#fail(error));
  }

  /** Ends the cursor and closes the pages underneath (which stops their requests). */
  async #close(): Promise<void> {
    this.#done = true;
    this.#page = undefined;
    await this.#pages.return(undefined);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  /**
   * Runs `step` after the calls queued before it. The count of calls not settled drops as the step
   * settles, before the caller (whose reaction to `run` comes after this one's) resumes: its next
   * call finds none and takes the row at once. (Clearing the queue one reaction later, as this
   * did, left every call after a page's first on the queue: six promises a row instead of two.)
   */
  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    this.#busy++;
    const run = (this.#queue ?? Promise.resolve()).then(step);
    const done = () => {
      this.#busy--;
    };
    this.#queue = run.then(done, done);
    return run;
  }

  async #advance(): Promise<IteratorResult<Row, void>> {
    for (;;) {
      if (this.#done) return DONE;
      const page = this.#page;
      if (page !== undefined && page.next < page.end) {
        let value: Row;
        try {
          value = page.at(page.next++);
        } catch (error) {
          return this.#fail(error);
        }
        return { done: false, value };
      }
      let got: IteratorResult<RowPage, void>;
      try {
        got = await this.#pages.next();
      } catch (error) {
        this.#done = true;
        this.#page = undefined;
        throw error;
      }
      if (got.done) {
        this.#done = true;
        this.#page = undefined;
        return DONE;
      }
      this.#page = got.value;
    }
  }

  /** Ends the rows with `error`, once the pages are closed (their requests stopped). */
  async #fail(error: unknown): Promise<never> {
    await this.#close();
    throw error;
  }
}
