// Iceberg tables committed through a REST catalog (`catalog: { type: rest }`): job files run by the
// job runner against the real local service; the catalog is the stand-in of test/helpers, which
// validates every request and response against the official OpenAPI document and applies commit
// requirements as the spec says. Read back by independent clients: iceberg-js loads the table from
// the catalog, icebird reads the data files of the metadata the catalog points at, value by value
// against the service's rows.
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IcebergRestCatalog } from 'iceberg-js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { builtins } from '../../../connectors/index.ts';
import { ServiceClient } from '../../../src/client/index.ts';
import { parseJobFile, type Job } from '../../../src/config/index.ts';
import { describeOutput, resolveOutput } from '../../../src/export/index.ts';
import { IcebergCatalogError } from '../../../src/export/iceberg/catalog/catalogErrors.ts';
import { IcebergCommitConflictError, IcebergSchemaConflictError } from '../../../src/export/iceberg/errors.ts';
import { catalogTarget } from '../../../src/export/iceberg/catalog/catalogConfig.ts';
import { type JobSummary, runJob } from '../../../src/jobs/run/runJob.ts';
import { planRun } from '../../../src/jobs/plan/planRun.ts';
import { formatPlan, planFields } from '../../../src/cli/output/shardSummary.ts';
import { ROOT, sluice } from '../../cli/sluiceProcess.ts';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { startLocalS3, type LocalS3 } from '../../helpers/s3.ts';
import { startPreconditionGate, type PreconditionGate } from '../../helpers/preconditionGate.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { icebirdRead } from '../../helpers/icebird.ts';
import { type CatalogStandIn, type StandInAuth, startCatalogStandIn } from '../../helpers/icebergCatalog.ts';
import { expectIcebirdRows, serviceRows } from './icebirdValues.ts';

let svc: TestService;
let client: ServiceClient;
let dir: string;
const stands: CatalogStandIn[] = [];

const ALL = 'select * from sample.all_types order by id';
const NARROW = 'select id, c_varchar from sample.all_types order by id';
const WIDER = 'select id, c_varchar, c_bigint, c_date from sample.all_types order by id';

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 2 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  dir = await mkdtemp(join(tmpdir(), 'sluice-iceberg-rest-'));
});
afterEach(() => {
  // Every request and response of every test followed the OpenAPI document.
  for (const stand of stands) expect(stand.violations).toEqual([]);
});
afterAll(async () => {
  await Promise.all(stands.map((s) => s.stop()));
  await client?.close();
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function standIn(auth?: StandInAuth): Promise<CatalogStandIn> {
  const stand = await startCatalogStandIn(auth ? { auth } : {});
  stands.push(stand);
  return stand;
}

let tables = 0;
const tableName = (what: string) => `${what}_${++tables}`;

function job(name: string, sql: string, output: string, env: Record<string, string> = {}): Job {
  const text = `jobs:\n  - name: ${name}\n    source: { sql: "${sql}" }\n    outputs:\n      - format: parquet\n        table: iceberg\n        ${output}\n`;
  return parseJobFile(text, { file: 'catalog.yaml', registry: builtins, env }).jobs[0]!;
}

/** An output committed through `stand` to analytics.<table>, at a folder of the test's. */
function output(stand: CatalogStandIn, table: string, extra = '', auth = ''): string {
  return [
    `path: "${join(dir, table)}"`,
    `catalog:`,
    `          type: rest`,
    `          uri: ${stand.uri}`,
    `          warehouse: main`,
    `          namespace: analytics`,
    ...(auth ? [`          auth: ${auth}`] : []),
    ...(extra ? [`          ${extra}`] : []),
  ].join('\n        ');
}

function run(j: Job): Promise<JobSummary> {
  return runJob(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal });
}

/** The table as iceberg-js loads it from the catalog, and icebird's rows of the data its metadata points at. */
async function readBack(stand: CatalogStandIn, table: string, auth?: { type: 'bearer'; token: string }): Promise<{ metadata: Record<string, any>; rows: Record<string, unknown>[] }> {
  const catalog = new IcebergRestCatalog({ baseUrl: `${stand.uri}`, warehouse: 'main', ...(auth ? { auth } : {}) });
  const result = await catalog.loadTableResult({ namespace: ['analytics'], name: table });
  const metadata = result!.metadata as unknown as Record<string, any>;
  const location = String(result!['metadata-location']);
  const file = location.slice(`${metadata.location}/metadata/`.length);
  return { metadata, rows: await icebirdRead(String(metadata.location), undefined, file) };
}

const commits = (stand: CatalogStandIn) => stand.requests.filter((r) => r.operation === 'updateTable').map((r) => JSON.parse(r.body) as { requirements: Record<string, unknown>[]; updates: Record<string, unknown>[] });

describe('the catalog stand-in', () => {
  it('refuses and records a request or answer the OpenAPI document does not allow (so a clean run means conforming traffic)', async () => {
    const stand = await startCatalogStandIn();
    try {
      const post = (path: string, body: unknown) => fetch(`${stand.uri}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      // An update action the spec does not define, and a requirement without its field.
      const bad = await post('/v1/wh-main/namespaces/a/tables/t', { requirements: [{ type: 'assert-table-uuid' }], updates: [{ action: 'set-snapshot-ref', 'ref-name': 'main' }] });
      expect(bad.status).toBe(400);
      expect(stand.violations).toHaveLength(1);
      expect(stand.violations[0]).toMatch(/^request updateTable: /);
      const route = await fetch(`${stand.uri}/v1/wh-main/no/such/route`);
      expect(route.status).toBe(400);
      expect(stand.violations[1]).toMatch(/no operation of the spec/);
    } finally {
      await stand.stop();
    }
  });
});

describe('table: iceberg through a REST catalog', () => {
  it('append: creates the namespace and table, one snapshot per run committed with assert-table-uuid and assert-ref-snapshot-id; read back by iceberg-js + icebird value by value', async () => {
    const stand = await standIn();
    const table = tableName('append');
    const j = job('rest-append', ALL, `mode: append\n        ${output(stand, table)}`);
    const first = await run(j);
    expect(first.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    const second = await run(job('rest-append', ALL, `mode: append\n        ${output(stand, table)}`));
    expect(second.outputs[0]).toMatchObject({ rows: 4, skipped: false });

    expect(stand.namespaces()).toEqual([['analytics']]);
    const { metadata, rows } = await readBack(stand, table);
    expect(metadata.snapshots).toHaveLength(2);
    expect(metadata.snapshots[1]['parent-snapshot-id']).toBe(metadata.snapshots[0]['snapshot-id']);
    expect(metadata.snapshots.map((s: any) => s.summary.operation)).toEqual(['append', 'append']);
    expectIcebirdRows(rows, [await serviceRows(client, ALL), await serviceRows(client, ALL)]);

    const [create, onTop] = commits(stand);
    expect(create!.requirements).toEqual([{ type: 'assert-create' }]);
    expect(onTop!.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: metadata['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': metadata.snapshots[0]['snapshot-id'] },
    ]);
    // A staged creation told the location before anything was written; the data lives there.
    expect(stand.requests.find((r) => r.operation === 'createTable')?.body).toContain('"stage-create":true');
    expect(metadata.location).toBe(`file://${join(dir, table)}`);
    expect(await readdir(join(dir, table, 'data'))).toHaveLength(2);
  });

  it('replace: an overwrite snapshot; the table then holds only the last run', async () => {
    const stand = await standIn();
    const table = tableName('replace');
    await run(job('rest-replace', ALL, output(stand, table)));
    const second = await run(job('rest-replace', NARROW, output(stand, table)));
    expect(second.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    const { metadata, rows } = await readBack(stand, table);
    expect(metadata.snapshots.map((s: any) => s.summary.operation)).toEqual(['overwrite', 'overwrite']);
    expect(rows.map((r) => Object.keys(r).length)).toEqual([...rows.map(() => 23)].fill(Object.keys(rows[0]!).length));
    expect(rows).toHaveLength(4);
  });

  it('schema evolution: a wider result adds its columns through add-schema, asserting the current schema and last column id', async () => {
    const stand = await standIn();
    const table = tableName('evolve');
    await run(job('rest-evolve', NARROW, `mode: append\n        ${output(stand, table)}`));
    await run(job('rest-evolve', WIDER, `mode: append\n        ${output(stand, table)}`));
    const { metadata, rows } = await readBack(stand, table);
    expect(metadata.schemas).toHaveLength(2);
    expect(metadata.schemas[1].fields.map((f: any) => f.name)).toEqual(['id', 'c_varchar', 'c_bigint', 'c_date']);
    const evolve = commits(stand)[1]!;
    expect(evolve.requirements).toContainEqual({ type: 'assert-current-schema-id', 'current-schema-id': 0 });
    expect(evolve.updates.map((u) => u.action)).toEqual(['add-schema', 'set-current-schema', 'add-snapshot', 'set-snapshot-ref']);
    expect(rows).toHaveLength(8);
  });

  it('two writers race: the one that loses the requirement (409) reloads and commits on top; no snapshot is lost', async () => {
    const stand = await standIn();
    const table = tableName('race');
    await run(job('rest-race-a', NARROW, `mode: append\n        ${output(stand, table)}`));
    // Writer A reaches its commit; before the catalog looks at it, writer B runs whole and commits.
    let other: Promise<JobSummary> | undefined;
    stand.beforeCommit = async () => {
      if (other) return;
      other = run(job('rest-race-b', NARROW, `mode: append\n        ${output(stand, table)}`));
      await other;
    };
    const a = await run(job('rest-race-a2', NARROW, `mode: append\n        ${output(stand, table)}`));
    stand.beforeCommit = undefined;
    const b = await other!;
    expect(a.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    expect(b.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    expect(stand.requests.filter((r) => r.operation === 'updateTable').map((r) => r.status)).toEqual([200, 200, 409, 200]);
    const { metadata, rows } = await readBack(stand, table);
    expect(metadata.snapshots).toHaveLength(3);
    // A linear history: every snapshot's parent is the one before it.
    for (let i = 1; i < 3; i++) expect(metadata.snapshots[i]['parent-snapshot-id']).toBe(metadata.snapshots[i - 1]['snapshot-id']);
    expect(rows).toHaveLength(12);
  });

  it('three writers at once, unordered: every run commits one snapshot, in one linear history', async () => {
    const stand = await standIn();
    const table = tableName('free');
    const runs = await Promise.all([1, 2, 3].map((i) => run(job(`rest-free-${i}`, NARROW, `mode: append\n        ${output(stand, table)}`))));
    expect(runs.map((r) => r.outputs[0]!.rows)).toEqual([4, 4, 4]);
    const { metadata, rows } = await readBack(stand, table);
    expect(metadata.snapshots).toHaveLength(3);
    for (let i = 1; i < 3; i++) expect(metadata.snapshots[i]['parent-snapshot-id']).toBe(metadata.snapshots[i - 1]['snapshot-id']);
    expect(new Set(metadata.snapshots.map((s: any) => s.summary['sluice.execution-id'])).size).toBe(3);
    expect(rows).toHaveLength(12);
    // Two of the three created the table at the same time at most once: the others lost assert-create (409) and went on top.
    expect(stand.requests.filter((r) => r.operation === 'updateTable' && r.status === 200)).toHaveLength(3);
  });

  it('a commit answered 502 after it was applied is found in the table (no second snapshot); 500s that persist fail with nothing committed and no data files left', async () => {
    const stand = await standIn();
    const table = tableName('unknown');
    await run(job('rest-5xx', NARROW, `mode: append\n        ${output(stand, table)}`));
    stand.failCommits(1, 502, true);
    const landed = await run(job('rest-5xx-2', NARROW, `mode: append\n        ${output(stand, table)}`));
    expect(landed.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    expect((await readBack(stand, table)).metadata.snapshots).toHaveLength(2);

    stand.failCommits(100, 500);
    const before = (await readdir(join(dir, table, 'data'))).sort();
    const failed = await run(job('rest-5xx-3', NARROW, `mode: append\n        ${output(stand, table)}`)).then(
      () => undefined,
      (e: unknown) => e,
    );
    stand.failCommits(0, 0);
    expect(failed).toBeInstanceOf(IcebergCatalogError);
    expect((failed as IcebergCatalogError).code).toBe('CATALOG_COMMIT_FAILED');
    expect((failed as Error).message).toMatch(/analytics\.unknown_\d+.*HTTP 500.*nothing was committed/);
    expect((await readBack(stand, table)).metadata.snapshots).toHaveLength(2);
    expect((await readdir(join(dir, table, 'data'))).sort()).toEqual(before);
  });

  it('incremental: the cursor is committed in the snapshot summary through the catalog; a run with a fresh state directory resumes from it', async () => {
    const stand = await standIn();
    const table = tableName('cursor');
    const text = (state: string) =>
      `jobs:\n  - name: rest-cursor\n    source: { sql: "select id, c_varchar from sample.all_types where id > {{after}} order by id" }\n    incremental: { cursor: id, parameter: after, initial: -1000 }\n    outputs:\n      - format: parquet\n        table: iceberg\n        mode: append\n        ${output(stand, table)}\n# ${state}\n`;
    const runIn = (state: string) => runJob(parseJobFile(text(state), { file: 'cursor.yaml', registry: builtins, env: {} }).jobs[0]!, { client, stateDir: join(dir, state), signal: new AbortController().signal });
    const first = await runIn('cursor-state-1');
    expect(first.rows).toBe(4);
    const { metadata } = await readBack(stand, table);
    const cursor = JSON.parse(metadata.snapshots[0].summary['sluice.cursor']) as { column: string; value: string };
    expect(cursor).toMatchObject({ column: 'id' });
    // A fresh state directory: the cursor comes from the table in the catalog, so nothing is read again.
    const second = await runIn('cursor-state-2');
    expect(second).toMatchObject({ rows: 0, cursor: { from: cursor.value } });
    expect((await readBack(stand, table)).metadata.snapshots).toHaveLength(1);
  });

  it('a schema conflict and a catalog that keeps refusing the commit (409) fail with what to do; nothing is committed, the run\'s files are removed', async () => {
    const stand = await standIn();
    const table = tableName('conflicts');
    await run(job('rest-conflict', NARROW, `mode: append\n        ${output(stand, table)}`));
    const files = new Set(await readdir(join(dir, table, 'data')));
    const conflict = await run(job('rest-conflict-2', 'select id::varchar as id, c_varchar from sample.all_types', `mode: append\n        ${output(stand, table)}`)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(conflict).toBeInstanceOf(IcebergSchemaConflictError);
    expect((conflict as Error).message).toMatch(/\(table analytics\.conflicts_\d+ in Iceberg catalog http:\/\/127\.0\.0\.1:\d+ \(warehouse main\)\): column id is int in the table but string in this result; nothing was written/);

    stand.failCommits(100, 409);
    const lost = await run(job('rest-conflict-3', NARROW, `mode: append\n        ${output(stand, table)}`)).then(
      () => undefined,
      (e: unknown) => e,
    );
    stand.failCommits(0, 0);
    expect(lost).toBeInstanceOf(IcebergCommitConflictError);
    expect((lost as Error).message).toMatch(/lost the commit of table analytics\.conflicts_\d+ in Iceberg catalog http:\/\/127\.0\.0\.1:\d+ \(warehouse main\) to a concurrent writer 4 time\(s\); nothing was committed/);
    expect((await readBack(stand, table)).metadata.snapshots).toHaveLength(1);
    expect(new Set(await readdir(join(dir, table, 'data')))).toEqual(files);
  });

  it('a commit whose outcome cannot be learnt (502, then the table cannot be read) keeps its data files and lists them in the error', async () => {
    const stand = await standIn();
    const table = tableName('orphans');
    await run(job('rest-orphans', NARROW, `mode: append\n        ${output(stand, table)}`));
    const before = new Set(await readdir(join(dir, table, 'data')));
    stand.failCommits(1, 502);
    // The lookup after the 502 fails (every retry of it too).
    stand.beforeCommit = async () => stand.failLoads(100, 500);
    const failed = await run(job('rest-orphans-2', NARROW, `mode: append\n        ${output(stand, table)}`)).then(
      () => undefined,
      (e: unknown) => e,
    );
    stand.beforeCommit = undefined;
    stand.failLoads(0, 0);
    expect(failed).toBeInstanceOf(IcebergCatalogError);
    const error = failed as IcebergCatalogError;
    expect([error.code, error.unknownOutcome]).toEqual(['CATALOG_COMMIT_FAILED', true]);
    const added = (await readdir(join(dir, table, 'data'))).filter((n) => !before.has(n));
    expect(added).toHaveLength(1);
    expect(error.orphans).toEqual([`data/${added[0]}`]);
    expect(error.message).toMatch(/whether the snapshot \d+ landed is unknown.*left in place.*data\/part-/s);
    expect((await readBack(stand, table)).metadata.snapshots).toHaveLength(1);
  });

  it('an OAuth2 token is renewed shortly before it expires, without a refusal', async () => {
    const stand = await standIn({ type: 'oauth2', clientId: 'renewer', clientSecret: 'renew-secret', tokenLifeSeconds: 600 });
    const auth = '{ type: oauth2, client_id: renewer, client_secret: "${RENEW_SECRET}" }';
    const j = job('rest-renew', NARROW, `mode: append\n        ${output(stand, tableName('renew'), '', auth)}`, { RENEW_SECRET: 'renew-secret' });
    await run(j);
    expect(stand.exchanges).toBe(1);
    // Only the clock is moved (the catalog's and the client's alike): 9.5 minutes on, the token has 30 s left.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 570_000 });
    try {
      await run(j);
    } finally {
      vi.useRealTimers();
    }
    expect(stand.exchanges).toBe(2);
    expect(stand.requests.filter((r) => r.status === 401)).toEqual([]);
  });

  it('bearer token: sent on every request; the config echoes it redacted; a wrong one is refused before the query runs', async () => {
    const stand = await standIn({ type: 'bearer', token: 's3cr3t-token' });
    const table = tableName('bearer');
    const env = { ICEBERG_TOKEN: 's3cr3t-token' };
    const out = output(stand, table, '', '{ type: bearer, token: "${ICEBERG_TOKEN}" }');
    const j = job('rest-bearer', NARROW, out, env);
    await run(j);
    expect(stand.requests.every((r) => r.headers.authorization === 'Bearer s3cr3t-token')).toBe(true);
    expect(JSON.stringify(describeOutput(j.outputs[0]!))).not.toContain('s3cr3t');
    expect((await readBack(stand, table, { type: 'bearer', token: 's3cr3t-token' })).rows).toHaveLength(4);

    const bad = tableName('bearer');
    const refused = await run(job('rest-bearer-bad', NARROW, output(stand, bad, '', '{ type: bearer, token: "${ICEBERG_TOKEN}" }'), { ICEBERG_TOKEN: 'wrong' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(IcebergCatalogError);
    expect((refused as IcebergCatalogError).code).toBe('CATALOG_AUTH_REFUSED');
    expect((refused as Error).message).toMatch(/Iceberg catalog http:\/\/127\.0\.0\.1:\d+ \(warehouse main\).*HTTP 401.*check catalog\.auth/);
    expect((refused as Error).message).not.toContain('wrong');
    await expect(readdir(join(dir, bad))).rejects.toThrow(/ENOENT/);
  });

  it('OAuth2 client credentials: one token exchange per process and client, a new one when the catalog stops taking it; a wrong secret is refused naming the client', async () => {
    const stand = await standIn({ type: 'oauth2', clientId: 'sluice', clientSecret: 'hunter2' });
    const table = tableName('oauth');
    const auth = '{ type: oauth2, client_id: sluice, client_secret: "${ICEBERG_SECRET}", scope: "PRINCIPAL_ROLE:ALL" }';
    const j = job('rest-oauth', NARROW, `mode: append\n        ${output(stand, table, '', auth)}`, { ICEBERG_SECRET: 'hunter2' });
    await run(j);
    expect(stand.exchanges).toBe(1);
    const exchange = stand.requests.find((r) => r.operation === 'getToken')!;
    expect(Object.fromEntries(new URLSearchParams(exchange.body))).toEqual({ grant_type: 'client_credentials', client_id: 'sluice', client_secret: 'hunter2', scope: 'PRINCIPAL_ROLE:ALL' });
    expect(JSON.stringify(describeOutput(j.outputs[0]!))).not.toContain('hunter2');

    // The next run reuses the token; when the catalog stops taking it, the refusal gets a new one and the run goes on.
    await run(j);
    expect(stand.exchanges).toBe(1);
    stand.expireTokens();
    await run(j);
    expect(stand.exchanges).toBe(2);
    expect(stand.requests.filter((r) => r.status === 401)).toHaveLength(1);
    expect(stand.requests.filter((r) => r.operation === 'updateTable').map((r) => r.status)).toEqual([200, 200, 200]);

    const refused = await run(job('rest-oauth-bad', NARROW, output(stand, tableName('oauth'), '', auth), { ICEBERG_SECRET: 'nope' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((refused as IcebergCatalogError).code).toBe('CATALOG_AUTH_REFUSED');
    expect((refused as Error).message).toMatch(/token endpoint .*\/v1\/oauth\/tokens refused client sluice \(invalid_client/);
    expect((refused as Error).message).not.toContain('nope');
  });

  it('AWS SigV4: every request signed by the SDK signer with the default credential chain, verified by re-signing; a wrong secret is refused', async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY, token: process.env.AWS_SESSION_TOKEN };
    process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
    process.env.AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
    delete process.env.AWS_SESSION_TOKEN;
    try {
      const stand = await standIn({ type: 'sigv4', region: 'eu-west-1', service: 'glue', accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' });
      const table = tableName('sigv4');
      const out = output(stand, table, '', '{ type: sigv4, region: eu-west-1 }');
      await run(job('rest-sigv4', NARROW, out));
      expect(stand.requests.length).toBeGreaterThan(3);
      expect(stand.requests.every((r) => String(r.headers.authorization).startsWith('AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/') && r.status !== 401)).toBe(true);
      expect(stand.requests.some((r) => r.operation === 'updateTable' && r.status === 200)).toBe(true);

      process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret';
      const refused = await run(job('rest-sigv4-bad', NARROW, out)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((refused as IcebergCatalogError).code).toBe('CATALOG_AUTH_REFUSED');
    } finally {
      for (const [k, v] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret], ['AWS_SESSION_TOKEN', saved.token]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('bad input is found before the query runs, naming the catalog, the table and what to do; nothing is written', async () => {
    const stand = await standIn();
    const expectRefused = async (out: string, code: string, message: RegExp, table: string) => {
      const error = await run(job('rest-bad', NARROW, out)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(IcebergCatalogError);
      expect((error as IcebergCatalogError).code).toBe(code);
      expect((error as Error).message).toMatch(message);
      await expect(readdir(join(dir, table, 'data'))).rejects.toThrow(/ENOENT/);
    };
    const t1 = tableName('nowarehouse');
    await expectRefused(output(stand, t1).replace('warehouse: main', 'warehouse: nope'), 'CATALOG_NOT_FOUND', /warehouse nope was not accepted .*check catalog\.warehouse/, t1);
    const t2 = tableName('unreachable');
    await expectRefused(output(stand, t2).replace(stand.uri, 'http://127.0.0.1:9'), 'CATALOG_UNREACHABLE', /GET \/v1\/config did not answer after 4 attempts.*check catalog\.uri/, t2);
    const t3 = tableName('nocreate');
    await expectRefused(output(stand, t3, 'create: false'), 'CATALOG_NOT_FOUND', /table analytics\.nocreate_\d+: .*namespace analytics does not exist and catalog\.create is false/, t3);
    stand.createNamespace(['analytics']);
    await expectRefused(output(stand, t3, 'create: false'), 'CATALOG_NOT_FOUND', /table analytics\.nocreate_\d+: it does not exist and catalog\.create is false/, t3);

    // A table the catalog keeps elsewhere than the output's path.
    const t4 = tableName('moved');
    await run(job('rest-moved', NARROW, output(stand, t4)));
    await expectRefused(output(stand, t4, `table: ${t4}`).replace(`path: "${join(dir, t4)}"`, `path: "${join(dir, `${t4}-elsewhere`)}"`), 'CATALOG_REJECTED', /keeps this table at file:\/\/.*set the output's path to/, `${t4}-elsewhere`);
  });
});

describe('vended credentials', () => {
  let s3: LocalS3;
  let gate: PreconditionGate;
  beforeAll(async () => {
    s3 = await startLocalS3();
    await s3.createBucket('lake');
    gate = await startPreconditionGate(s3.endpoint);
  });
  afterAll(async () => {
    await gate?.stop();
    await s3?.stop();
  });

  it('an S3 table is written with the credentials the catalog vends for it; with access_delegation: none, with the output\'s own', async () => {
    const vend = { accessKeyId: 'VENDEDKEY1', secretAccessKey: 'vended-secret', sessionToken: 'vended-session' };
    const stand = await startCatalogStandIn({ vend, write: (location, body) => s3.client.send(new PutObjectCommand({ Bucket: 'lake', Key: location.slice('s3://lake/'.length), Body: body })).then(() => undefined) });
    stands.push(stand);
    const s3Output = (table: string, extra = '') =>
      output(stand, table, extra).replace(`path: "${join(dir, table)}"`, `path: s3://lake/${table}\n        s3: { endpoint: "${gate.endpoint}", region: ${s3.region}, force_path_style: true }`);

    const table = tableName('vended');
    const seen = gate.accessKeys.length;
    await run(job('rest-vended', NARROW, s3Output(table)));
    const keys = gate.accessKeys.slice(seen);
    expect(stand.requests.filter((r) => r.operation === 'loadTable' || r.operation === 'createTable').every((r) => r.headers['x-iceberg-access-delegation'] === 'vended-credentials')).toBe(true);
    // Every write of the table (data files, manifests, journal) used the vended key; the sink's own check may use its own.
    const puts = keys.filter((k) => k.method === 'PUT' || k.method === 'POST');
    expect(puts.length).toBeGreaterThan(0);
    expect(new Set(puts.map((k) => k.key))).toEqual(new Set(['VENDEDKEY1']));
    const loaded = stand.table(['analytics'], table)!;
    const rows = await icebirdRead(`s3://lake/${table}`, s3, loaded.metadataLocation.slice(`s3://lake/${table}/metadata/`.length));
    expectIcebirdRows(rows, [await serviceRows(client, NARROW)]);

    const own = tableName('own');
    const before = gate.accessKeys.length;
    await run(job('rest-own', NARROW, s3Output(own, 'access_delegation: none')));
    expect(gate.accessKeys.slice(before).some((k) => k.key === 'VENDEDKEY1')).toBe(false);
    expect(stand.requests.filter((r) => r.path.includes(own)).some((r) => r.headers['x-iceberg-access-delegation'] !== undefined)).toBe(false);

    // Only vended credentials: the output's own (a profile that does not exist) never resolve, and are never needed.
    const onlyVended = tableName('onlyvended');
    const noOwn = (extra = '') => s3Output(onlyVended, extra).replace('force_path_style: true }', 'force_path_style: true, profile: sluice-test-no-such-profile }');
    const ran = await run(job('rest-only-vended', NARROW, noOwn()));
    expect(ran.outputs[0]).toMatchObject({ rows: 4, skipped: false });
    const refused = await run(job('rest-no-creds', NARROW, noOwn('access_delegation: none'))).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((refused as Error).message).toMatch(/sluice-test-no-such-profile|credentials/i);
  });
});

describe('validate and --plan name the catalog and table', () => {
  it('sluice validate prints the table each output commits to, the token redacted; --plan too, with the table as it stands', async () => {
    const stand = await standIn({ type: 'bearer', token: 'plan-token' });
    const table = tableName('plan');
    const file = join(dir, 'plan.yaml');
    const text = `jobs:\n  - name: planned\n    source: { sql: "${NARROW}" }\n    outputs:\n      - format: parquet\n        table: iceberg\n        ${output(stand, table, 'table: events', '{ type: bearer, token: "${PLAN_TOKEN}" }')}\n      - format: parquet\n        table: iceberg\n        path: "${join(dir, `${table}-by-path`)}"\n`;
    await writeFile(file, text);
    const validated = await sluice(['validate', file], { env: { PLAN_TOKEN: 'plan-token' } });
    expect(validated.code).toBe(0);
    expect(validated.stdout).toContain(`commits to Iceberg table analytics.events in catalog rest ${stand.uri} warehouse main`);
    expect(validated.stdout).toContain(`commits to Iceberg table at ${join(dir, `${table}-by-path`)} (no catalog`);
    expect(validated.stdout + validated.stderr).not.toContain('plan-token');

    const j = parseJobFile(text, { file: 'plan.yaml', registry: builtins, env: { PLAN_TOKEN: 'plan-token' } }).jobs[0]!;
    const plan = await planRun(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal, resume: true });
    expect(plan.outputs.map((o) => o.commitsTo)).toEqual([
      { catalog: `rest ${stand.uri} warehouse main`, table: 'analytics.events' },
      { catalog: undefined, table: `file://${join(dir, `${table}-by-path`)}` },
    ]);
    expect(formatPlan(plan)).toContain(`commits to Iceberg table analytics.events in catalog rest ${stand.uri} warehouse main`);
    // A plan changes nothing in the catalog: it only reads (the namespace is made by a run's check).
    expect(stand.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(stand.namespaces()).toEqual([]);
    expect((planFields(plan) as { outputs: unknown[] }).outputs[0]).toMatchObject({ catalog: `rest ${stand.uri} warehouse main`, catalog_table: 'analytics.events' });
  });
});

describe('catalog: in the job file', () => {
  const parse = (output: string) => parseJobFile(`jobs:\n  - name: j\n    source: { sql: "select 1" }\n    outputs:\n      - format: parquet\n        path: out\n${output}`, { file: 'jobs.yaml', registry: builtins, env: {} });

  it('names the file, line and column of a wrong field', () => {
    expect(() => parse('        catalog: { type: rest, uri: "https://c.example", namespace: a }\n')).toThrow(/jobs\.yaml:\d+:\d+.*catalog.*set table: iceberg/s);
    expect(() => parse('        table: iceberg\n        catalog:\n          type: rest\n          uri: "https://c.example"\n')).toThrow(/jobs\.yaml:9:\d+.*namespace/s);
    expect(() => parse('        table: iceberg\n        catalog:\n          type: rest\n          uri: "https://c.example"\n          namespace: a\n          auth: { type: oauth2, client_id: x }\n')).toThrow(/jobs\.yaml:12:\d+.*client_secret/s);
    expect(() => parse('        table: iceberg\n        catalog: { type: glue }\n')).toThrow(/jobs\.yaml:8:\d+.*catalog\.type/s);
  });

  it('the example of docs/iceberg-catalogs.md is a valid job file, its secret from the environment and redacted', () => {
    const doc = readFileSync(join(ROOT, 'docs/iceberg-catalogs.md'), 'utf8');
    const yaml = /```yaml\n([\s\S]*?)\n```/.exec(doc)![1]!;
    const [j] = parseJobFile(yaml, { file: 'docs/iceberg-catalogs.md', registry: builtins, env: { POLARIS_CLIENT_SECRET: 'from-env' } }).jobs;
    expect(j!.outputs[0]!.catalog).toMatchObject({ type: 'rest', warehouse: 'lake', namespace: 'analytics', table: 'events', auth: { type: 'oauth2', client_secret: 'from-env' } });
    expect(JSON.stringify(describeOutput(j!.outputs[0]!))).not.toContain('from-env');
  });

  it('path stays the default; validate and --plan name the catalog and table', () => {
    const plain = resolveOutput({ format: 'parquet', path: '/srv/lake/events', table: 'iceberg' }, builtins);
    expect(plain.catalog).toBeUndefined();
    expect(catalogTarget(plain.catalog, plain.path)).toEqual({ catalog: undefined, table: '/srv/lake/events' });
    const rest = resolveOutput({ format: 'parquet', path: '/srv/lake/events', table: 'iceberg', catalog: { type: 'rest', uri: 'https://c.example/api/catalog', warehouse: 'lake', namespace: 'a.b' } }, builtins);
    expect(catalogTarget(rest.catalog, rest.path)).toEqual({ catalog: 'rest https://c.example/api/catalog warehouse lake', table: 'a.b.events' });
  });
});
