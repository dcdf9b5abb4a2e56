/** The typed rows of one JSON page, read from its text one at a time as `rows()` asks for them. */
import type { Row } from '../../types/decode.ts';
import type { TextRowReader } from '../../types/textRowReader.ts';
import type { TypedRows } from './rawPage.ts';

/**
 * Row i is read when it is asked for (rows are asked for in order), so that it dies young when
 * its consumer lets it go (see `compileTextRowReader`). The first row that is not read from the
 * text (a value that does not decode, a shape the reader does not take, an array that does not
 * end as the page's envelope says) hands it and every later row to `general`, which parses the
 * page and decodes them the general way: the same rows, or the error the general path raises.
 */
export class TextPageRows implements TypedRows {
  /** The row read last (the reader's generated code writes it here). */
  row: Row | undefined = undefined;
  readonly #reader: TextRowReader;
  readonly #text: string;
  /** Index of the array's end (one past its `]`), and the page's row count. */
  readonly #end: number;
  readonly #count: number;
  /** Where row `#next` starts in the text. */
  #p: number;
  #next = 0;
  readonly #general: () => (i: number) => Row;
  #parsed: ((i: number) => Row) | undefined;

  constructor(reader: TextRowReader, text: string, where: { end: number; first: number }, count: number, general: () => (i: number) => Row) {
    this.#reader = reader;
    this.#text = text;
    this.#end = where.end;
    this.#count = count;
    this.#p = where.first;
    this.#general = general;
  }

  readonly at = (i: number): Row => {
    if (this.#parsed === undefined && i >= this.#next) {
      for (;;) {
        const k = this.#next;
        if (!this.#read(k)) break;
        if (k === i) return this.row!;
      }
    }
    this.#parsed ??= this.#general();
    return this.#parsed(i);
  };

  /** Reads row `k` (the next one) into `row`; false when it is not one read from the text. */
  #read(k: number): boolean {
    const text = this.#text;
    let p: number;
    try {
      p = this.#reader.row(text, this.#p, this);
    } catch {
      return false;
    }
    if (p < 0) return false;
    // The array's last row is the page's last (its row_count), and ends the array where the
    // envelope was found to start; any other row is followed by another.
    const last = text.charCodeAt(p - 1) === 93;
    if (last !== (k === this.#count - 1) || (last && p !== this.#end)) return false;
    this.#p = p;
    this.#next = k + 1;
    return true;
  }
}
