/** The typed rows of one JSON page, read from its text a few at a time as `rows()` asks for them. */
import type { ResultPage } from '../../protocol/index.ts';
import type { Row } from '../../types/decode.ts';
import { locateRows, type TextRowReader } from '../../types/textRowReader.ts';
import type { TextRead } from '../../types/textRows.ts';
import type { TypedRows } from './rawPage.ts';

/** Where a page's rows array is in its text: one past its `]`, and where its first row starts. */
export interface RowsWhere {
  readonly end: number;
  readonly first: number;
}

/**
 * The page's envelope, validated as a parse validates it, and its rows array located in its text
 * and not read (`locateRows`); undefined where the answer offers no text or the array cannot be
 * located that way (the page is then read otherwise, or parsed).
 */
export function locatedRows(answer: { parseText?: <T>(read: (text: string) => TextRead<T> | undefined) => { page: ResultPage; value: T } | undefined }): { page: ResultPage; text: string; where: RowsWhere } | undefined {
  const r = answer.parseText?.((text) => {
    const where = locateRows(text);
    return where === undefined ? undefined : { value: { text, where }, count: undefined, start: where.start, end: where.end };
  });
  return r === undefined ? undefined : { page: r.page, ...r.value };
}

/**
 * Rows read from the text at a time: few enough that the rows a read holds ahead of its consumer
 * stay a small part of the young generation (they die there once used), enough that the generated
 * reader runs its loop rather than a call per row.
 */
const CHUNK = 512;

/**
 * Rows are read when they are asked for (in order), `CHUNK` at a time (see `compileTextRowReader`).
 * The first rows that are not read from the text (a value that does not decode, a shape the reader
 * does not take, an array that does not end as the page's envelope says) hand themselves and every
 * later row to `general`, which parses the page and decodes them the general way: the same rows, or
 * the error the general path raises. A page is checked as far as its rows are read: the rows
 * before those of a page that turns out not to parse are handed out (each what its text says),
 * then the parse's error.
 */
export class TextPageRows implements TypedRows {
  readonly #reader: TextRowReader;
  readonly #text: string;
  /** Index of the array's end (one past its `]`), and the page's row count. */
  readonly #end: number;
  readonly #count: number;
  /** Where row `#next` (the first not read yet) starts in the text. */
  #p: number;
  #next = 0;
  /** The rows read last, from row `#from` on. */
  #rows: Row[] = [];
  #from = 0;
  readonly #general: () => (i: number) => Row;
  #parsed: ((i: number) => Row) | undefined;

  constructor(reader: TextRowReader, text: string, where: RowsWhere, count: number, general: () => (i: number) => Row) {
    this.#reader = reader;
    this.#text = text;
    this.#end = where.end;
    this.#count = count;
    this.#p = where.first;
    this.#general = general;
  }

  readonly at = (i: number): Row => {
    const k = i - this.#from;
    if (k >= 0 && k < this.#rows.length) return this.#rows[k]!;
    if (this.#parsed === undefined && i >= this.#next && this.#read(i)) return this.#rows[i - this.#from]!;
    this.#parsed ??= this.#general();
    return this.#parsed(i);
  };

  /** Reads the rows from `#next` on up to row `i` (at least) into `#rows`; false when they are not read from the text. */
  #read(i: number): boolean {
    const text = this.#text;
    const reader = this.#reader;
    for (;;) {
      const from = this.#next;
      const n = Math.min(CHUNK, this.#count - from);
      const rows: Row[] = [];
      let p: number;
      try {
        p = n > 0 ? reader.rows(text, this.#p, n, rows) : -1;
      } catch {
        return false;
      }
      if (p < 0 || reader.state.count !== n) return false;
      // The page's last row (its row_count) ends the array, where the envelope was found to
      // start; any other row is followed by another.
      const last = text.charCodeAt(p - 1) === 93;
      if (last !== (from + n === this.#count) || (last && p !== this.#end)) return false;
      this.#p = p;
      this.#next = from + n;
      this.#rows = rows;
      this.#from = from;
      if (i < this.#next) return true;
    }
  }
}
