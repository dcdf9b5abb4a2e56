import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { matchMethod, type Matched, queryProblems, schemaProblems } from './gcs/discovery.ts';
import { type Buckets, newUploadId, nextGeneration, objectResource, preconditionHolds, selectFields, type StoredGcsObject } from './gcs/objects.ts';

// A stand-in for Google Cloud Storage's JSON API on 127.0.0.1 (no GCS emulator installs from the
// registries here). It follows Google's published discovery document (vendored in gcs/), checks
// every request and JSON answer against it (recording what breaks it in `violations`, which tests
// assert empty), enforces generation preconditions with 412, and speaks the resumable upload
// protocol (308 with Range, chunks of 256 KiB multiples, 499 for a cancelled session). With
// `auth` it also plays the security token service of workload identity federation and refuses
// requests without a token it issued.

const CHUNK_UNIT = 256 * 1024;

interface Session {
  readonly bucket: string;
  readonly name: string;
  readonly contentType: string;
  readonly query: URLSearchParams;
  readonly chunks: Buffer[];
  received: number;
}

export interface LocalGcs {
  /** http://127.0.0.1:<port>: the gcs block's endpoint (or STORAGE_EMULATOR_HOST). */
  readonly endpoint: string;
  /** The gcs block of an output here: this endpoint, no credentials. */
  readonly options: { endpoint: string; anonymous: true };
  /** What broke Google's published description of the API, one line per request; tests expect none. */
  readonly violations: string[];
  /** Requests answered, by discovery method id (`storage.objects.insert`) or `resumable.put`. */
  readonly counts: Map<string, number>;
  createBucket(name: string): Promise<void>;
  /** Every object name under `prefix`, sorted. */
  list(bucket: string, prefix?: string): Promise<string[]>;
  get(bucket: string, name: string): Promise<Uint8Array>;
  put(bucket: string, name: string, body: string | Uint8Array): Promise<void>;
  /** Downloads every object under `prefix` into `dir`, keeping the relative layout; returns the relative names. */
  download(bucket: string, prefix: string, dir: string): Promise<string[]>;
  /** Workload identity federation: an external_account credentials file whose token exchange is this server's. */
  externalAccount(dir: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startLocalGcs(options: { auth?: boolean } = {}): Promise<LocalGcs> {
  const buckets: Buckets = new Map();
  const sessions = new Map<string, Session>();
  const violations: string[] = [];
  const counts = new Map<string, number>();
  const subject = randomBytes(16).toString('hex');
  const tokens = new Set<string>();
  let base = '';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', base);
    const body = await readBody(req);
    if (req.method === 'POST' && url.pathname === '/v1/token') return exchangeToken(body, res);
    if (options.auth && !tokens.has((req.headers.authorization ?? '').replace(/^Bearer /, ''))) return error(res, 401, 'Anonymous caller does not have storage.objects access.');
    if (url.searchParams.has('upload_id')) return resumable(req, url, body, res);
    const matched = matchMethod(req.method ?? '', url.pathname);
    if (matched === undefined) return violation(res, 404, `${req.method} ${url.pathname}: no method of the storage:v1 discovery document`);
    const problems = queryProblems(matched, url.searchParams);
    if (problems.length > 0) return violation(res, 400, problems.join('; '));
    counts.set(matched.method.id, (counts.get(matched.method.id) ?? 0) + 1);
    return route(matched, url, req, body, res);
  };

  const route = (m: Matched, url: URL, req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const q = url.searchParams;
    if (m.method.id === 'storage.buckets.insert') {
      const bucket = JSON.parse(body.toString()) as { name: string };
      if (schemaRejects('Bucket', bucket, res)) return;
      if (!buckets.has(bucket.name)) buckets.set(bucket.name, new Map());
      return json(res, 200, 'Bucket', { kind: 'storage#bucket', id: bucket.name, name: bucket.name, metageneration: '1', timeCreated: new Date().toISOString() }, q);
    }
    const objects = buckets.get(m.params.bucket!);
    if (objects === undefined) return error(res, 404, 'The specified bucket does not exist.');
    if (m.method.id === 'storage.buckets.get') return json(res, 200, 'Bucket', { kind: 'storage#bucket', id: m.params.bucket, name: m.params.bucket, metageneration: '1' }, q);
    if (m.method.id === 'storage.objects.list') return listObjects(m.params.bucket!, objects, q, res);
    if (m.method.id === 'storage.objects.insert') return insert(m.params.bucket!, objects, q, req, body, res);
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
    json(res, 200, 'Object', objectResource(base, m.params.bucket!, current), q);
  };

  const listObjects = (bucket: string, objects: Map<string, StoredGcsObject>, q: URLSearchParams, res: ServerResponse): void => {
    const prefix = q.get('prefix') ?? '';
    const after = q.has('pageToken') ? Buffer.from(q.get('pageToken')!, 'base64url').toString() : '';
    const max = Math.min(Number(q.get('maxResults') ?? 1000), 1000);
    const names = [...objects.keys()].filter((n) => n.startsWith(prefix) && n > after).sort();
    const page = names.slice(0, max);
    const out: Record<string, unknown> = { kind: 'storage#objects' };
    if (page.length > 0) out.items = page.map((n) => objectResource(base, bucket, objects.get(n)!));
    if (names.length > max) out.nextPageToken = Buffer.from(page.at(-1)!).toString('base64url');
    json(res, 200, 'Objects', out, q);
  };

  const insert = (bucket: string, objects: Map<string, StoredGcsObject>, q: URLSearchParams, req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const uploadType = q.get('uploadType');
    if (uploadType === 'multipart') return error(res, 501, 'the stand-in does not take multipart uploads');
    let name = q.get('name');
    let contentType = String(req.headers['content-type'] ?? 'application/octet-stream');
    if (uploadType === 'resumable') {
      const meta = body.byteLength > 0 ? (JSON.parse(body.toString()) as { name?: string; contentType?: string }) : {};
      if (schemaRejects('Object', meta, res)) return;
      name ??= meta.name ?? null;
      contentType = String(req.headers['x-upload-content-type'] ?? meta.contentType ?? 'application/octet-stream');
    }
    if (name === null || name === '' || Buffer.byteLength(name) > 1024) return violation(res, 400, 'storage.objects.insert: an object name (1-1024 bytes) is required');
    if (!preconditionHolds(q, objects.get(name))) return error(res, 412, 'At least one of the pre-conditions you specified did not hold.');
    if (uploadType === 'resumable') {
      const id = newUploadId();
      sessions.set(id, { bucket, name, contentType, query: q, chunks: [], received: 0 });
      res.writeHead(200, { location: `${base}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?uploadType=resumable&upload_id=${id}`, 'content-length': 0 }).end();
      return;
    }
    store(bucket, objects, name, contentType, body, q, res);
  };

  const store = (bucket: string, objects: Map<string, StoredGcsObject>, name: string, contentType: string, body: Buffer, q: URLSearchParams, res: ServerResponse): void => {
    // Checked again as the object is made: the check and the write are one step, as Google's are.
    if (!preconditionHolds(q, objects.get(name))) return error(res, 412, 'At least one of the pre-conditions you specified did not hold.');
    const object: StoredGcsObject = { name, body, generation: nextGeneration(), contentType, created: new Date() };
    objects.set(name, object);
    json(res, 200, 'Object', objectResource(base, bucket, object), q);
  };

  const resumable = (req: IncomingMessage, url: URL, body: Buffer, res: ServerResponse): void => {
    const id = url.searchParams.get('upload_id')!;
    const session = sessions.get(id);
    const extra = [...url.searchParams.keys()].filter((k) => k !== 'upload_id' && k !== 'uploadType');
    if (extra.length > 0) return violation(res, 400, `resumable upload: unexpected parameters ${extra.join(', ')}`);
    if (session === undefined) return error(res, 404, 'No such upload session (finished, cancelled or unknown).');
    counts.set(`resumable.${req.method?.toLowerCase()}`, (counts.get(`resumable.${req.method?.toLowerCase()}`) ?? 0) + 1);
    if (req.method === 'DELETE') {
      sessions.delete(id);
      res.writeHead(499).end();
      return;
    }
    if (req.method !== 'PUT') return violation(res, 405, `resumable upload: ${req.method} is not part of the protocol`);
    const range = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+|\*)$/.exec(String(req.headers['content-range'] ?? ''));
    if (range === null) return violation(res, 400, `resumable upload: bad Content-Range ${req.headers['content-range']}`);
    const total = range[3] === '*' ? undefined : Number(range[3]);
    if (range[1] !== undefined) {
      const start = Number(range[1]);
      if (Number(range[2]) - start + 1 !== body.byteLength) return violation(res, 400, `resumable upload: Content-Range ${range[0]} does not match ${body.byteLength} bytes`);
      if (start > session.received) return violation(res, 400, `resumable upload: chunk starts at ${start}, only ${session.received} bytes persisted`);
      if (total === undefined && body.byteLength % CHUNK_UNIT !== 0) return violation(res, 400, `resumable upload: a chunk that is not the last must be a multiple of 256 KiB (got ${body.byteLength})`);
      const fresh = body.subarray(session.received - start);
      session.chunks.push(fresh);
      session.received += fresh.byteLength;
    }
    if (total !== undefined && session.received === total) {
      sessions.delete(id);
      const objects = buckets.get(session.bucket)!;
      return store(session.bucket, objects, session.name, session.contentType, Buffer.concat(session.chunks), session.query, res);
    }
    res.writeHead(308, session.received > 0 ? { range: `bytes=0-${session.received - 1}`, 'content-length': 0 } : { 'content-length': 0 }).end();
  };

  const exchangeToken = (body: Buffer, res: ServerResponse): void => {
    const form = new URLSearchParams(body.toString());
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange' || form.get('subject_token') !== subject) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: 'subject token refused' }));
      return;
    }
    const token = randomBytes(16).toString('hex');
    tokens.add(token);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 }));
  };

  const schemaRejects = (ref: string, value: unknown, res: ServerResponse): boolean => {
    const problems = schemaProblems(ref, value, 'request body');
    if (problems.length > 0) violation(res, 400, problems.join('; '));
    return problems.length > 0;
  };
  const json = (res: ServerResponse, status: number, ref: string, value: Record<string, unknown>, q: URLSearchParams): void => {
    violations.push(...schemaProblems(ref, value, 'answer'));
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(selectFields(value, q.get('fields'))));
  };
  const violation = (res: ServerResponse, status: number, message: string): void => {
    violations.push(message);
    error(res, status, message);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      violations.push(`stand-in failure: ${(e as Error).message}`);
      if (!res.headersSent) error(res, 500, (e as Error).message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, body?: string | Uint8Array): Promise<Response> => {
    const answer = await fetch(`${base}${path}`, { method, body, headers: options.auth ? { authorization: `Bearer ${[...tokens][0] ?? issue()}` } : {} });
    if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
    return answer;
  };
  const issue = (): string => {
    const token = randomBytes(16).toString('hex');
    tokens.add(token);
    return token;
  };
  const objectPath = (bucket: string, name: string) => `/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}`;
  const list = async (bucket: string, prefix = ''): Promise<string[]> => {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ prefix, fields: 'items(name),nextPageToken', ...(token ? { pageToken: token } : {}) });
      const page = (await (await call('GET', `/storage/v1/b/${bucket}/o?${query}`)).json()) as { items?: { name: string }[]; nextPageToken?: string };
      names.push(...(page.items ?? []).map((i) => i.name));
      token = page.nextPageToken;
    } while (token !== undefined);
    return names.sort();
  };
  const get = async (bucket: string, name: string): Promise<Uint8Array> => new Uint8Array(await (await call('GET', `${objectPath(bucket, name)}?alt=media`)).arrayBuffer());
  return {
    endpoint: base,
    options: { endpoint: base, anonymous: true },
    violations,
    counts,
    async createBucket(name) {
      await call('POST', '/storage/v1/b?project=sluice-tests', JSON.stringify({ name }));
    },
    list,
    get,
    async put(bucket, name, body) {
      await call('POST', `/upload/storage/v1/b/${bucket}/o?uploadType=media&name=${encodeURIComponent(name)}`, body);
    },
    async download(bucket, prefix, dir) {
      const start = prefix === '' ? '' : `${prefix.replace(/\/+$/, '')}/`;
      const names: string[] = [];
      for (const name of await list(bucket, start)) {
        const relative = name.slice(start.length);
        const path = join(dir, ...relative.split('/'));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, await get(bucket, name));
        names.push(relative);
      }
      return names;
    },
    async externalAccount(dir) {
      const tokenFile = join(dir, 'subject-token');
      await writeFile(tokenFile, subject);
      const file = join(dir, 'external-account.json');
      await writeFile(file, JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/sluice/providers/tests',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `${base}/v1/token`,
        credential_source: { file: tokenFile },
      }));
      return file;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
