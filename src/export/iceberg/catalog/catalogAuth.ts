import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { CatalogAuth } from './catalogConfig.ts';
import { IcebergCatalogError } from './catalogErrors.ts';

/** A request as the catalog client sends it; auth adds headers to it. */
export interface CatalogRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body?: string | undefined;
}

/** Signs or authorizes catalog requests. `refused` drops a cached token after a 401, so the next call gets a new one. */
export interface CatalogAuthorizer {
  authorize(request: CatalogRequest, signal?: AbortSignal): Promise<Record<string, string>>;
  refused(): boolean;
}

const oauth2Clients = new Map<string, CatalogAuthorizer>();

/** A token is renewed this long before it expires, so a request never carries one that lapses in flight. */
const RENEW_BEFORE_MS = 60_000;

export function catalogAuthorizer(auth: CatalogAuth | undefined, uri: string, catalog: string): CatalogAuthorizer {
  switch (auth?.type) {
    case undefined:
    case 'none':
      return { authorize: async () => ({}), refused: () => false };
    case 'bearer':
      return { authorize: async () => ({ authorization: `Bearer ${auth.token}` }), refused: () => false };
    case 'oauth2': {
      // One token per client and endpoint in a process: the protocol instances of one run (check, commit) and later runs share it.
      const key = JSON.stringify([uri, auth.token_uri, auth.client_id, auth.client_secret, auth.scope]);
      let cached = oauth2Clients.get(key);
      if (cached === undefined) oauth2Clients.set(key, (cached = oauth2(auth, uri, catalog)));
      return cached;
    }
    case 'sigv4':
      return sigv4(auth);
  }
}

/**
 * OAuth2 client credentials (RFC 6749 4.4), as Iceberg's REST clients do it: a form POST of the client
 * id and secret to the token endpoint; the access token is kept until shortly before `expires_in`
 * runs out, or until the catalog refuses it (401), then exchanged again.
 */
function oauth2(auth: Extract<CatalogAuth, { type: 'oauth2' }>, uri: string, catalog: string): CatalogAuthorizer {
  const endpoint = auth.token_uri ?? `${uri.replace(/\/+$/, '')}/v1/oauth/tokens`;
  let token: { value: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;

  const exchange = async (signal?: AbortSignal): Promise<string> => {
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: auth.client_id, client_secret: auth.client_secret, scope: auth.scope ?? 'catalog' });
    let response: Response;
    try {
      response = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body, ...(signal ? { signal } : {}) });
    } catch (error) {
      throw new IcebergCatalogError('CATALOG_UNREACHABLE', catalog, `the OAuth2 token endpoint ${endpoint} did not answer (${(error as Error).message}); check catalog.auth.token_uri and the network`, { cause: error, retryable: true });
    }
    const json = (await response.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown; error?: unknown; error_description?: unknown } | undefined;
    if (!response.ok || typeof json?.access_token !== 'string') {
      const why = typeof json?.error === 'string' ? `${json.error}${typeof json.error_description === 'string' ? `: ${json.error_description}` : ''}` : `HTTP ${response.status}`;
      throw new IcebergCatalogError('CATALOG_AUTH_REFUSED', catalog, `the OAuth2 token endpoint ${endpoint} refused client ${auth.client_id} (${why}); check catalog.auth.client_id and client_secret (and scope)`);
    }
    const life = typeof json.expires_in === 'number' ? json.expires_in * 1000 : Number.POSITIVE_INFINITY;
    token = { value: json.access_token, renewAt: Date.now() + Math.max(0, life - Math.min(RENEW_BEFORE_MS, life / 10)) };
    return json.access_token;
  };

  return {
    async authorize(_request, signal) {
      if (token === undefined || Date.now() >= token.renewAt) {
        pending ??= exchange(signal).finally(() => (pending = undefined));
        await pending;
      }
      return { authorization: `Bearer ${token!.value}` };
    },
    refused() {
      const had = token !== undefined;
      token = undefined;
      return had;
    },
  };
}

/** AWS Signature V4 (Glue's and S3 Tables' Iceberg endpoints), by the AWS SDK's signer and credential chain. */
function sigv4(auth: Extract<CatalogAuth, { type: 'sigv4' }>): CatalogAuthorizer {
  let signer: Promise<{ sign(request: unknown): Promise<{ headers: Record<string, string> }> }> | undefined;
  const load = async () => {
    const [{ SignatureV4 }, { defaultProvider }] = await Promise.all([import('@smithy/signature-v4'), import('@aws-sdk/credential-provider-node')]);
    return new SignatureV4({ credentials: defaultProvider(), region: auth.region, service: auth.signing_name ?? 'glue', sha256: Sha256 });
  };
  return {
    async authorize(request) {
      signer ??= load();
      const { url } = request;
      const signed = await (await signer).sign({
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: { ...request.headers, host: url.host },
        ...(request.body === undefined ? {} : { body: request.body }),
      });
      const { host: _host, ...headers } = signed.headers;
      return headers;
    },
    refused: () => false,
  };
}

/** The SDK signer's hash: SHA-256, or HMAC-SHA-256 when given a key (what `@smithy/hash-node` does). */
export class Sha256 {
  private hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

function bytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === 'string') return data;
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
}
