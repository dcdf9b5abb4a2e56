import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { GcsStandIn } from './gcs/standIn.ts';

// A stand-in for Google Cloud Storage's JSON API on 127.0.0.1 (no GCS emulator installs from the
// registries here). It follows Google's published discovery document (vendored in gcs/), checks
// every request and JSON answer against it (recording what breaks it in `violations`, which tests
// assert empty), enforces generation preconditions with 412, and speaks the resumable upload
// protocol (308 with Range, chunks of 256 KiB multiples, 499 for a cancelled session). With
// `auth` it also plays the security token service of workload identity federation and refuses
// requests without a token it issued.

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
  /**
   * Workload identity on GKE, Cloud Run or GCE: a metadata server (host:port, for GCE_METADATA_HOST)
   * that hands out this server's access tokens as Google's does, and the scopes it was asked for.
   */
  metadataServer(): Promise<{ readonly host: string; readonly scopes: string[]; readonly asked: string[]; stop(): Promise<void> }>;
  stop(): Promise<void>;
}

export async function startLocalGcs(options: { auth?: boolean } = {}): Promise<LocalGcs> {
  const standIn = new GcsStandIn(options);
  const { violations, counts, tokens } = standIn;

  const server = createServer((req, res) => {
    standIn.handle(req, res).catch((e: unknown) => {
      violations.push(`stand-in failure: ${(e as Error).message}`);
      if (!res.headersSent) res.writeHead(500).end((e as Error).message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.base = base;
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
      await writeFile(tokenFile, standIn.subject);
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
    metadataServer: () => startMetadataServer(issue),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The compute metadata server as Google documents it (cloud.google.com/compute/docs/metadata):
 * every request must carry `Metadata-Flavor: Google` (403 otherwise), every answer carries it back,
 * and `instance/service-accounts/default/token` answers an access token for the attached account.
 */
async function startMetadataServer(issue: () => string): Promise<{ host: string; scopes: string[]; asked: string[]; stop(): Promise<void> }> {
  const scopes: string[] = [];
  const asked: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://metadata');
    asked.push(url.pathname);
    const headers = { 'metadata-flavor': 'Google', 'content-type': 'application/json' };
    if (req.headers['metadata-flavor'] !== 'Google') return void res.writeHead(403, headers).end('Missing Metadata-Flavor:Google header.');
    if (url.pathname === '/computeMetadata/v1/instance' || url.pathname === '/computeMetadata/v1/instance/') return void res.writeHead(200, headers).end('{}');
    if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token') {
      scopes.push(...(url.searchParams.get('scopes') ?? '').split(',').filter((s) => s !== ''));
      return void res.writeHead(200, headers).end(JSON.stringify({ access_token: issue(), expires_in: 3599, token_type: 'Bearer' }));
    }
    res.writeHead(404, headers).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    scopes,
    asked,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
