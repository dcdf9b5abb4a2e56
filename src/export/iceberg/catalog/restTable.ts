import { z } from 'zod';
import { type TableMetadata, validMetadata } from '../metadata.ts';
import type { TablePointer } from '../storage.ts';
import type { LoadedTable, VendedCredentials } from '../writeIcebergTable.ts';
import { namespaceLevels, type RestCatalogConfig, tableName } from './catalogConfig.ts';
import { IcebergCatalogError } from './catalogErrors.ts';
import { namespacePath, RestCatalog } from './restCatalog.ts';

/** Times a commit answered 500/502/504 (outcome unknown) is looked up and sent again before giving up. */
const UNKNOWN_OUTCOME_ATTEMPTS = 3;

const properties = z.record(z.string(), z.string());
const loadResult = z.looseObject({
  'metadata-location': z.string().optional(),
  metadata: z.unknown(),
  config: properties.optional(),
  'storage-credentials': z.array(z.looseObject({ prefix: z.string(), config: properties })).optional(),
});

/**
 * The S3 credentials of a load or create answer for `location`: the `storage-credentials` entry with
 * the longest prefix of it, else the table `config` (older catalogs put them there).
 */
export function vendedCredentials(result: z.infer<typeof loadResult>, location: string): VendedCredentials | undefined {
  const scoped = (result['storage-credentials'] ?? []).filter((c) => location.startsWith(c.prefix)).sort((a, b) => b.prefix.length - a.prefix.length)[0];
  const config = scoped?.config ?? result.config ?? {};
  const accessKeyId = config['s3.access-key-id'];
  const secretAccessKey = config['s3.secret-access-key'];
  if (accessKeyId === undefined || secretAccessKey === undefined) return undefined;
  return { accessKeyId, secretAccessKey, sessionToken: config['s3.session-token'] };
}
const commitResponse = z.looseObject({ 'metadata-location': z.string(), metadata: z.unknown() });

/**
 * A table committed through an Iceberg REST catalog. `load` reads it (`GET .../tables/{table}`); for
 * a table not there yet it makes the namespace when absent and asks for a staged creation (which
 * creates nothing) to learn the uuid and the location the catalog accepts, before anything is
 * written. `swap` sends the snapshot as a `CommitTableRequest`: `assert-create` for a new table,
 * else `assert-table-uuid` and `assert-ref-snapshot-id` on main, so a concurrent writer's commit
 * makes ours fail with 409 and the caller commits again on top; nothing is ever overwritten.
 *
 * The data files and manifests go to the output's path, which must be the table's location.
 */
export function restTablePointer(config: RestCatalogConfig, url: string, catalog = new RestCatalog(config)): TablePointer {
  const namespace = namespaceLevels(config.namespace);
  const name = tableName(config, url);
  const qualified = [...namespace, name].join('.');
  const target = `table ${qualified} in Iceberg catalog ${catalog.name}`;
  // Asked on load and create, as the spec's data-access parameter says; a catalog that vends none ignores it.
  const delegation: Record<string, string> = config.access_delegation === 'none' ? {} : { 'x-iceberg-access-delegation': 'vended-credentials' };
  const tablePath = (signal?: AbortSignal) => catalog.path(`namespaces/${namespacePath(namespace)}/tables/${encodeURIComponent(name)}`, signal);
  const fail = (code: ConstructorParameters<typeof IcebergCatalogError>[0], detail: string, options?: ConstructorParameters<typeof IcebergCatalogError>[3]) =>
    new IcebergCatalogError(code, catalog.name, `table ${qualified}: ${detail}`, options);

  const sameLocation = (location: string) => checkLocation(location, url, fail);

  /** Whether the namespace is there; `create` makes it when absent (and allowed). */
  const ensureNamespace = async (create: boolean, signal?: AbortSignal): Promise<boolean> => {
    const path = await catalog.path(`namespaces/${namespacePath(namespace)}`, signal);
    // GET rather than HEAD: every catalog version serves it (HEAD came later to the spec).
    const found = await catalog.request('GET', path, { signal });
    if (found.status === 200) return true;
    if (found.status !== 404) throw fail('CATALOG_REJECTED', `GET ${path} answered HTTP ${found.status} (${found.message})`);
    if (config.create === false) throw fail('CATALOG_NOT_FOUND', `namespace ${namespace.join('.')} does not exist and catalog.create is false; create it in the catalog, or set create: true`);
    if (!create) return false;
    const made = await catalog.request('POST', await catalog.path('namespaces', signal), { body: { namespace, properties: {} }, signal });
    // 409: another writer made it meanwhile.
    if (made.status !== 200 && made.status !== 409) throw fail('CATALOG_REJECTED', `creating namespace ${namespace.join('.')} answered HTTP ${made.status} (${made.message}); create it in the catalog, or check the grants of catalog.auth`);
    return true;
  };

  /** A table not there yet: its staged creation (nothing is created), once its namespace is there. */
  const stage = async (create: boolean, signal?: AbortSignal): Promise<LoadedTable> => {
    if (!(await ensureNamespace(create, signal))) return { version: 0, file: '', metadata: undefined };
    if (config.create === false) throw fail('CATALOG_NOT_FOUND', 'it does not exist and catalog.create is false; create the table in the catalog, or set create: true');
    // The schema is the result's and is not known yet: an empty one stands in; the commit sends the real one.
    const staged = await catalog.request('POST', await catalog.path(`namespaces/${namespacePath(namespace)}/tables`, signal), {
      body: { name, location: url, schema: { type: 'struct', 'schema-id': 0, fields: [] }, 'stage-create': true, properties: { 'write.format.default': 'parquet' } },
      headers: delegation,
      signal,
    });
    if (staged.status === 409) return load(signal, { create });
    if (staged.status !== 200) throw fail('CATALOG_REJECTED', `a staged creation at ${url} answered HTTP ${staged.status} (${staged.message}); check the location is inside the catalog's warehouse and the grants of catalog.auth`);
    const result = loadResult.safeParse(staged.json);
    const metadata = metadataOf(result.success ? result.data.metadata : undefined, 'the staged creation');
    sameLocation(metadata.location);
    const credentials = result.success ? vendedCredentials(result.data, metadata.location) : undefined;
    return { version: 0, file: '', metadata: undefined, staged: { uuid: metadata['table-uuid'], location: metadata.location }, credentials };
  };

  const load = async (signal?: AbortSignal, options: { create?: boolean } = {}): Promise<LoadedTable> => {
    const path = await tablePath(signal);
    const response = await catalog.request('GET', path, { headers: delegation, signal });
    if (response.status === 404) return stage(options.create === true, signal);
    if (response.status !== 200) throw fail('CATALOG_REJECTED', `loading it answered HTTP ${response.status} (${response.message})`);
    const result = loadResult.safeParse(response.json);
    const metadata = metadataOf(result.success ? result.data.metadata : undefined, 'GET table');
    sameLocation(metadata.location);
    const credentials = result.success ? vendedCredentials(result.data, metadata.location) : undefined;
    return { version: 0, file: (result.success ? result.data['metadata-location'] : undefined) ?? '', metadata, credentials };
  };

  const metadataOf = (json: unknown, what: string): TableMetadata => catalogMetadata(json, what, target, fail);

  const send = async (base: LoadedTable, next: TableMetadata, signal?: AbortSignal) =>
    catalog.request('POST', await tablePath(signal), { body: { identifier: { namespace, name }, ...commitRequest(base, next) }, signal });

  return {
    target: () => target,
    load,
    async swap(base, next, signal) {
      if (base.metadata === undefined && base.staged === undefined) {
        // Its namespace was not there when the table was read (a library caller that did not check): make it now.
        const now = await load(signal, { create: true });
        if (now.metadata !== undefined) return undefined;
        base = now;
      }
      for (let attempt = 1; ; attempt++) {
        const response = await send(base, next, signal);
        if (response.status === 200) {
          const parsed = commitResponse.safeParse(response.json);
          if (!parsed.success) throw fail('CATALOG_REJECTED', 'the commit answered 200 without a metadata location');
          return parsed.data['metadata-location'];
        }
        if (response.status === 409) return undefined;
        if (![500, 502, 503, 504].includes(response.status)) throw fail('CATALOG_REJECTED', `the commit answered HTTP ${response.status} (${response.message})`);
        // The outcome is unknown: the table tells whether our snapshot made it.
        const snapshotId = String(next['current-snapshot-id']);
        const now = await load(signal).catch((error: unknown) => {
          throw fail('CATALOG_COMMIT_FAILED', `the commit answered HTTP ${response.status} and the table could not be read back (${(error as Error).message}); whether the snapshot ${snapshotId} landed is unknown, look at the table before running again`, { cause: error, unknownOutcome: true });
        });
        if (now.metadata?.snapshots?.some((s) => String(s['snapshot-id']) === snapshotId)) return now.file;
        if (String(now.metadata?.['current-snapshot-id'] ?? null) !== String(base.metadata?.['current-snapshot-id'] ?? null)) return undefined;
        if (attempt >= UNKNOWN_OUTCOME_ATTEMPTS) {
          throw fail('CATALOG_COMMIT_FAILED', `the commit answered HTTP ${response.status} (${response.message}) ${attempt} times and the table does not hold the snapshot; nothing was committed. Run again when the catalog is healthy`, { retryable: true });
        }
      }
    },
  };
}

/** The requirements and updates that take the table from `base` to `next`: a new table's whole metadata, or a snapshot (and a new schema) on top. */
export function commitRequest(base: LoadedTable, next: TableMetadata): { requirements: unknown[]; updates: unknown[] } {
  const snapshot = next.snapshots?.at(-1);
  if (snapshot === undefined) throw new Error('commitRequest: the next metadata has no snapshot');
  const commit = [
    { action: 'add-snapshot', snapshot },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshot['snapshot-id'] },
  ];
  const schema = next.schemas.find((s) => s['schema-id'] === next['current-schema-id'])!;
  const previous = base.metadata;
  if (previous === undefined) {
    return {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: base.staged?.uuid ?? next['table-uuid'] },
        { action: 'upgrade-format-version', 'format-version': 2 },
        { action: 'add-schema', schema, 'last-column-id': next['last-column-id'] },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: next['partition-specs'][0] },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': { 'order-id': 0, fields: [] } },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-location', location: base.staged?.location ?? next.location },
        { action: 'set-properties', updates: next.properties ?? {} },
        ...commit,
      ],
    };
  }
  const requirements: unknown[] = [
    { type: 'assert-table-uuid', uuid: previous['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': previous.refs?.main?.['snapshot-id'] ?? previous['current-snapshot-id'] ?? null },
  ];
  if (next.schemas.length === previous.schemas.length) return { requirements, updates: commit };
  return {
    requirements: [
      ...requirements,
      { type: 'assert-current-schema-id', 'current-schema-id': previous['current-schema-id'] },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': previous['last-column-id'] },
    ],
    updates: [{ action: 'add-schema', schema, 'last-column-id': next['last-column-id'] }, { action: 'set-current-schema', 'schema-id': -1 }, ...commit],
  };
}

/** Locations compared as engines treat them: `file:/x` and `file:///x` alike, no trailing slash. */
function normalize(location: string): string {
  return location.replace(/^file:\/(?!\/)/, 'file:///').replace(/^file:\/\/(?!\/)/, 'file:///').replace(/\/+$/, '');
}

type Fail = (code: ConstructorParameters<typeof IcebergCatalogError>[0], detail: string, options?: ConstructorParameters<typeof IcebergCatalogError>[3]) => IcebergCatalogError;

/** The table's location must be the output's path: data files go to the table's location. */
function checkLocation(location: string, url: string, fail: Fail): void {
  if (normalize(location) !== normalize(url)) {
    throw fail('CATALOG_REJECTED', `the catalog keeps this table at ${location}, but the output's path is ${url}; set the output's path to ${location} (data files go to the table's location)`);
  }
}

/** The table metadata a catalog answered, checked. */
function catalogMetadata(json: unknown, what: string, target: string, fail: Fail): TableMetadata {
  try {
    return validMetadata(json, target, what);
  } catch (error) {
    throw fail('CATALOG_REJECTED', `${what} returned table metadata sluice cannot use (${(error as Error).message})`, { cause: error });
  }
}
