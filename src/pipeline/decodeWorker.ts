import { parentPort } from 'node:worker_threads';
import { RecordBatchStreamWriter } from 'apache-arrow';
import { InvalidResponseError } from '../client/errors.ts';
import { parseResultPage } from '../client/result-page.ts';
import { compileJsonRowAppender, createBatchBuilder, restartRowOffset, type BatchBuilder, type JsonRowAppender } from '../types/batch.ts';
import { ColumnValueError } from '../types/errors.ts';
import type { DecodeReply, DecodeTask, WorkerError } from './decodePool.ts';

/**
 * A decode thread: a JSON result page in (the bytes as received, transferred), the page's envelope
 * and its rows as one Arrow IPC stream out (transferred back). Parsing, typed decoding and Arrow
 * building are the CPU work of a page; the thread that fetches only reads the finished buffers.
 */
const port = parentPort;
if (port === null) throw new Error('decodeWorker.ts runs as a worker thread');
const utf8 = new TextDecoder();
/** The last page's columns, builder and appender; a builder left unusable by a misfit is replaced. */
let decoder: { key: string; builder: BatchBuilder; append: JsonRowAppender } | undefined;

port.on('message', (task: DecodeTask) => {
  let reply: DecodeReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const text = utf8.decode(task.body);
    const page = parseResultPage({ text }, {});
    const result = page.result;
    if (result === undefined) {
      reply = { id: task.id, ok: true, page };
    } else {
      const m = result.metadata;
      const columns = m.column_names.map((name, i) => ({ name, type: m.column_types[i] ?? 'varchar' }));
      // As batches() on the fetching thread: rows counted from the page's offset. The builder and
      // its compiled appender serve every page of the same columns, warm.
      const key = JSON.stringify([m.column_names, m.column_types, task.int256As ?? null]);
      if (decoder?.key !== key || !restartRowOffset(decoder.builder, task.offset)) {
        const builder = createBatchBuilder(columns, { ...(task.int256As === undefined ? {} : { int256As: task.int256As }), firstRowOffset: task.offset });
        decoder = { key, builder, append: compileJsonRowAppender(builder, columns) };
      }
      decoder.append(result.rows, 0, result.rows.length, task.offset);
      const ipc = RecordBatchStreamWriter.writeAll([decoder.builder.flush()]).toUint8Array(true);
      result.rows = [];
      reply = { id: task.id, ok: true, page, ipc };
      transfer = [ipc.buffer as ArrayBuffer];
    }
  } catch (error) {
    reply = { id: task.id, ok: false, error: serialize(error) };
  }
  port.postMessage(reply, transfer);
});

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
