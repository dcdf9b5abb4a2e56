import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { SignatureV4 } from '@smithy/signature-v4';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { Sha256 } from '../../src/export/iceberg/catalog/catalogAuth.ts';

/**
 * An Iceberg REST catalog stand-in on 127.0.0.1 (no real catalog server installs here: they are JVM
 * or Rust services in containers). Every request and every response it gives is validated against
 * the official OpenAPI document (test/fixtures/iceberg-rest, vendored with its commit); a violation
 * is recorded in `violations` (tests assert none) and an invalid request gets the 400 a server gives.
 * It keeps tables in memory, writes each metadata file to the table's location (file:// only), and
 * applies commits as the spec says: every requirement checked, 409 on a failed one.
 *
 * Auth: none, a bearer token, OAuth2 client credentials at /v1/oauth/tokens (tokens expire after
 * `tokenLifeSeconds`), or AWS SigV4 checked by re-signing the request with the AWS SDK's signer.
 */
export const OPENAPI_FILE = fileURLToPath(new URL('../fixtures/iceberg-rest/rest-catalog-open-api.yaml', import.meta.url));

export type StandInAuth =
  | { readonly type: 'none' }
  | { readonly type: 'bearer'; readonly token: string }
  | { readonly type: 'oauth2'; readonly clientId: string; readonly clientSecret: string; readonly tokenLifeSeconds?: number }
  | { readonly type: 'sigv4'; readonly region: string; readonly service: string; readonly accessKeyId: string; readonly secretAccessKey: string };

export interface StandInOptions {
  readonly auth?: StandInAuth;
  /** Warehouses GET /v1/config accepts, each with the prefix it gives (default: `main` -> `wh-main`). */
  readonly warehouses?: Readonly<Record<string, string>>;
  /** S3 credentials vended (as `storage-credentials` for the table's location) to a client that asks for them. */
  readonly vend?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken: string };
  /** Stores a metadata file at a location that is not file:// (a table on S3). */
  readonly write?: (location: string, body: string) => Promise<void>;
}

export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly operation: string | undefined;
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

interface Table {
  metadata: Record<string, unknown>;
  location: string;
}

export interface CatalogStandIn {
  /** http://127.0.0.1:<port> */
  readonly uri: string;
  readonly requests: LoggedRequest[];
  /** OpenAPI violations of requests and responses, as text; a test expects none. */
  readonly violations: string[];
  /** Token exchanges served (OAuth2). */
  readonly exchanges: number;
  /** The next `count` table loads answer `status` (a catalog that fails while a writer looks up its commit). */
  failLoads(count: number, status: number): void;
  /** Every OAuth2 token issued so far stops being accepted (as when it expires). */
  expireTokens(): void;
  /** The next `count` commits answer `status`; with `apply`, the commit is applied first (a lost response). */
  failCommits(count: number, status: number, apply?: boolean): void;
  /** Runs before each commit is checked (to let another writer in between). */
  beforeCommit: (() => Promise<void>) | undefined;
  table(namespace: readonly string[], name: string): { metadata: Record<string, unknown>; metadataLocation: string } | undefined;
  namespaces(): string[][];
  createNamespace(levels: readonly string[]): void;
  stop(): Promise<void>;
}

interface Operation {
  readonly id: string;
  readonly pointer: string;
  readonly op: Record<string, unknown>;
}

const spec = parse(readFileSync(OPENAPI_FILE, 'utf8')) as { paths: Record<string, Record<string, unknown>>; components: { responses: Record<string, unknown> } };
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
ajv.addSchema({ ...spec, $id: 'iceberg' }, 'iceberg');

const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const routes = Object.entries(spec.paths).map(([template, item]) => ({
  template,
  regex: new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}$`),
  item,
}));

function route(method: string, path: string, prefixed: boolean): Operation | undefined {
  // The spec's paths carry {prefix}; a catalog without a prefix serves them without that segment.
  const candidates = prefixed ? [path] : [path, path.replace(/^\/v1\//, '/v1/_/')];
  for (const candidate of candidates) {
    const found = routes.find((r) => r.regex.test(candidate) && r.item[method.toLowerCase()] !== undefined);
    if (found) {
      const op = found.item[method.toLowerCase()] as Record<string, unknown>;
      return { id: String(op.operationId), pointer: `#/paths/${esc(found.template)}/${method.toLowerCase()}`, op };
    }
  }
  return undefined;
}

function check(pointer: string, value: unknown): string | undefined {
  const validate = ajv.getSchema(`iceberg${pointer}`) ?? ajv.compile({ $ref: `iceberg${pointer}` });
  return validate(value) ? undefined : ajv.errorsText(validate.errors);
}

/** The schema pointer of an operation's response for `status` (exact, then 4XX/5XX, then default). */
function responsePointer(operation: Operation, status: number): string | undefined {
  const responses = operation.op.responses as Record<string, { $ref?: string; content?: Record<string, unknown> }>;
  const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => responses[k] !== undefined);
  if (key === undefined) return undefined;
  let pointer = `${operation.pointer}/responses/${key}`;
  let response = responses[key]!;
  if (response.$ref) {
    pointer = response.$ref;
    response = spec.components.responses[response.$ref.split('/').pop()!] as typeof response;
  }
  return response.content?.['application/json'] ? `${pointer}/content/application~1json/schema` : undefined;
}

export async function startCatalogStandIn(options: StandInOptions = {}): Promise<CatalogStandIn> {
  const auth = options.auth ?? { type: 'none' };
  const warehouses = options.warehouses ?? { main: 'wh-main' };
  const tables = new Map<string, Table>();
  const namespaces = new Map<string, string[]>();
  const tokens = new Map<string, number>();
  const requests: LoggedRequest[] = [];
  const violations: string[] = [];
  let exchanges = 0;
  let failures: { count: number; status: number; apply: boolean } = { count: 0, status: 0, apply: false };
  let loadFailures = { count: 0, status: 0 };
  const signer =
    auth.type === 'sigv4'
      ? new SignatureV4({ credentials: { accessKeyId: auth.accessKeyId, secretAccessKey: auth.secretAccessKey }, region: auth.region, service: auth.service, sha256: Sha256 })
      : undefined;

  const authorized = async (req: IncomingMessage, body: string, url: URL): Promise<boolean> => {
    const header = req.headers.authorization;
    switch (auth.type) {
      case 'none':
        return true;
      case 'bearer':
        return header === `Bearer ${auth.token}`;
      case 'oauth2': {
        const expires = header?.startsWith('Bearer ') ? tokens.get(header.slice(7)) : undefined;
        return expires !== undefined && Date.now() < expires;
      }
      case 'sigv4': {
        // Re-sign exactly what the client says it signed, at its date, with the SDK's signer: equal or refused.
        const signed = /SignedHeaders=([^,]+)/.exec(header ?? '')?.[1]?.split(';') ?? [];
        const amzDate = String(req.headers['x-amz-date'] ?? '');
        const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(amzDate);
        if (signed.length === 0 || !m) return false;
        const headers = Object.fromEntries(signed.map((h) => [h, String(req.headers[h] ?? '')]));
        const again = await signer!.sign(
          { method: req.method!, protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body },
          { signingDate: new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) },
        );
        return again.headers.authorization === header;
      }
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      handle(req, res, body).catch((error: unknown) => {
        violations.push(`stand-in crashed on ${req.method} ${req.url}: ${(error as Error).stack}`);
        res.writeHead(500).end();
      });
    });
  });

  const vended = (req: IncomingMessage, location: string) => {
    const asked = String(req.headers['x-iceberg-access-delegation'] ?? '').split(',').map((s) => s.trim()).includes('vended-credentials');
    if (!asked || options.vend === undefined) return {};
    const { accessKeyId, secretAccessKey, sessionToken } = options.vend;
    return { 'storage-credentials': [{ prefix: location, config: { 's3.access-key-id': accessKeyId, 's3.secret-access-key': secretAccessKey, 's3.session-token': sessionToken } }] };
  };

  const persist = async (metadata: Record<string, unknown>, location: string, version: number): Promise<string> => {
    const target = `${location}/metadata/${String(version).padStart(5, '0')}-${String(metadata['table-uuid'])}.metadata.json`;
    const text = `${JSON.stringify(metadata, null, 2)}\n`;
    if (target.startsWith('file://')) {
      const path = fileURLToPath(target);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    } else await options.write?.(target, text);
    return target;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url!, 'http://127.0.0.1');
    const method = req.method!;
    const operation = route(method, url.pathname, true);
    const send = (status: number, json?: unknown) => {
      requests.push({ method, path: url.pathname + url.search, operation: operation?.id, status, headers: req.headers, body });
      if (operation && json !== undefined) {
        const pointer = responsePointer(operation, status);
        const problem = pointer === undefined ? `no response ${status} in the spec` : check(pointer, json);
        if (problem) violations.push(`response ${status} of ${operation.id}: ${problem}`);
      } else if (operation && json === undefined && responsePointer(operation, status) !== undefined && method !== 'HEAD') {
        violations.push(`response ${status} of ${operation.id}: the spec gives it a body`);
      }
      if (json === undefined) res.writeHead(status).end();
      else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
    };
    const error = (status: number, type: string, message: string) => send(status, { error: { message, type, code: status } });

    if (!operation) {
      violations.push(`request ${method} ${url.pathname}: no operation of the spec`);
      return error(400, 'BadRequestException', `no such route ${method} ${url.pathname}`);
    }
    const content = ((operation.op.requestBody as { content?: Record<string, unknown> } | undefined)?.content ?? {}) as Record<string, unknown>;
    const form = content['application/x-www-form-urlencoded'] !== undefined;
    let parsed: unknown;
    if (Object.keys(content).length > 0) {
      parsed = form ? Object.fromEntries(new URLSearchParams(body)) : body === '' ? undefined : JSON.parse(body);
      const media = form ? 'application~1x-www-form-urlencoded' : 'application~1json';
      const problem = check(`${operation.pointer}/requestBody/content/${media}/schema`, parsed);
      if (problem) {
        violations.push(`request ${operation.id}: ${problem}`);
        return error(400, 'BadRequestException', `invalid ${operation.id} request: ${problem}`);
      }
    }

    if (operation.id === 'getToken') {
      const request = parsed as Record<string, string>;
      if (auth.type !== 'oauth2' || request.client_id !== auth.clientId || request.client_secret !== auth.clientSecret) {
        return send(401, { error: 'invalid_client', error_description: 'unknown client or wrong secret' });
      }
      exchanges++;
      const token = `tok-${randomUUID()}`;
      const life = auth.tokenLifeSeconds ?? 3600;
      tokens.set(token, Date.now() + life * 1000);
      return send(200, { access_token: token, token_type: 'bearer', expires_in: life, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
    }
    if (!(await authorized(req, body, url))) return error(401, 'NotAuthorizedException', 'not authorized');

    if (operation.id === 'getConfig') {
      const warehouse = url.searchParams.get('warehouse');
      const prefix = warehouse === null ? undefined : warehouses[warehouse];
      if (warehouse !== null && prefix === undefined) return error(404, 'NoSuchWarehouseException', `warehouse ${warehouse} does not exist`);
      return send(200, { defaults: {}, overrides: prefix === undefined ? {} : { prefix } });
    }
    const segments = url.pathname.split('/').slice(2);
    const prefix = segments[0]!;
    if (!Object.values(warehouses).includes(prefix)) return error(404, 'NoSuchWarehouseException', `no warehouse with prefix ${prefix}`);
    const ns = segments[2] === undefined ? undefined : decodeURIComponent(segments[2]);
    const levels = ns?.split('\u001f');
    const tableName = segments[4] === undefined ? undefined : decodeURIComponent(segments[4]);
    const key = `${ns}\u0000${tableName}`;

    switch (operation.id) {
      case 'createNamespace': {
        const request = parsed as { namespace: string[] };
        const id = request.namespace.join('\u001f');
        if (namespaces.has(id)) return error(409, 'AlreadyExistsException', `namespace ${request.namespace.join('.')} exists`);
        namespaces.set(id, request.namespace);
        return send(200, { namespace: request.namespace, properties: {} });
      }
      case 'namespaceExists':
        return send(namespaces.has(ns!) ? 204 : 404);
      case 'loadNamespaceMetadata':
        return namespaces.has(ns!) ? send(200, { namespace: levels, properties: {} }) : error(404, 'NoSuchNamespaceException', `namespace ${levels!.join('.')} does not exist`);
      case 'createTable': {
        if (!namespaces.has(ns!)) return error(404, 'NoSuchNamespaceException', `namespace ${levels!.join('.')} does not exist`);
        const request = parsed as { name: string; location?: string; 'stage-create'?: boolean; schema: unknown; properties?: Record<string, string> };
        if (tables.has(`${ns}\u0000${request.name}`)) return error(409, 'AlreadyExistsException', `table ${request.name} exists`);
        const location = request.location ?? `file:///warehouse/${levels!.join('/')}/${request.name}`;
        const metadata = emptyMetadata(location, request.schema, request.properties ?? {});
        if (!request['stage-create']) {
          // Only staged creation is used by the writer under test; a plain create would persist here.
          tables.set(`${ns}\u0000${request.name}`, { metadata, location });
          return send(200, { 'metadata-location': await persist(metadata, location, 0), metadata });
        }
        return send(200, { metadata, ...vended(req, location) });
      }
      case 'loadTable': {
        if (loadFailures.count > 0) {
          loadFailures = { ...loadFailures, count: loadFailures.count - 1 };
          return error(loadFailures.status, 'ServiceFailureException', 'injected failure');
        }
        const table = tables.get(key);
        if (!table) return error(404, namespaces.has(ns!) ? 'NoSuchTableException' : 'NoSuchNamespaceException', `table ${levels!.join('.')}.${tableName} does not exist`);
        return send(200, { 'metadata-location': locationOf(table), metadata: publicMetadata(table.metadata), ...vended(req, table.location) });
      }
      case 'tableExists':
        return send(tables.has(key) ? 204 : 404);
      case 'updateTable':
        return commit(key, parsed as CommitRequest, levels!, tableName!, send, error);
      default:
        return error(406, 'UnsupportedOperationException', `${operation.id} is not served by the stand-in`);
    }
  };

  interface CommitRequest {
    requirements: Record<string, unknown>[];
    updates: Record<string, unknown>[];
  }

  // Commits are applied one at a time, as a catalog's transaction does: check the requirements, apply, store.
  let serial: Promise<unknown> = Promise.resolve();
  const commit = async (key: string, request: CommitRequest, levels: string[], name: string, send: (s: number, j?: unknown) => void, error: (s: number, t: string, m: string) => void) => {
    await stand.beforeCommit?.();
    const turn = serial.then(() => applyCommit(key, request, levels, name, send, error));
    serial = turn.catch(() => undefined);
    return turn;
  };

  const applyCommit = async (key: string, request: CommitRequest, levels: string[], name: string, send: (s: number, j?: unknown) => void, error: (s: number, t: string, m: string) => void) => {
    const existing = tables.get(key);
    for (const requirement of request.requirements) {
      const failed = failedRequirement(requirement, existing?.metadata);
      if (failed) return error(409, 'CommitFailedException', `Requirement failed: ${failed}`);
    }
    if (!existing && !request.requirements.some((r) => r.type === 'assert-create')) return error(404, 'NoSuchTableException', `table ${levels.join('.')}.${name} does not exist`);
    const fail = failures.count > 0 ? failures : undefined;
    if (fail) failures = { ...failures, count: failures.count - 1 };
    if (fail && !fail.apply) return error(fail.status, fail.status === 409 ? 'CommitFailedException' : 'ServiceFailureException', 'injected failure');
    const metadata = structuredClone(existing?.metadata ?? emptyMetadata('', { type: 'struct', 'schema-id': 0, fields: [] }, {}));
    if (!existing) Object.assign(metadata, { schemas: [], 'partition-specs': [] });
    applyUpdates(metadata, request.updates);
    const table: Table = { metadata, location: String(metadata.location) };
    const version = ((existing?.metadata['sluice-test.version'] as number | undefined) ?? 0) + 1;
    metadata['sluice-test.version'] = version;
    await persist(publicMetadata(metadata), table.location, version);
    tables.set(key, table);
    if (fail) return error(fail.status, 'CommitStateUnknownException', 'injected failure after the commit was applied');
    return send(200, { 'metadata-location': locationOf(table), metadata: publicMetadata(metadata) });
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const stand: CatalogStandIn = {
    uri: `http://127.0.0.1:${port}`,
    requests,
    violations,
    get exchanges() {
      return exchanges;
    },
    failCommits(count, status, apply = false) {
      failures = { count, status, apply };
    },
    failLoads(count, status) {
      loadFailures = { count, status };
    },
    beforeCommit: undefined,
    expireTokens() {
      for (const token of tokens.keys()) tokens.set(token, 0);
    },
    table(namespace, name) {
      const table = tables.get(`${namespace.join('\u001f')}\u0000${name}`);
      return table && { metadata: publicMetadata(table.metadata), metadataLocation: locationOf(table) };
    },
    namespaces: () => [...namespaces.values()],
    createNamespace(levels) {
      namespaces.set(levels.join('\u001f'), [...levels]);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return stand;
}

function emptyMetadata(location: string, schema: unknown, properties: Record<string, string>): Record<string, unknown> {
  const fields = (schema as { fields?: { id: number }[] }).fields ?? [];
  return {
    'format-version': 2,
    'table-uuid': randomUUID(),
    location,
    'last-sequence-number': 0,
    'last-updated-ms': Date.now(),
    'last-column-id': Math.max(0, ...fields.map((f) => f.id)),
    'current-schema-id': 0,
    schemas: [{ ...(schema as object), 'schema-id': 0 }],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    refs: {},
  };
}

/** The spec's requirement semantics: the failure's text, or undefined when it holds. */
function failedRequirement(r: Record<string, unknown>, metadata: Record<string, unknown> | undefined): string | undefined {
  switch (r.type) {
    case 'assert-create':
      return metadata ? 'table already exists' : undefined;
    case 'assert-table-uuid':
      return !metadata || metadata['table-uuid'] !== r.uuid ? `table uuid is ${String(metadata?.['table-uuid'])}, not ${String(r.uuid)}` : undefined;
    case 'assert-ref-snapshot-id': {
      const ref = (metadata?.refs as Record<string, { 'snapshot-id': number }> | undefined)?.[String(r.ref)];
      const actual = ref?.['snapshot-id'] ?? null;
      return actual === r['snapshot-id'] ? undefined : `ref ${String(r.ref)} is at ${String(actual)}, expected ${String(r['snapshot-id'])}`;
    }
    case 'assert-current-schema-id':
      return metadata?.['current-schema-id'] === r['current-schema-id'] ? undefined : 'current schema changed';
    case 'assert-last-assigned-field-id':
      return metadata?.['last-column-id'] === r['last-assigned-field-id'] ? undefined : 'last assigned field id changed';
    default:
      return `requirement ${String(r.type)} is not served by the stand-in`;
  }
}

function applyUpdates(m: Record<string, unknown>, updates: Record<string, unknown>[]): void {
  const schemas = m.schemas as { 'schema-id': number }[];
  const specs = m['partition-specs'] as { 'spec-id': number; fields: { 'field-id': number }[] }[];
  let lastSchema = -1;
  let lastSpec = -1;
  for (const u of updates) {
    switch (u.action) {
      case 'assign-uuid':
        m['table-uuid'] = u.uuid;
        break;
      case 'upgrade-format-version':
        m['format-version'] = u['format-version'];
        break;
      case 'add-schema': {
        const schema = u.schema as { 'schema-id': number };
        lastSchema = Math.max(-1, ...schemas.map((s) => s['schema-id'])) + 1;
        schemas.push({ ...schema, 'schema-id': lastSchema });
        m['last-column-id'] = Math.max(Number(m['last-column-id']), Number(u['last-column-id']));
        break;
      }
      case 'set-current-schema':
        m['current-schema-id'] = u['schema-id'] === -1 ? lastSchema : u['schema-id'];
        break;
      case 'add-spec': {
        const spec = u.spec as { fields: { 'field-id': number }[] };
        lastSpec = Math.max(-1, ...specs.map((s) => s['spec-id'])) + 1;
        specs.push({ ...spec, 'spec-id': lastSpec } as never);
        m['last-partition-id'] = Math.max(Number(m['last-partition-id']), ...spec.fields.map((f) => f['field-id']));
        break;
      }
      case 'set-default-spec':
        m['default-spec-id'] = u['spec-id'] === -1 ? lastSpec : u['spec-id'];
        break;
      case 'add-sort-order':
      case 'set-default-sort-order':
        break;
      case 'set-location':
        m.location = u.location;
        break;
      case 'set-properties':
        m.properties = { ...(m.properties as object), ...(u.updates as object) };
        break;
      case 'add-snapshot': {
        const snapshot = u.snapshot as { 'sequence-number': number };
        (m.snapshots as unknown[]).push(snapshot);
        m['last-sequence-number'] = snapshot['sequence-number'];
        break;
      }
      case 'set-snapshot-ref': {
        m.refs = { ...(m.refs as object), [String(u['ref-name'])]: { 'snapshot-id': u['snapshot-id'], type: u.type } };
        if (u['ref-name'] === 'main') {
          m['current-snapshot-id'] = u['snapshot-id'];
          (m['snapshot-log'] as unknown[]).push({ 'timestamp-ms': Date.now(), 'snapshot-id': u['snapshot-id'] });
        }
        break;
      }
      default:
        throw new Error(`update ${String(u.action)} is not served by the stand-in`);
    }
  }
  m['last-updated-ms'] = Date.now();
}

function publicMetadata(m: Record<string, unknown>): Record<string, unknown> {
  const { 'sluice-test.version': _v, ...rest } = m;
  return rest;
}

function locationOf(table: Table): string {
  const version = (table.metadata['sluice-test.version'] as number | undefined) ?? 0;
  return `${table.location}/metadata/${String(version).padStart(5, '0')}-${String(table.metadata['table-uuid'])}.metadata.json`;
}

