import { PreconditionFailedError, type PutResult } from '../../../src/kit/index.ts';
import type { Answer, Call, GcsApi } from './api.ts';

export interface Upload {
  readonly api: GcsApi;
  readonly url: string;
  readonly bucket: string;
  /** The name within the sink, for messages. */
  readonly name: string;
  /** The object's full name in the bucket. */
  readonly object: string;
  readonly query: Record<string, string | undefined>;
  readonly contentType: string;
  readonly chunkSize: number;
  readonly signal?: AbortSignal | undefined;
}

/** The stored object's generation and size from an upload's final answer. */
export async function storedObject(api: GcsApi, call: Call, answer: Answer, upload: Pick<Upload, 'url' | 'name'>): Promise<PutResult> {
  if (answer.status === 412) {
    await answer.body.dump();
    throw new PreconditionFailedError(upload.url, upload.name, `${upload.name} changed since it was read (another writer committed first)`);
  }
  if (answer.status !== 200 && answer.status !== 201) throw await api.fail(call, answer);
  const object = (await answer.body.json()) as { generation?: unknown; size?: unknown };
  return { bytes: Number(object.size), version: String(object.generation) };
}

/** One request with the whole body (uploadType=media): what a body held in memory is sent as. */
export async function mediaUpload(upload: Upload, body: Uint8Array): Promise<PutResult> {
  const call: Call = {
    method: 'POST',
    path: `/upload/storage/v1/b/${encodeURIComponent(upload.bucket)}/o`,
    query: { uploadType: 'media', name: upload.object, ...upload.query },
    headers: { 'content-type': upload.contentType },
    body,
    signal: upload.signal,
    what: `uploading ${upload.name} to`,
  };
  return storedObject(upload.api, call, await upload.api.send(call), upload);
}

/**
 * A streamed body: one media upload when it fits in a chunk, else a resumable upload sent a chunk
 * at a time, so one chunk is held in memory. The object appears only when the last chunk
 * finalises it, under the upload's precondition; an upload given up is cancelled.
 */
export async function streamedUpload(upload: Upload, body: AsyncIterable<Uint8Array>): Promise<PutResult> {
  const chunk = new Uint8Array(upload.chunkSize);
  let filled = 0;
  let sent = 0;
  let session: string | undefined;
  try {
    for await (let piece of body) {
      while (piece.byteLength > 0) {
        if (filled === chunk.byteLength) {
          session ??= await openSession(upload);
          await sendChunk(upload, session, chunk, sent, undefined);
          sent += filled;
          filled = 0;
        }
        const take = Math.min(piece.byteLength, chunk.byteLength - filled);
        chunk.set(piece.subarray(0, take), filled);
        filled += take;
        piece = piece.subarray(take);
      }
    }
    if (session === undefined) return await mediaUpload(upload, chunk.subarray(0, filled));
    const final = await sendChunk(upload, session, chunk.subarray(0, filled), sent, sent + filled);
    session = undefined;
    return final!;
  } finally {
    // Cancels an upload left unfinished (a failed read, an abort): nothing of it becomes visible, and
    // Google drops the bytes sent so far.
    if (session !== undefined) await cancel(upload, session);
  }
}

async function openSession(upload: Upload): Promise<string> {
  const call: Call = {
    method: 'POST',
    path: `/upload/storage/v1/b/${encodeURIComponent(upload.bucket)}/o`,
    query: { uploadType: 'resumable', name: upload.object, ...upload.query },
    headers: { 'content-type': 'application/json; charset=UTF-8', 'x-upload-content-type': upload.contentType },
    body: JSON.stringify({ name: upload.object, contentType: upload.contentType }),
    signal: upload.signal,
    what: `starting the upload of ${upload.name} to`,
  };
  const answer = await upload.api.send(call);
  if (answer.status === 412) await storedObject(upload.api, call, answer, upload);
  if (answer.status !== 200 && answer.status !== 201) throw await upload.api.fail(call, answer);
  await answer.body.dump();
  const location = answer.headers.location;
  if (typeof location !== 'string') throw await upload.api.fail(call, { ...answer, status: 502 });
  return location;
}

/**
 * Sends `bytes` at `offset` of the session; `total` (the object's size) finalises it. A chunk the
 * service kept only in part (308 with a shorter Range) is sent on from where it stopped.
 */
async function sendChunk(upload: Upload, session: string, bytes: Uint8Array, offset: number, total: number | undefined): Promise<PutResult | undefined> {
  let from = 0;
  for (;;) {
    const rest = bytes.subarray(from);
    const range = rest.byteLength === 0 ? `bytes */${total}` : `bytes ${offset + from}-${offset + bytes.byteLength - 1}/${total ?? '*'}`;
    const call: Call = { method: 'PUT', path: session, headers: { 'content-range': range }, body: rest, signal: upload.signal, what: `uploading ${upload.name} to` };
    const answer = await upload.api.send(call);
    if (answer.status !== 308) return storedObject(upload.api, call, answer, upload);
    await answer.body.dump();
    const kept = /^bytes=0-(\d+)$/.exec(String(answer.headers.range ?? ''));
    const persisted = kept ? Number(kept[1]) + 1 : 0;
    if (total === undefined && persisted === offset + bytes.byteLength) return undefined;
    if (persisted < offset || persisted > offset + bytes.byteLength) throw await upload.api.fail(call, { ...answer, status: 502 });
    from = persisted - offset;
  }
}

async function cancel(upload: Upload, session: string): Promise<void> {
  try {
    const answer = await upload.api.send({ method: 'DELETE', path: session, what: `cancelling the upload of ${upload.name} to` });
    await answer.body.dump();
  } catch {
    // Best effort: an unfinished session expires by itself within a week and is never visible.
  }
}
