/** Reading a JSON page's rows straight from its text, while pages come in the shape the reader knows. */
import type { TextBatchReader } from '../../types/batch.ts';
import type { Row } from '../../types/decode.ts';
import type { TextRead, TextReader } from '../../types/textRows.ts';
import type { ResultPage } from '../../protocol/index.ts';
import type { Fetched } from './rawPage.ts';

/**
 * How this thread reads JSON pages whose columns it knows: straight from the text into typed rows
 * or into a batch (no parsed page in between). A page of another shape is parsed the general way;
 * after a few such pages the stream stops trying.
 */
export class TextPages {
  readonly #read: TextReader<Row[]> | undefined;
  readonly #batch: TextBatchReader | undefined;
  #misses = 0;
  #hits = 0;

  constructor(read: { rows: TextReader<Row[]> } | { batch: TextBatchReader }) {
    this.#read = 'rows' in read ? read.rows : undefined;
    this.#batch = 'batch' in read ? read.batch : undefined;
  }

  /** Worth trying on the next page: not given up after pages of another shape. */
  get live(): boolean {
    return this.#misses < 3 || this.#misses <= this.#hits;
  }

  /** Reads rows `from` to `to - 1` of the page at `offset` from the answer's text; undefined: parse it. */
  read(answer: { parseText?: <T>(read: (text: string) => TextRead<T> | undefined) => { page: ResultPage; value: T } | undefined }, offset: number, from: number, to: number): Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined {
    let got: Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined;
    if (this.#read !== undefined) {
      const read = this.#read;
      const r = answer.parseText?.((text) => read(text, from, to));
      if (r !== undefined) got = { page: r.page, typed: { from, rows: r.value } };
    } else if (this.#batch !== undefined) {
      const batch = this.#batch;
      const r = answer.parseText?.((text) => batch(text, from, to, offset + from));
      if (r !== undefined) got = { page: r.page, batch: { from, batch: r.value } };
    }
    if (got === undefined) this.#misses++;
    else this.#hits++;
    return got;
  }
}
