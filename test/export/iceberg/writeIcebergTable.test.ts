// Iceberg tables written by sluice, read back by an independent Iceberg reader: icebird (npm,
// built on hyparquet), value by value against the rows the local service returned, on disk and on
// the local S3 (fauxqs behind a gate that enforces If-None-Match, as S3 does). DuckDB checks what
// icebird decodes lossily (decimals, sub-millisecond timestamps) and the Parquet field ids.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RecordBatch, Schema } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../../src/client/index.ts';
import { stream } from '../../../src/pipeline/stream.ts';
import {
  IcebergCommitConflictError,
  IcebergMetadataError,
  IcebergNotATableError,
  IcebergSchemaConflictError,
  type IcebergCommitSummary,
  type IcebergTableOptions,
  tableStorage,
  type TableStorage,
  writeIcebergTable,
} from '../../../src/export/iceberg/index.ts';
import { parquet } from '../../../connectors/formats/parquet/index.ts';
import { fileStore } from '../../../connectors/sinks/file/index.ts';
import { sdkObjectStore } from '../../../connectors/sinks/s3/sdkStore.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { startLocalS3, type LocalS3 } from '../../helpers/s3.ts';
import { startS3Gate, type S3Gate } from '../../helpers/s3Gate.ts';
import { icebirdRead } from '../../helpers/icebird.ts';
import { duckRowsJS } from '../../helpers/duckdb.ts';
import { asIcebird, expectIcebirdRows, serviceRows } from './icebirdValues.ts';

interface Result {
  schema: Schema;
  batches: RecordBatch[];
  rows: Record<string, unknown>[];
  types: Record<string, string>;
}

let svc: TestService;
let client: ServiceClient;
let s3: LocalS3;
let gate: S3Gate;
let scratch: string;
const results = new Map<string, Result>();
const format = parquet.create(parquet.config.parse({}));

const ALL = 'SELECT * FROM sample.all_types ORDER BY id';
const NARROW = 'SELECT id, c_varchar FROM sample.all_types ORDER BY id';
const WIDER = 'SELECT id, c_varchar, c_bigint, c_decimal FROM sample.all_types ORDER BY id';

/** The service's answer to `sql`: Arrow batches, and the same rows as typed JS values (read once per query). */
async function result(sql: string): Promise<Result> {
  const cached = results.get(sql);
  if (cached) return cached;
  const { rows, types } = await serviceRows(client, sql);
  const batches: RecordBatch[] = [];
  for await (const b of stream(client, { sql }).batches()) batches.push(b);
  const r = { schema: batches[0]!.schema, batches, rows, types };
  results.set(sql, r);
  return r;
}

async function write(storage: TableStorage, sql: string, executionId: string, options: Partial<IcebergTableOptions> = {}) {
  const r = await result(sql);
  return writeIcebergTable(
    { schema: r.schema, batches: (async function* () { yield* r.batches; })(), meta: { executionId, fingerprint: 'f1', totalRowCount: r.rows.length } },
    { storage, format, mode: 'append', ...options },
  );
}

/** icebird's rows of the table against the service's rows, value by value. */
async function expectTable(storage: TableStorage, expected: { sql: string }[]): Promise<void> {
  const got = await icebirdRead(storage.url, s3);
  expectIcebirdRows(got, await Promise.all(expected.map((e) => result(e.sql))));
}

/** A table in a local folder, through the file sink's store. */
const fileTableStorage = (dir: string): TableStorage => tableStorage(fileStore(dir));
/** A table under an S3 prefix, through the S3 sink's store, behind the gate. */
const s3TableStorage = (prefix: string): TableStorage =>
  tableStorage(sdkObjectStore({ location: { bucket: 'lake', prefix }, client: { endpoint: gate.endpoint, region: s3.region, forcePathStyle: true }, partSize: 5 * 1024 * 1024, queueSize: 4 }));

let tables = 0;
const backends: { name: string; make: () => Promise<TableStorage> }[] = [
  { name: 'disk', make: async () => fileTableStorage(join(scratch, `t${++tables}`)) },
  { name: 's3', make: async () => s3TableStorage(`tables/t${++tables}`) },
];

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 2 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
  s3 = await startLocalS3();
  await s3.createBucket('lake');
  gate = await startS3Gate(s3.endpoint);
  scratch = await mkdtemp(join(tmpdir(), 'sluice-iceberg-'));
});
afterAll(async () => {
  await gate?.close();
  await s3?.stop();
  await client?.close();
  await svc?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe.each(backends)('Iceberg table on $name', ({ make }) => {
  it('append: every type of sample.all_types, two snapshots, a re-run of the same execution is a no-op', async () => {
    const storage = await make();
    const first = await write(storage, ALL, 'exec-1');
    expect(first).toMatchObject({ skipped: false, metadataFile: 'metadata/v1.metadata.json', rows: 4, attempts: 1 });
    await write(storage, ALL, 'exec-2');
    await expectTable(storage, [{ sql: ALL }, { sql: ALL }]);
    const again = await write(storage, ALL, 'exec-1');
    expect(again).toMatchObject({ skipped: true, snapshotId: first.snapshotId, metadataFile: 'metadata/v2.metadata.json' });
    expect((await storage.list('metadata/')).filter((n) => n.endsWith('.metadata.json')).sort()).toEqual(['metadata/v1.metadata.json', 'metadata/v2.metadata.json']);
    const metadata = JSON.parse(new TextDecoder().decode(await storage.read('metadata/v2.metadata.json')));
    expect(metadata['format-version']).toBe(2);
    expect(metadata.snapshots.map((s: { summary: Record<string, string> }) => [s.summary.operation, s.summary['sluice.execution-id'], s.summary['sluice.fingerprint'], s.summary['total-records']])).toEqual([
      ['append', 'exec-1', 'f1', '4'],
      ['append', 'exec-2', 'f1', '8'],
    ]);
  });

  it('replace: one overwrite snapshot replaces the data; the previous snapshot stays readable', async () => {
    const storage = await make();
    await write(storage, ALL, 'exec-1');
    await write(storage, ALL, 'exec-2');
    const out = await write(storage, ALL, 'exec-3', { mode: 'replace' });
    expect(out.metadataFile).toBe('metadata/v3.metadata.json');
    await expectTable(storage, [{ sql: ALL }]);
    expect((await write(storage, ALL, 'exec-3', { mode: 'replace' })).skipped).toBe(true);
    const metadata = JSON.parse(new TextDecoder().decode(await storage.read('metadata/v3.metadata.json')));
    expect(metadata.snapshots.at(-1).summary).toMatchObject({ operation: 'overwrite', 'total-records': '4', 'deleted-records': '8' });
    // Time travel: the snapshot before the overwrite still lists its 8 rows.
    await storage.put('metadata/version-hint.text', new TextEncoder().encode('2'));
    expect(await icebirdRead(storage.url, s3)).toHaveLength(8);
  });

  it('partition_by: an identity partition spec, files in Hive directories, every row back', async () => {
    const storage = await make();
    const out = await write(storage, ALL, 'exec-p', { partitionBy: ['c_boolean'] });
    expect(out.files.map((f) => f.path.split('/').slice(0, 2).join('/')).sort()).toEqual([
      'data/c_boolean=__HIVE_DEFAULT_PARTITION__',
      'data/c_boolean=false',
      'data/c_boolean=true',
    ]);
    const metadata = JSON.parse(new TextDecoder().decode(await storage.read(out.metadataFile)));
    const boolId = metadata.schemas[0].fields.find((f: { name: string }) => f.name === 'c_boolean').id;
    expect(metadata['partition-specs']).toEqual([{ 'spec-id': 0, fields: [{ 'source-id': boolId, 'field-id': 1000, name: 'c_boolean', transform: 'identity' }] }]);
    await write(storage, ALL, 'exec-p2', { partitionBy: ['c_boolean'] });
    await expectTable(storage, [{ sql: ALL }, { sql: ALL }]);
  });

  it('additive schema change: a new column is added; older files read it as NULL', async () => {
    const storage = await make();
    await write(storage, NARROW, 'exec-n');
    const out = await write(storage, WIDER, 'exec-w');
    const metadata = JSON.parse(new TextDecoder().decode(await storage.read(out.metadataFile)));
    expect(metadata.schemas.map((s: { fields: { id: number; name: string }[] }) => s.fields.map((f) => `${f.id}:${f.name}`))).toEqual([
      ['1:id', '2:c_varchar'],
      ['1:id', '2:c_varchar', '3:c_bigint', '4:c_decimal'],
    ]);
    expect(metadata['current-schema-id']).toBe(1);
    await expectTable(storage, [{ sql: NARROW }, { sql: WIDER }]);
  });

  it('two writers at once: one snapshot each, none lost', async () => {
    const storage = await make();
    await write(storage, NARROW, 'exec-0');
    const [one, two] = raced(storage, 2) as [TableStorage, TableStorage];
    const [a, b] = await Promise.all([write(one, NARROW, 'exec-a'), write(two, NARROW, 'exec-b')]);
    expect([a!.attempts, b!.attempts].sort()).toEqual([1, 2]);
    // On S3 the loser was refused by If-None-Match (the gate plays S3's part; fauxqs would accept it).
    if (storage.url.startsWith('s3://')) expect(gate.refused).toBeGreaterThan(0);
    await expectTable(storage, [{ sql: NARROW }, { sql: NARROW }, { sql: NARROW }]);
    expect(new TextDecoder().decode(await storage.read('metadata/version-hint.text'))).toBe('3');
  });

  it('two writers at once without retries: one commits, the other fails cleanly and leaves nothing', async () => {
    const storage = await make();
    await write(storage, NARROW, 'exec-0');
    const before = (await storage.list('')).sort();
    const [one, two] = raced(storage, 2) as [TableStorage, TableStorage];
    const settled = await Promise.allSettled([write(one, NARROW, 'exec-a', { commitAttempts: 1 }), write(two, NARROW, 'exec-b', { commitAttempts: 1 })]);
    const failed = settled.filter((s) => s.status === 'rejected');
    expect(failed).toHaveLength(1);
    const error = (failed[0] as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(IcebergCommitConflictError);
    expect(error.message).toContain(storage.url);
    expect(error.message).toContain('metadata/v2.metadata.json');
    expect(error.message).toContain('Run again');
    await expectTable(storage, [{ sql: NARROW }, { sql: NARROW }]);
    const winner = (settled.find((s) => s.status === 'fulfilled') as PromiseFulfilledResult<IcebergCommitSummary>).value;
    const after = (await storage.list('')).sort();
    const added = after.filter((n) => !before.includes(n));
    expect(added.filter((n) => n.startsWith('data/'))).toEqual(winner.files.map((f) => f.path));
  });
});

/**
 * The same storage, but the commit point waits until `writers` writers reach it, so their
 * commits race for the same version every time (a deterministic stand-in for two hosts).
 */
function raced(storage: TableStorage, writers: number): TableStorage[] {
  const waiting: (() => void)[] = [];
  return Array.from({ length: writers }, () => {
    let first = true;
    return {
      ...storage,
      async createIfAbsent(name: string, body: Uint8Array, signal?: AbortSignal) {
        if (first) {
          first = false;
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            if (waiting.length === writers) for (const w of waiting.splice(0)) w();
          });
        }
        return storage.createIfAbsent(name, body, signal);
      },
    };
  });
}

describe('bad input leaves the table as it was, with a clear error', () => {
  it('a location that holds something other than an Iceberg table', async () => {
    const dir = join(scratch, 'not-a-table');
    await mkdir(join(dir, 'day=1'), { recursive: true });
    await writeFile(join(dir, 'day=1', 'part-0.parquet'), 'x');
    const storage = fileTableStorage(dir);
    const error = await write(storage, NARROW, 'e').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergNotATableError);
    expect((error as Error).message).toContain(storage.url);
    expect((error as Error).message).toContain('day=1/part-0.parquet');
    expect((error as Error).message).toContain('point the output at an empty location');
    expect(await readdir(dir, { recursive: true })).toEqual(expect.arrayContaining(['day=1', join('day=1', 'part-0.parquet')]));
    expect(await readdir(dir, { recursive: true })).toHaveLength(2);
  });

  it('a column whose type changed: names the column, both types, and what to do', async () => {
    const storage = fileTableStorage(join(scratch, 'conflict'));
    await write(storage, 'SELECT id, c_bigint FROM sample.all_types ORDER BY id', 'e1');
    const before = (await storage.list('')).sort();
    const error = await write(storage, 'SELECT id, CAST(c_bigint AS VARCHAR) AS c_bigint FROM sample.all_types ORDER BY id', 'e2').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergSchemaConflictError);
    expect((error as Error).message).toMatch(/metadata\/v1\.metadata\.json\): column c_bigint is long in the table but string in this result/);
    expect((error as Error).message).toContain('Cast the column');
    expect((await storage.list('')).sort()).toEqual(before);
    expect(await icebirdRead(storage.url)).toHaveLength(4);
  });

  it('corrupt metadata: names the file; nothing is written', async () => {
    const storage = fileTableStorage(join(scratch, 'corrupt'));
    await write(storage, NARROW, 'e1');
    await writeFile(join(fileURLToPath(storage.url), 'metadata', 'v2.metadata.json'), '{"format-version": 2, "table-uu');
    const before = (await storage.list('')).sort();
    const error = await write(storage, NARROW, 'e2').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergMetadataError);
    expect((error as Error).message).toContain(`Iceberg table ${storage.url}: metadata/v2.metadata.json is not valid table metadata (not JSON`);
    expect((error as Error).message).toContain('Restore that file');
    expect((await storage.list('')).sort()).toEqual(before);
    // The hint still names v1, which readers use.
    expect(await icebirdRead(storage.url)).toHaveLength(4);

    await writeFile(join(fileURLToPath(storage.url), 'metadata', 'v2.metadata.json'), JSON.stringify({ 'format-version': 1 }));
    const v1 = await write(storage, NARROW, 'e2').catch((e: unknown) => e);
    expect((v1 as Error).message).toContain('format-version 1; sluice writes format version 2');
  });

  it('a failed run (wrong row count) removes its files and leaves the snapshot', async () => {
    const storage = fileTableStorage(join(scratch, 'failed'));
    await write(storage, NARROW, 'e1');
    const before = (await storage.list('')).sort();
    const r = await result(NARROW);
    const error = await writeIcebergTable(
      { schema: r.schema, batches: (async function* () { yield* r.batches; })(), meta: { executionId: 'e2', totalRowCount: 5 } },
      { storage, format, mode: 'append' },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toContain('wrote 4 rows but the result has 5');
    expect((await storage.list('')).sort()).toEqual(before);
  });
});

describe('what engines need beyond icebird', () => {
  it('Parquet field ids match the table schema, and DuckDB reads the exact values', async () => {
    const storage = fileTableStorage(join(scratch, 'ids'));
    const out = await write(storage, ALL, 'e1');
    const file = join(fileURLToPath(storage.url), out.files[0]!.path);
    const metadata = JSON.parse(await readFile(join(fileURLToPath(storage.url), out.metadataFile), 'utf8'));
    const ids = await duckRowsJS(`SELECT name, field_id FROM parquet_schema('${file}') WHERE field_id IS NOT NULL`);
    const byName = Object.fromEntries(ids.map((r) => [r.name, Number(r.field_id)]));
    for (const f of metadata.schemas[0].fields) expect(byName[f.name], f.name).toBe(f.id);
    const types = Object.fromEntries(metadata.schemas[0].fields.map((f: { name: string; type: unknown }) => [f.name, f.type]));
    expect(types).toMatchObject({
      c_tinyint: 'int',
      c_bigint: 'long',
      c_uint256: 'string',
      c_decimal: 'decimal(38, 10)',
      c_timestamp: 'timestamp',
      c_timestamptz: 'timestamptz',
      c_timestamp_ms: 'timestamp',
      c_timestamp_ns: 'long',
      c_interval: 'long',
      c_interval_ym: 'int',
      c_array: { type: 'list', element: 'long', 'element-required': false },
      c_map: { type: 'map', key: 'string', value: 'long' },
    });
    const rows = await duckRowsJS(`SELECT id, c_decimal::VARCHAR AS d, strftime(c_timestamp, '%Y-%m-%d %H:%M:%S.%f') AS ts, c_timestamp_ms::VARCHAR AS tms, c_timestamp_ns AS ns FROM '${file}' ORDER BY id`);
    const want = (await result(ALL)).rows;
    for (const [i, row] of rows.entries()) {
      expect(row.d).toBe(want[i]!.c_decimal);
      expect(row.ts).toBe(want[i]!.c_timestamp);
      expect(row.ns).toBe(asIcebird(want[i]!.c_timestamp_ns, 'timestamp(9)'));
    }
  });
});
