import { parentPort } from 'node:worker_threads';
import { InvalidResponseError } from '../client/errors.ts';
import { parseResultPage, parseResultPageText } from '../client/result-page.ts';
import type { ResultPage } from '../protocol/index.ts';
import { ColumnValueError } from '../types/errors.ts';
import type { DecodeReply, DecodeTask, PageRange, RowsTask, WorkerError } from './decodePool.ts';
import { decodePacked, packColumns } from './packedRows.ts';
import { releaseBody } from '../client/pageBody.ts';
import { sameColumns, type ColumnSpec, type DecodeOptions } from '../types/decode.ts';
import { compileTextColumns } from '../types/textRows.ts';

/**
 * A decode thread: a JSON result page in (the bytes as received, transferred), the page's envelope
 * and its rows out, transferred back: as one Arrow IPC stream for `batches()`, or as typed rows
 * packed by column for `rows()` (see packedRows.ts). Parsing and typed decoding are the CPU work of
 * a page; the thread that fetches only reads the finished values.
 */
const port = parentPort;
if (port === null) throw new Error('decodeWorker.ts runs as a worker thread');
// As the calling thread makes a page's text (`Buffer#toString`): a byte order mark is kept, and refused by the parse.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
/** The Arrow side, loaded on the first page asked as Arrow (a thread of `rows()` never needs it). */
let arrow: Promise<typeof import('./decodeArrowPage.ts')> | undefined;

// Tasks are handled one after another, in the order sent, even while the Arrow side loads.
let queue: Promise<void> = Promise.resolve();
port.on('message', (task: DecodeTask) => {
  queue = queue.then(() => handle(task));
});

async function handle(task: DecodeTask): Promise<void> {
  let reply: DecodeReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const text = utf8.decode(task.body);
    // The thread has the body to itself: transferred here, or a copy.
    releaseBody(task.body, true);
    const fast = task.columns === undefined ? undefined : task.rows !== undefined ? rowsFromText(task, text) : await batchFromText(task, text);
    if (fast !== undefined) {
      port!.postMessage(fast.reply, fast.transfer);
      return;
    }
    const page = parseResultPage({ text }, {});
    const result = page.result;
    if (result === undefined) {
      reply = { id: task.id, ok: true, page };
    } else if (task.columns !== undefined && !namesColumns(page, task.columns)) {
      // Not the stream's columns: the stream refuses the page for that (as it does a page it reads
      // itself), before any of its values is decoded by columns it does not have.
      result.rows = [];
      reply = { id: task.id, ok: true, page };
    } else if (task.rows !== undefined) {
      ({ reply, transfer } = decodeRows(task, page, result));
    } else {
      arrow ??= import('./decodeArrowPage.ts');
      const { from, to } = rowsIn(task.range, result.rows.length);
      const ipc = (await arrow).arrowPage(result, task.offset, task.int256As, from, to);
      result.rows = [];
      reply = { id: task.id, ok: true, page, ipc, ipcFrom: from };
      transfer = [ipc.buffer as ArrayBuffer];
    }
  } catch (error) {
    reply = { id: task.id, ok: false, error: serialize(error) };
  }
  port!.postMessage(reply, transfer);
}

/**
 * Typed rows `[skip, take)` of the page, as `rows()` decodes them on its own thread. Rows outside
 * that range are not decoded (a bad value there is no error, as on the fetching thread); a bad value
 * inside it ends the page there: the rows before it are sent with the error, so the reader yields
 * them before it throws, as it would have decoding the page itself.
 */
function decodeRows(task: DecodeTask, page: ResultPage, result: NonNullable<ResultPage['result']>): { reply: DecodeReply; transfer: ArrayBuffer[] } {
  const options = task.rows!;
  const m = result.metadata;
  const columns = m.column_names.map((name, i) => ({ name, type: m.column_types[i] ?? 'varchar' }));
  const raw = result.rows;
  const { from, to } = rowsIn(options, raw.length);
  const decoded = decodePacked(raw, from, to, columns, typing(options), task.offset);
  result.rows = [];
  const rows = { from, packed: decoded.packed, ...(decoded.error === undefined ? {} : { error: serialize(decoded.error) }) };
  return { reply: { id: task.id, ok: true, page, rows }, transfer: decoded.transfer };
}

/**
 * Typed rows `[skip, take)` of the page read straight from its text (no parsed page), packed; undefined
 * when the page is not of the shape the scanner reads, a value does not decode, or its columns are
 * not the ones the task named: the general path then decodes it, and says what is wrong.
 */
function rowsFromText(task: DecodeTask, text: string): { reply: DecodeReply; transfer: ArrayBuffer[] } | undefined {
  const columns = task.columns!;
  const options = task.rows!;
  // The same reader for every page of the same columns (compileTextColumns keeps them).
  const read = compileTextColumns(columns, typing(options));
  if (read === undefined) return undefined;
  const got = parseResultPageText({ text }, {}, (t) => read(t, options.skip, options.take));
  if (got === undefined || !namesColumns(got.page, columns)) return undefined;
  const { from } = rowsIn(options, got.page.result!.metadata.row_count);
  const { packed, transfer } = packColumns(got.value, got.value[0]?.length ?? 0);
  return { reply: { id: task.id, ok: true, page: got.page, rows: { from, packed } }, transfer };
}

/** The page's rows read straight from its text into one Arrow IPC stream (see {@link rowsFromText}). */
async function batchFromText(task: DecodeTask, text: string): Promise<{ reply: DecodeReply; transfer: ArrayBuffer[] } | undefined> {
  arrow ??= import('./decodeArrowPage.ts');
  const columns = task.columns!;
  const ipc = (await arrow).arrowPageFromText(text, columns, task.offset, task.int256As, task.range);
  if (ipc === undefined || !namesColumns(ipc.page, columns)) return undefined;
  const { from } = rowsIn(task.range, ipc.page.result!.metadata.row_count);
  return { reply: { id: task.id, ok: true, page: ipc.page, ipc: ipc.bytes, ipcFrom: from }, transfer: [ipc.bytes.buffer as ArrayBuffer] };
}

/** Rows `[from, to)` of a page of `count` rows that a range asks for (all of them without one). */
function rowsIn(range: PageRange | undefined, count: number): { from: number; to: number } {
  const from = Math.min(count, range?.skip ?? 0);
  return { from, to: Math.max(from, Math.min(count, range?.take ?? count)) };
}

/** The page's metadata names exactly these columns. */
function namesColumns(page: ResultPage, columns: readonly ColumnSpec[]): boolean {
  const m = page.result?.metadata;
  return m !== undefined && sameColumns(columns, m.column_names, m.column_types);
}

function serialize(error: unknown): WorkerError {
  if (error instanceof ColumnValueError) {
    return {
      kind: error.code === 'ARROW_VALUE' ? 'arrow-value' : 'value-decode',
      detail: { column: error.column, type: error.type, rowOffset: error.rowOffset, path: error.path, value: error.value, reason: error.reason },
    };
  }
  if (error instanceof InvalidResponseError) return { kind: 'response', message: error.message };
  return { kind: 'other', message: error instanceof Error ? (error.stack ?? error.message) : String(error) };
}

/** The decode options of a rows task, only those it sets (the text readers are cached by them). */
function typing(task: RowsTask): DecodeOptions {
  return { ...(task.dates === undefined ? {} : { dates: task.dates }), ...(task.timestamps === undefined ? {} : { timestamps: task.timestamps }) };
}
