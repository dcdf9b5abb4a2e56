/** Reading a JSON page's rows straight from its text, while pages come in the shape the reader knows. */
import type { TextBatchReader } from '../../types/batch.ts';
import type { Row, RowDecoder } from '../../types/decode.ts';
import type { TextRowReader } from '../../types/textRowReader.ts';
import type { TextRead, TextReader } from '../../types/textRows.ts';
import type { ResultPage } from '../../protocol/index.ts';
import type { Fetched } from './rawPage.ts';
import { locatedRows, TextPageRows } from './textPageRows.ts';

/** What a page's answer offers to read it: its envelope with the rows read from the text, or parsed whole. */
interface TextAnswer {
  parse(): ResultPage;
  parseText?: <T>(read: (text: string) => TextRead<T> | undefined) => { page: ResultPage; value: T } | undefined;
}

/** How typed rows are read from a page's text. */
export interface TextRowsRead {
  /** A few at a time, as they are used, where the page's rows array can be located without reading it. */
  readonly rows: TextRowReader;
  /** The rows of a page where it cannot: all read when the page arrives. */
  readonly eager: TextReader<Row[]> | undefined;
  /** The general decoder of a parsed page's rows. */
  readonly decode: RowDecoder;
}

/**
 * How this thread reads JSON pages whose columns it knows: straight from the text into typed rows
 * (a few at a time, as they are used) or into a batch (no parsed page in between). A page of
 * another shape is parsed the general way; after a few such pages the stream stops trying.
 */
export class TextPages {
  readonly #rows: TextRowsRead | undefined;
  readonly #batch: TextBatchReader | undefined;
  #misses = 0;
  #hits = 0;

  constructor(read: TextRowsRead | { batch: TextBatchReader }) {
    this.#rows = 'rows' in read ? read : undefined;
    this.#batch = 'batch' in read ? read.batch : undefined;
  }

  /** Worth trying on the next page: not given up after pages of another shape. */
  get live(): boolean {
    return this.#misses < 3 || this.#misses <= this.#hits;
  }

  /** Reads rows `from` to `to - 1` of the page at `offset` from the answer's text; undefined: parse it. */
  read(answer: TextAnswer, offset: number, from: number, to: number): Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined {
    let got: Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined;
    if (this.#rows !== undefined) {
      got = this.#typed(answer, this.#rows, offset) ?? this.#eager(answer, this.#rows.eager, from, to);
    } else if (this.#batch !== undefined) {
      const batch = this.#batch;
      const r = answer.parseText?.((text) => batch(text, from, to, offset + from));
      if (r !== undefined) got = { page: r.page, batch: { from, batch: r.value } };
    }
    if (got === undefined) this.#misses++;
    else this.#hits++;
    return got;
  }

  /** The page's rows to be read a few at a time from its text, once its rows array is located. */
  #typed(answer: TextAnswer, read: TextRowsRead, offset: number): Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined {
    const { rows: reader, decode } = read;
    const r = locatedRows(answer);
    if (r === undefined) return undefined;
    // Rows not read from the text: the page parsed (the answer keeps its text), and those rows and
    // the rest decoded from it, which raises the errors the general path raises.
    const general = () => {
      this.#misses++;
      this.#hits--;
      const rows = answer.parse().result?.rows ?? [];
      return (i: number) => decode(rows[i], offset + i);
    };
    return { page: r.page, typed: new TextPageRows(reader, r.text, r.where, r.page.result!.metadata.row_count, general) };
  }

  /** The page's rows `from` to `to - 1` all read from its text now. */
  #eager(answer: TextAnswer, eager: TextReader<Row[]> | undefined, from: number, to: number): Omit<Fetched, 'httpBytes' | 'wireBytes'> | undefined {
    if (eager === undefined) return undefined;
    const r = answer.parseText?.((text) => eager(text, from, to));
    if (r === undefined) return undefined;
    const rows = r.value;
    return { page: r.page, typed: { at: (i) => rows[i - from]! } };
  }
}
