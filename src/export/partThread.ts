import { parentPort } from 'node:worker_threads';
import { RecordBatch, RecordBatchReader, type Schema } from 'apache-arrow';
import { ServiceClient } from '../client/serviceClient.ts';
import type { Format, FormatDescriptor } from '../kit/index.ts';
import { stream } from '../pipeline/stream.ts';
import { sendError } from '../threads/threadErrors.ts';
import { CHUNK_BYTES, CHUNKS_IN_FLIGHT, type FromPartThread, type PartFormat, type PartJob, type ToPartThread } from './partMessages.ts';

/**
 * A part thread: writes whole parts of an export, one at a time. For each it reads the part's rows
 * from the service (its own client; pages parsed and decoded here), encodes them in the output's
 * format, and sends the encoded bytes to the thread that owns the destination, at most
 * `CHUNKS_IN_FLIGHT` chunks ahead of what that thread has stored. The CPU work of a part (parse,
 * decode, Arrow, encode) is all here; the owning thread only writes bytes, journals and commits.
 */
const port = parentPort;
if (port === null) throw new Error('partThread.ts runs as a worker thread');

const formats = new Map<string, Promise<Format>>();
let cached: { key: string; client: ServiceClient } | undefined;
let current: { id: number; controller: AbortController; acked: number; sent: number; wake: (() => void) | undefined } | undefined;

port.on('message', (message: ToPartThread) => {
  if (message.type === 'ack') {
    if (current?.id === message.id) {
      current.acked = message.acked;
      const wake = current.wake;
      current.wake = undefined;
      wake?.();
    }
    return;
  }
  if (message.type === 'warm') {
    // A failure to load shows again, with its cause, on the first part that needs the format.
    void formatOf(message.format)
      .then((format) => format.load?.())
      .catch(() => undefined);
    return;
  }
  void runPart(message);
});

async function runPart(job: PartJob): Promise<void> {
  const controller = new AbortController();
  const state = { id: job.id, controller, acked: 0, sent: 0, wake: undefined as (() => void) | undefined };
  current = state;
  try {
    const format = await formatOf(job.format);
    const schema = RecordBatchReader.from(job.schema).open().schema as Schema;
    const client = clientOf(job);
    let last = { rows: 0, bytes: 0, httpBytes: 0, wireBytes: 0 };
    // An empty part (the one part of an empty result) reads nothing: the format writes its header alone.
    const read =
      job.rows === 0
        ? undefined
        : stream(
      client,
      { executionId: job.read.executionId },
      {
        ...job.read.options,
        startOffset: job.firstRow,
        endOffset: job.firstRow + job.rows,
        signal: controller.signal,
        onProgress: (p) => {
          port!.postMessage({ type: 'page', id: job.id, rows: p.rows - last.rows, bytes: p.bytes - last.bytes, httpBytes: p.httpBytes - last.httpBytes, wireBytes: p.wireBytes - last.wireBytes } satisfies FromPartThread);
          last = p;
        },
      },
    );
    let rows = 0;
    const batches = async function* () {
      if (read === undefined) return;
      for await (const batch of read.batches()) {
        rows += batch.numRows;
        // The owning thread's schema (its metadata is written into the file), as the calling thread's writer would use.
        const out = new RecordBatch(schema, batch.data);
        (out as unknown as { schema: Schema }).schema = schema;
        yield out;
      }
    };
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (pendingBytes === 0) return;
      // Pending chunks are copies this thread owns: one is sent as it is, several are joined into one.
      let chunk = pending[0]!;
      if (pending.length > 1) {
        chunk = new Uint8Array(pendingBytes);
        let at = 0;
        for (const piece of pending) {
          chunk.set(piece, at);
          at += piece.byteLength;
        }
      }
      pending = [];
      pendingBytes = 0;
      while (state.sent - state.acked >= CHUNKS_IN_FLIGHT) await new Promise<void>((resolve) => (state.wake = resolve));
      state.sent++;
      port!.postMessage({ type: 'chunk', id: job.id, bytes: chunk } satisfies FromPartThread, [chunk.buffer as ArrayBuffer]);
    };
    for await (const chunk of format.encode(schema, batches(), controller.signal)) {
      if (chunk.byteLength === 0) continue;
      // Own a copy now (a plain Uint8Array, never a view of Node's Buffer pool, which cannot be
      // transferred): an encoder may hand out views it overwrites on the next chunk.
      pending.push(new Uint8Array(chunk));
      pendingBytes += chunk.byteLength;
      if (pendingBytes >= CHUNK_BYTES) await flush();
    }
    await flush();
    port!.postMessage({ type: 'done', id: job.id, rows } satisfies FromPartThread);
  } catch (error) {
    port!.postMessage({ type: 'error', id: job.id, error: sendError(error) } satisfies FromPartThread);
  } finally {
    if (current === state) current = undefined;
  }
}

function formatOf(wanted: PartFormat): Promise<Format> {
  const key = `${wanted.module}\n${wanted.type}\n${JSON.stringify(wanted.config)}`;
  let format = formats.get(key);
  if (format === undefined) {
    format = (async () => {
      const exports = (await import(wanted.module)) as Record<string, unknown>;
      const descriptor = Object.values(exports).find((v): v is FormatDescriptor => isDescriptor(v) && v.type === wanted.type);
      if (descriptor === undefined) throw new Error(`${wanted.module} exports no format of type ${wanted.type}`);
      // Validated and defaulted by the owning thread (resolveOutput): handed over as it came out.
      return descriptor.create(wanted.config as never);
    })();
    formats.set(key, format);
  }
  return format;
}

function isDescriptor(v: unknown): v is FormatDescriptor {
  return typeof v === 'object' && v !== null && typeof (v as FormatDescriptor).type === 'string' && typeof (v as FormatDescriptor).create === 'function';
}

function clientOf(job: PartJob): ServiceClient {
  // Every connection option counts (timeout, retry, key placement, user agent): a thread kept idle
  // from an earlier export must read as the export it writes now. One client at a time: a thread
  // writes the parts of one export after another, and an earlier one's connections are let go.
  const key = JSON.stringify(job.read.connection);
  if (cached?.key !== key) {
    void cached?.client.close().catch(() => undefined);
    cached = { key, client: new ServiceClient(job.read.connection) };
  }
  return cached.client;
}
