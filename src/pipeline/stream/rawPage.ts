/** A result page as the stream passes it on: as fetched (`Fetched`), then checked (`RawPage`), with the rows read from its text. */
import type { RecordBatch } from 'apache-arrow';
import type { ResultMetadata, ResultPage } from '../../protocol/index.ts';
import type { Row } from '../../types/decode.ts';
import type { PageShape } from '../fetchOrdered.ts';
import type { RowsWhere } from './textPageRows.ts';

/** One page as the pipeline passes it on: raw rows of the wire, and where they sit in the result. */
export interface RawPage extends PageShape {
  /** The page's rows as the JSON wire sent them; empty when they came decoded (`ipc`). */
  readonly rows: readonly unknown[];
  /** The page's rows as an Arrow IPC stream, from the Arrow wire. */
  readonly ipc: Uint8Array | undefined;
  /** The page's typed rows read from its text on this thread, for `rows()`. */
  readonly typed?: TypedRows | undefined;
  /** The page's rows from its row `from` on, read from its text into one batch, for `batches()`. */
  readonly batch?: TextBatch | undefined;
  /** The page's rows located in its text, not read yet (`rows` parses the page when asked for). */
  readonly later?: RowsLater | undefined;
  /** `result_set_bytes`: the service's count of the values as text. */
  readonly bytes: number;
  /** The HTTP body, decoded from its content coding. */
  readonly httpBytes: number;
  /** The HTTP body as it crossed the wire (compressed, when it was). */
  readonly wireBytes: number;
  readonly metadata: ResultMetadata;
}

export interface Fetched {
  readonly page: ResultPage;
  readonly httpBytes: number;
  readonly wireBytes: number;
  readonly ipc?: Uint8Array | undefined;
  readonly typed?: TypedRows | undefined;
  readonly batch?: TextBatch | undefined;
  readonly later?: RowsLater | undefined;
}

/**
 * A JSON page's rows array located in its text and not read: the first page, read before its
 * columns (and so its reader) are known, whose rows `rows()` then reads from the text as it
 * reads every other page's, and anything else parses.
 */
export interface RowsLater {
  readonly text: string;
  /** Where the first row starts, and one past the array's `]`. */
  readonly where: RowsWhere;
  /** The page parsed whole (its text kept by the answer). */
  readonly parse: () => ResultPage;
}

/** Typed rows of a page: row i of the page is `at(i)`, asked for in order. */
export interface TypedRows {
  readonly at: (i: number) => Row;
}

/** A page's rows from its row `from` on, as one batch. */
export interface TextBatch {
  readonly from: number;
  readonly batch: RecordBatch;
}

/** How pages are read: JSON pages (read from their text, or parsed), or Arrow pages. */
export type PageMode = 'rows' | 'arrow';
