import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { matchMethod, type Matched, queryProblems, schemaProblems } from './discovery.ts';
import { type Buckets, newUploadId, nextGeneration, objectResource, preconditionHolds, selectFields, type StoredGcsObject } from './objects.ts';

const CHUNK_UNIT = 256 * 1024;

interface Session {
  readonly bucket: string;
  readonly name: string;
  readonly contentType: string;
  readonly query: URLSearchParams;
  readonly chunks: Buffer[];
  received: number;
}

/** The stand-in's state and its answers, one method per method of the API (or step of a protocol). */
export class GcsStandIn {
  readonly buckets: Buckets = new Map();
  readonly sessions = new Map<string, Session>();
  readonly violations: string[] = [];
  readonly counts = new Map<string, number>();
  readonly subject = randomBytes(16).toString('hex');
  readonly tokens = new Set<string>();
  base = '';
  readonly options: { auth?: boolean };

  constructor(options: { auth?: boolean }) {
    this.options = options;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.base);
    const body = await readBody(req);
    if (req.method === 'POST' && url.pathname === '/v1/token') return this.exchangeToken(body, res);
    if (this.options.auth && !this.tokens.has((req.headers.authorization ?? '').replace(/^Bearer /, ''))) return error(res, 401, 'Anonymous caller does not have storage.objects access.');
    if (url.searchParams.has('upload_id')) return this.resumable(req, url, body, res);
    const matched = matchMethod(req.method ?? '', url.pathname);
    if (matched === undefined) return this.violation(res, 404, `${req.method} ${url.pathname}: no method of the storage:v1 discovery document`);
    const problems = queryProblems(matched, url.searchParams);
    if (problems.length > 0) return this.violation(res, 400, problems.join('; '));
    this.counts.set(matched.method.id, (this.counts.get(matched.method.id) ?? 0) + 1);
    return this.route(matched, url, req, body, res);
  }

  route(m: Matched, url: URL, req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const q = url.searchParams;
    if (m.method.id === 'storage.buckets.insert') {
      const bucket = JSON.parse(body.toString()) as { name: string };
      if (this.schemaRejects('Bucket', bucket, res)) return;
      if (!this.buckets.has(bucket.name)) this.buckets.set(bucket.name, new Map());
      return this.json(res, 200, 'Bucket', { kind: 'storage#bucket', id: bucket.name, name: bucket.name, metageneration: '1', timeCreated: new Date().toISOString() }, q);
    }
    const objects = this.buckets.get(m.params.bucket!);
    if (objects === undefined) return error(res, 404, 'The specified bucket does not exist.');
    if (m.method.id === 'storage.buckets.get') return this.json(res, 200, 'Bucket', { kind: 'storage#bucket', id: m.params.bucket, name: m.params.bucket, metageneration: '1' }, q);
    if (m.method.id === 'storage.objects.list') return this.listObjects(m.params.bucket!, objects, q, res);
    if (m.method.id === 'storage.objects.insert') return this.insert(m.params.bucket!, objects, q, req, body, res);
    const current = objects.get(m.params.object!);
    if (current === undefined) return error(res, 404, `No such object: ${m.params.bucket}/${m.params.object}`);
    if (!preconditionHolds(q, current)) return error(res, 412, 'At least one of the pre-conditions you specified did not hold.');
    if (m.method.id === 'storage.objects.delete') {
      objects.delete(current.name);
      res.writeHead(204).end();
      return;
    }
    if (q.get('alt') === 'media') {
      res.writeHead(200, { 'content-type': current.contentType, 'content-length': current.body.byteLength, 'x-goog-generation': current.generation, 'x-goog-metageneration': '1' }).end(current.body);
      return;
    }
    this.json(res, 200, 'Object', objectResource(this.base, m.params.bucket!, current), q);
  }

  listObjects(bucket: string, objects: Map<string, StoredGcsObject>, q: URLSearchParams, res: ServerResponse): void {
    const prefix = q.get('prefix') ?? '';
    const after = q.has('pageToken') ? Buffer.from(q.get('pageToken')!, 'base64url').toString() : '';
    const max = Math.min(Number(q.get('maxResults') ?? 1000), 1000);
    const names = [...objects.keys()].filter((n) => n.startsWith(prefix) && n > after).sort();
    const page = names.slice(0, max);
    const out: Record<string, unknown> = { kind: 'storage#objects' };
    if (page.length > 0) out.items = page.map((n) => objectResource(this.base, bucket, objects.get(n)!));
    if (names.length > max) out.nextPageToken = Buffer.from(page.at(-1)!).toString('base64url');
    this.json(res, 200, 'Objects', out, q);
  }

  insert(bucket: string, objects: Map<string, StoredGcsObject>, q: URLSearchParams, req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const uploadType = q.get('uploadType');
    if (uploadType === 'multipart') return error(res, 501, 'the stand-in does not take multipart uploads');
    let name = q.get('name');
    let contentType = String(req.headers['content-type'] ?? 'application/octet-stream');
    if (uploadType === 'resumable') {
      const meta = body.byteLength > 0 ? (JSON.parse(body.toString()) as { name?: string; contentType?: string }) : {};
      if (this.schemaRejects('Object', meta, res)) return;
      name ??= meta.name ?? null;
      contentType = String(req.headers['x-upload-content-type'] ?? meta.contentType ?? 'application/octet-stream');
    }
    if (name === null || name === '' || Buffer.byteLength(name) > 1024) return this.violation(res, 400, 'storage.objects.insert: an object name (1-1024 bytes) is required');
    if (!preconditionHolds(q, objects.get(name))) return error(res, 412, 'At least one of the pre-conditions you specified did not hold.');
    if (uploadType === 'resumable') {
      const id = newUploadId();
      this.sessions.set(id, { bucket, name, contentType, query: q, chunks: [], received: 0 });
      res.writeHead(200, { location: `${this.base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?uploadType=resumable&upload_id=${id}`, 'content-length': 0 }).end();
      return;
    }
    this.store(bucket, objects, name, contentType, body, q, res);
  }

  store(bucket: string, objects: Map<string, StoredGcsObject>, name: string, contentType: string, body: Buffer, q: URLSearchParams, res: ServerResponse): void {
    // Checked again as the object is made: the check and the write are one step, as Google's are.
    if (!preconditionHolds(q, objects.get(name))) return error(res, 412, 'At least one of the pre-conditions you specified did not hold.');
    const object: StoredGcsObject = { name, body, generation: nextGeneration(), contentType, created: new Date() };
    objects.set(name, object);
    this.json(res, 200, 'Object', objectResource(this.base, bucket, object), q);
  }

  resumable(req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): void {
    const id = url.searchParams.get('upload_id')!;
    const session = this.sessions.get(id);
    const extra = [...url.searchParams.keys()].filter((k) => k !== 'upload_id' && k !== 'uploadType');
    if (extra.length > 0) return this.violation(res, 400, `resumable upload: unexpected parameters ${extra.join(', ')}`);
    if (session === undefined) return error(res, 404, 'No such upload session (finished, cancelled or unknown).');
    this.counts.set(`resumable.${req.method?.toLowerCase()}`, (this.counts.get(`resumable.${req.method?.toLowerCase()}`) ?? 0) + 1);
    if (req.method === 'DELETE') {
      this.sessions.delete(id);
      res.writeHead(499).end();
      return;
    }
    if (req.method !== 'PUT') return this.violation(res, 405, `resumable upload: ${req.method} is not part of the protocol`);
    const range = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+|\*)$/.exec(String(req.headers['content-range'] ?? ''));
    if (range === null) return this.violation(res, 400, `resumable upload: bad Content-Range ${req.headers['content-range']}`);
    const total = range[3] === '*' ? undefined : Number(range[3]);
    if (range[1] !== undefined) {
      const start = Number(range[1]);
      if (Number(range[2]) - start + 1 !== body.byteLength) return this.violation(res, 400, `resumable upload: Content-Range ${range[0]} does not match ${body.byteLength} bytes`);
      if (start > session.received) return this.violation(res, 400, `resumable upload: chunk starts at ${start}, only ${session.received} bytes persisted`);
      if (total === undefined && body.byteLength % CHUNK_UNIT !== 0) return this.violation(res, 400, `resumable upload: a chunk that is not the last must be a multiple of 256 KiB (got ${body.byteLength})`);
      const fresh = body.subarray(session.received - start);
      session.chunks.push(fresh);
      session.received += fresh.byteLength;
    }
    if (total !== undefined && session.received === total) {
      this.sessions.delete(id);
      const objects = this.buckets.get(session.bucket)!;
      return this.store(session.bucket, objects, session.name, session.contentType, Buffer.concat(session.chunks), session.query, res);
    }
    res.writeHead(308, session.received > 0 ? { range: `bytes=0-${session.received - 1}`, 'content-length': 0 } : { 'content-length': 0 }).end();
  }

  exchangeToken(body: Buffer, res: ServerResponse): void {
    const form = new URLSearchParams(body.toString());
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange' || form.get('subject_token') !== this.subject) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: 'subject token refused' }));
      return;
    }
    const token = randomBytes(16).toString('hex');
    this.tokens.add(token);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 }));
  }

  schemaRejects(ref: string, value: unknown, res: ServerResponse): boolean {
    const problems = schemaProblems(ref, value, 'request body');
    if (problems.length > 0) this.violation(res, 400, problems.join('; '));
    return problems.length > 0;
  }
  json(res: ServerResponse, status: number, ref: string, value: Record<string, unknown>, q: URLSearchParams): void {
    this.violations.push(...schemaProblems(ref, value, 'answer'));
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(selectFields(value, q.get('fields'))));
  }
  violation(res: ServerResponse, status: number, message: string): void {
    this.violations.push(message);
    error(res, status, message);
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function error(res: ServerResponse, status: number, message: string): void {
  const reason = status === 412 ? 'conditionNotMet' : status === 404 ? 'notFound' : status === 401 ? 'required' : 'invalid';
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason }] } }));
}
