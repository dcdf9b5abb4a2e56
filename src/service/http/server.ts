import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline, type Writable } from 'node:stream';
import { API_PREFIX, MESSAGES } from '../../protocol/index.ts';
import { requireScope, type KeyRing } from '../auth.ts';
import { OWNER_CHALLENGE_HEADER, OWNER_PROOF_HEADER, ownerProof } from '../owner.ts';
import { HttpError } from './errors.ts';
import { RateLimitError } from '../limits/errors.ts';
import type { Faults } from './faults.ts';
import { errorReply, json, partsBody, type PartsBody, type Reply } from './reply.ts';
import type { Router } from './router.ts';
import { parseJson, readBody } from './body.ts';
import { CODINGS, compressor, MIN_COMPRESSED_BYTES, negotiateCoding, type Coding } from './contentCoding.ts';
import { serviceRequestSpan } from '../../telemetry/index.ts';

export interface HandlerDeps {
  router: Router;
  keys: KeyRing;
  faults: Faults;
  maxBodyBytes: () => number;
  /** Per-key rate limit of the operation's class (Read-scope operations read, the rest write); off when absent. */
  rateLimit?: (key: string, cls: 'read' | 'write', team: string) => { allowed: true } | { allowed: false; retryAfterSeconds: number };
  /**
   * The service's own origin, for absolute links (next_uri): the `public_url` setting, else the
   * address it is bound to. Never the request's Host header: a link built from it would send the
   * client's key wherever the request claimed to be addressed.
   */
  origin: () => string;
  /** The owner record's token while this service is the folder's advertised owner (owner.ts). */
  ownerToken?: () => string | undefined;
}

/**
 * The order of protocol.md section 1: faults (they stand in for the network and proxies in front
 * of the service), then the API key (before anything else, even before an unknown path is 404),
 * then route, scope and handler.
 */
export function createRequestHandler(deps: HandlerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const token = deps.ownerToken?.();
    const proof = token === undefined ? undefined : ownerProof(token, req.headers[OWNER_CHALLENGE_HEADER]);
    // Whatever the answer (a 401 or a fault included): a borrower asks before it sends its key anywhere.
    if (proof !== undefined) res.setHeader(OWNER_PROOF_HEADER, proof);
    const span = serviceRequestSpan(req);
    if (span !== undefined) res.once('close', () => span(res.statusCode));
    void handle(deps, req)
      .catch((err: unknown) => replyForError(err, req))
      .then((reply) => send(req, res, reply, deps.faults.shouldReset(req.method)))
      .catch((err: unknown) => {
        console.error('sluice service: writing a response failed:', err);
        res.destroy();
      });
  };
}

async function handle(deps: HandlerDeps, req: IncomingMessage): Promise<Reply> {
  await deps.faults.delay();
  const faulted = deps.faults.error();
  if (faulted !== undefined) return faulted;

  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://service.invalid');
  } catch {
    throw new HttpError(400, 'Bad Request: the request target is not a valid URL');
  }
  const principal = deps.keys.authenticate(req.headers['x-service-api-key'], url.searchParams.get('api_key'));

  const path = url.pathname.startsWith(`${API_PREFIX}/`) ? url.pathname.slice(API_PREFIX.length) : undefined;
  const match = path === undefined ? ({ kind: 'none' } as const) : deps.router.match(req.method ?? 'GET', path);
  if (match.kind === 'none') throw new HttpError(404, `Not found: no operation at ${req.method} ${url.pathname}`);
  if (match.kind === 'wrong-method') {
    throw new HttpError(405, `Method not allowed: ${url.pathname} accepts ${match.allow.join(', ')}`, { allow: match.allow.join(', ') });
  }
  requireScope(principal, match.route.scope);
  const rate = deps.rateLimit?.(principal.key, match.route.rate ?? (match.route.scope === 'Read' ? 'read' : 'write'), principal.team);
  if (rate !== undefined && !rate.allowed) throw new RateLimitError(rate.retryAfterSeconds);

  const origin = deps.origin();
  let raw: Promise<Buffer> | undefined;
  const rawBody = (): Promise<Buffer> => (raw ??= readBody(req, deps.maxBodyBytes()));
  return match.route.handle({
    req,
    url,
    params: match.params,
    principal,
    origin,
    body: () => rawBody().then(parseJson),
    rawBody,
  });
}

function replyForError(err: unknown, req: IncomingMessage): Reply {
  if (err instanceof HttpError) return errorReply(err.status, err.message, err.headers);
  // The client went away while its request body was read (a killed or stopped process): nobody
  // is there for the answer, and nothing went wrong in the service.
  if (clientAborted(err, req)) return errorReply(400, 'Bad Request: the client closed the connection before its request was read');
  console.error('sluice service: internal error:', err);
  return errorReply(500, MESSAGES.internal);
}

function clientAborted(err: unknown, req: IncomingMessage): boolean {
  return req.destroyed && err instanceof Error && (err as NodeJS.ErrnoException).code === 'ECONNRESET';
}

/**
 * Writes a reply in the content coding the request accepts (contentCoding.ts): an answer of at
 * least MIN_COMPRESSED_BYTES is compressed as it is written, chunk by chunk with backpressure
 * (never built whole first), and sent chunked, unless the reply has it in stored frames (sent
 * with its length); a smaller one, or one to a client that accepts no coding, goes as is with
 * its length.
 */
async function send(req: IncomingMessage, res: ServerResponse, reply: Reply, reset: boolean): Promise<void> {
  const accepted = negotiateCoding(header(req.headers['accept-encoding']));
  // An error answer goes as it is (uncompressed, small): what went wrong matters more than the coding.
  if (accepted === undefined && reply.status >= 200 && reply.status < 300) {
    reply = json(406, {
      error: `Not Acceptable: answers are sent as ${[...CODINGS, 'identity'].join(', ')}; the request's Accept-Encoding header was ${JSON.stringify(header(req.headers['accept-encoding']))}`,
      supported: [...CODINGS, 'identity'],
    });
  }
  const length = typeof reply.body === 'string' ? Buffer.byteLength(reply.body, 'utf8') : reply.body.length;
  const coding = accepted !== undefined && accepted !== 'identity' && length >= MIN_COMPRESSED_BYTES ? accepted : undefined;
  res.statusCode = reply.status;
  res.setHeader('content-type', reply.contentType);
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  // Caches keep one answer per coding: a body this large would have been compressed for another request.
  if (length >= MIN_COMPRESSED_BYTES) res.setHeader('vary', 'accept-encoding');
  if (coding !== undefined) {
    res.setHeader('content-encoding', coding);
    const body = typeof reply.body === 'string' ? partsBody([reply.body]) : reply.body;
    const stored = await storedBody(reply, coding);
    if (stored === undefined) return sendCompressed(res, body, coding, reset);
    // Sent from stored frames, with its length: the body's own files are not read.
    closeParts(body);
    res.setHeader('content-length', stored.length);
    return sendParts(res, stored, reset);
  }
  res.setHeader('content-length', length);
  if (typeof reply.body !== 'string') {
    sendParts(res, reply.body, reset);
    return;
  }
  const body = Buffer.from(reply.body, 'utf8');
  if (reset && body.length > 1) {
    // Half the body, then the connection dies: the client sees a truncated response.
    res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.destroy());
    return;
  }
  if (reply.headers?.connection === 'close' && !req.complete) {
    // Refused before the body was read (413): close instead of draining an unwanted upload.
    const socket: Socket | null = req.socket;
    res.end(body, () => socket?.destroy());
    return;
  }
  res.end(body);
}

/**
 * The reply's body in `coding` from stored frames, or undefined: it has none for that coding, or
 * storing them failed (the result dropped meanwhile, a full disk), which only costs compressing
 * this answer per request.
 */
async function storedBody(reply: Reply, coding: Coding): Promise<PartsBody | undefined> {
  if (reply.precompressed === undefined) return undefined;
  try {
    return await reply.precompressed(coding);
  } catch (err) {
    console.error(`sluice service: serving a stored ${coding} frame failed (compressed per request instead):`, err);
    return undefined;
  }
}

/**
 * Streams a PartsBody with backpressure. A client that goes away mid-body ends the stream (no
 * error reply can follow a started body: the connection is destroyed, and the files are closed).
 */
function sendParts(res: ServerResponse, body: PartsBody, reset: boolean): void {
  // A reset fault sends half the body, then kills the connection (as for string bodies).
  const budget = reset && body.length > 1 ? Math.floor(body.length / 2) : body.length;
  const cut = budget < body.length;
  // A cut body must not end the response: an ended response hands its socket back to keep-alive,
  // where destroying the response no longer closes it, and the client waits for the missing bytes
  // until the server's keep-alive timeout. Destroyed unended, the connection drops at once.
  writeParts(res, body, budget)
    .then(() => (cut ? res.destroy() : res.end()))
    .catch(() => res.destroy())
    .finally(() => closeParts(body));
}

/**
 * Streams a PartsBody through a compressor into the response. The pipeline destroys both when the
 * client goes away, which fails the pending write and closes the files. A reset fault compresses
 * half the body, sends what that made, then kills the connection: the client sees a compressed
 * stream cut short.
 */
function sendCompressed(res: ServerResponse, body: PartsBody, coding: Coding, reset: boolean): void {
  const z = compressor(coding, body.length);
  pipeline(z, res, () => undefined);
  const budget = reset && body.length > 1 ? Math.floor(body.length / 2) : body.length;
  const cut = budget < body.length;
  writeParts(z, body, budget)
    .then(() => {
      if (!cut) return void z.end();
      z.flush(() => res.write('', () => res.destroy()));
    })
    .catch(() => {
      z.destroy();
      res.destroy();
    })
    .finally(() => closeParts(body));
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Bytes read from a file per write. */
const CHUNK_BYTES = 256 * 1024;
/**
 * Read buffers the socket has finished with, for the next reads: serving a page allocates no new
 * memory per chunk (fresh 256 KB buffers per read made garbage collection about a third of the
 * service's CPU while it served pages). Bounded: a burst of requests leaves no more than this.
 */
const spareChunks: Buffer[] = [];
const SPARE_CHUNKS = 16;

async function writeParts(res: Writable, body: PartsBody, budget: number): Promise<void> {
  let left = budget;
  for (let i = 0; i < body.parts.length; ) {
    if (left <= 0) return;
    const p = body.parts[i]!;
    if (typeof p === 'string' || p instanceof Uint8Array) {
      // A run of pieces in memory (an Arrow page sent from the encoder's buffers is dozens of
      // them, some of a few bytes) goes out in one writev, not a send per piece.
      const run: Uint8Array[] = [];
      for (; i < body.parts.length && left > 0; i++) {
        const q = body.parts[i]!;
        if (typeof q !== 'string' && !(q instanceof Uint8Array)) break;
        const bytes = typeof q === 'string' ? Buffer.from(q, 'utf8') : q;
        run.push(bytes.subarray(0, left));
        left -= bytes.byteLength;
      }
      await writeRun(res, run);
      continue;
    }
    i++;
    const end = Math.min(p.end, p.start + left);
    for (let at = p.start; at < end; ) {
      const chunk = spareChunks.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
      const { bytesRead } = await p.handle.read(chunk, 0, Math.min(CHUNK_BYTES, end - at), at);
      if (bytesRead === 0) throw new Error(`file ends at ${at}, before byte ${end} of the range to send`);
      at += bytesRead;
      await write(res, chunk.subarray(0, bytesRead), chunk);
    }
    left -= end - p.start;
  }
}

/** Writes the pieces corked (one writev), then waits for the socket to drain if its buffer is full. */
function writeRun(res: Writable, pieces: Uint8Array[]): Promise<void> {
  if (pieces.length === 1) return write(res, pieces[0]!, undefined);
  if (res.destroyed) return Promise.reject(new Error('the response was closed'));
  res.cork();
  for (let k = 0; k < pieces.length - 1; k++) res.write(pieces[k]!);
  const last = write(res, pieces.at(-1)!, undefined);
  res.uncork();
  return last;
}

/**
 * Writes a chunk, waiting for the socket (or the compressor) to drain when its buffer is full;
 * `reusable` goes back to the spare buffers once it has taken the chunk (its callback), not before.
 */
function write(res: Writable, chunk: Uint8Array, reusable: Buffer | undefined): Promise<void> {
  if (res.destroyed) return Promise.reject(new Error('the response was closed'));
  const more = res.write(chunk, (error) => {
    if (error == null && reusable !== undefined && spareChunks.length < SPARE_CHUNKS) spareChunks.push(reusable);
  });
  if (more) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('the response was closed'));
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

function closeParts(body: PartsBody): void {
  for (const p of body.parts) {
    if (typeof p !== 'string' && !(p instanceof Uint8Array)) void p.handle.close().catch(() => undefined);
  }
}
