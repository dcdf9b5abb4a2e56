// Iceberg tables as job outputs (`table: iceberg`): job files run by the job runner against the real
// local service, tables on disk and on the local S3 (fauxqs behind a gate that enforces
// If-None-Match as S3 does), read back by an independent Iceberg reader (icebird) value by value
// against the rows the service returns, for every type of sample.all_types.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../../connectors/index.ts';
import { ServiceClient } from '../../../src/client/index.ts';
import { parseJobFile, type Job } from '../../../src/config/index.ts';
import { type ExportSummary, openExport, resolveOutput, writeExport } from '../../../src/export/index.ts';
import { IcebergCommitConflictError, icebergCommit, IcebergMetadataError, IcebergNotATableError, IcebergSchemaConflictError } from '../../../src/export/iceberg/index.ts';
import { defineSink, DestinationCheckError, type ObjectStore, PreconditionFailedError, type SinkDescriptor } from '../../../src/kit/index.ts';
import { type JobSummary, runJob, type RunJobOptions } from '../../../src/jobs/run/runJob.ts';
import type { RunRecord } from '../../../src/jobs/run/runHistory.ts';
import { policyOf } from '../../../src/jobs/run/errorPolicy.ts';
import { startLocalS3, type LocalS3 } from '../../helpers/s3.ts';
import { startPreconditionGate, type PreconditionGate } from '../../helpers/preconditionGate.ts';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { icebirdRead } from '../../helpers/icebird.ts';
import { duckRowsJS } from '../../helpers/duckdb.ts';
import { startSluice } from '../../cli/sluiceProcess.ts';
import { expectIcebirdRows, serviceRows } from './icebirdValues.ts';
import { numbered, numberedSchema } from '../../connectors/fixtures.ts';

let svc: TestService;
let client: ServiceClient;
let s3: LocalS3;
let gate: PreconditionGate;
let dir: string;

const ALL = 'select * from sample.all_types order by id';
const NARROW = 'select id, c_varchar from sample.all_types order by id';
const WIDER = 'select id, c_varchar, c_bigint, c_date from sample.all_types order by id';

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 2 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  s3 = await startLocalS3();
  await s3.createBucket('lake');
  gate = await startPreconditionGate(s3.endpoint);
  dir = await mkdtemp(join(tmpdir(), 'sluice-iceberg-jobs-'));
});
afterAll(async () => {
  await gate?.stop();
  await s3?.stop();
  await client?.close();
  await svc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Where a test's table lives, and how the test reads and changes objects there behind sluice's back. */
interface Place {
  readonly name: string;
  /** The output's path and sink block, as YAML lines of an output. */
  output(table: string): string;
  url(table: string): string;
  read(table: string, name: string): Promise<string>;
  write(table: string, name: string, body: string): Promise<void>;
  list(table: string): Promise<string[]>;
}

const disk: Place = {
  name: 'disk',
  output: (table) => `path: "${join(dir, table)}"`,
  url: (table) => `file://${join(dir, table)}`,
  read: (table, name) => readFile(join(dir, table, name), 'utf8'),
  async write(table, name, body) {
    await mkdir(join(dir, table, name, '..'), { recursive: true });
    await writeFile(join(dir, table, name), body);
  },
  list: async (table) => ((await readdir(join(dir, table), { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(join(dir, table).length + 1))).sort(),
};

const onS3: Place = {
  name: 's3',
  output: (table) => `path: s3://lake/${table}\n        s3: { endpoint: "${gate.endpoint}", region: ${s3.region}, force_path_style: true }`,
  url: (table) => `s3://lake/${table}`,
  read: async (table, name) => new TextDecoder().decode(await s3.get('lake', `${table}/${name}`)),
  async write(table, name, body) {
    await s3.client.send(new PutObjectCommand({ Bucket: 'lake', Key: `${table}/${name}`, Body: body }));
  },
  list: async (table) => (await s3.list('lake', `${table}/`)).map((k) => k.slice(table.length + 1)),
};

let tables = 0;
const tableName = (what: string) => `${what}-${++tables}`;

function job(name: string, sql: string, output: string): Job {
  const text = `jobs:\n  - name: ${name}\n    source: { sql: "${sql}" }\n    outputs:\n      - format: parquet\n        table: iceberg\n        ${output}\n`;
  return parseJobFile(text, { file: 'iceberg.yaml', registry: builtins, env: {} }).jobs[0]!;
}

function run(j: Job, options: Partial<RunJobOptions> = {}): Promise<JobSummary> {
  return runJob(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal, ...options });
}

/** The service's rows of `sql` as typed JS values (read once per query), and the column types. */
const serviceRowsOf = (sql: string) => serviceRows(client, sql);

/** icebird's rows of the table's current snapshot against the service's rows of each run, value by value. */
async function expectTable(url: string, runs: readonly string[]): Promise<void> {
  const got = await icebirdRead(url, s3);
  expectIcebirdRows(got, await Promise.all(runs.map(serviceRowsOf)));
}

async function metadataOf(place: Place, table: string): Promise<{ file: string; json: Record<string, any> }> {
  const files = (await place.list(table)).filter((n) => /^metadata\/v\d+\.metadata\.json$/.test(n));
  const file = files.sort((a, b) => Number(/v(\d+)/.exec(a)![1]) - Number(/v(\d+)/.exec(b)![1])).at(-1)!;
  return { file, json: JSON.parse(await place.read(table, file)) as Record<string, any> };
}

describe.each([disk, onS3])('table: iceberg on $name', (place) => {
  it('append: every type of sample.all_types, one snapshot per run; a re-run of the same execution is a no-op', async () => {
    const table = tableName('append');
    const j = job('ice-append', ALL, `mode: append\n        ${place.output(table)}`);
    const first = await run(j);
    expect(first.outputs[0]).toMatchObject({ url: place.url(table), rows: 4, skipped: false, files: 1 });
    expect(first.outputs[0]!.snapshot).toMatch(/^\d+$/);
    await expectTable(place.url(table), [ALL]);
    const second = await run(j);
    expect(second.executionId).not.toBe(first.executionId);
    await expectTable(place.url(table), [ALL, ALL]);

    // The same execution with the same options again: skipped before any row is read, the table as it was.
    const before = await place.list(table);
    const again = await run(j, { executionId: second.executionId });
    expect(again.outputs[0]).toMatchObject({ skipped: true, rows: 4, files: 1, snapshot: second.outputs[0]!.snapshot });
    expect(again.fetchedRows).toBe(0);
    expect(await place.list(table)).toEqual(before);
    // An earlier snapshot's execution too: appended already, so skipped as well.
    const older = await run(j, { executionId: first.executionId });
    expect(older.outputs[0]).toMatchObject({ skipped: true, rows: 4, snapshot: first.outputs[0]!.snapshot });
    expect(await place.list(table)).toEqual(before);

    const { file, json } = await metadataOf(place, table);
    expect(file).toBe('metadata/v2.metadata.json');
    expect(json.snapshots.map((s: { summary: Record<string, string> }) => [s.summary.operation, s.summary['sluice.execution-id'], s.summary['total-records']])).toEqual([
      ['append', first.executionId, '4'],
      ['append', second.executionId, '8'],
    ]);
    expect(String(json['current-snapshot-id'])).toBe(second.outputs[0]!.snapshot);
    // Nothing of the runs' staging is left beside the table.
    expect(before.filter((n) => !n.startsWith('data/') && !n.startsWith('metadata/'))).toEqual([]);
  });

  it('replace: each run one overwrite snapshot; the previous snapshot stays readable', async () => {
    const table = tableName('replace');
    const j = job('ice-replace', ALL, place.output(table));
    const first = await run(j);
    const second = await run(j);
    await expectTable(place.url(table), [ALL]);
    const { json } = await metadataOf(place, table);
    expect(json.snapshots.map((s: { summary: Record<string, string> }) => [s.summary.operation, s.summary['sluice.execution-id'], s.summary['total-records']])).toEqual([
      ['overwrite', first.executionId, '4'],
      ['overwrite', second.executionId, '4'],
    ]);
    expect(json.snapshots[1].summary['deleted-records']).toBe('4');
    // The current snapshot's execution again, same options: nothing fetched, nothing committed.
    const again = await run(j, { executionId: second.executionId });
    expect(again.outputs[0]).toMatchObject({ skipped: true, rows: 4, snapshot: second.outputs[0]!.snapshot });
    expect((await metadataOf(place, table)).file).toBe('metadata/v2.metadata.json');
    // Time travel: the first snapshot's files are still there, and readers see it through its metadata.
    await place.write(table, 'metadata/version-hint.text', '1');
    await expectTable(place.url(table), [ALL]);
    const v1 = JSON.parse(await place.read(table, 'metadata/v1.metadata.json'));
    expect(String(v1['current-snapshot-id'])).toBe(first.outputs[0]!.snapshot);
  });

  it('partition_by: an identity partition spec, Hive directories under data/, every row back', async () => {
    const table = tableName('partitioned');
    const j = job('ice-partitioned', ALL, `mode: append\n        partition_by: [c_boolean]\n        ${place.output(table)}`);
    const out = await run(j);
    expect(out.outputs[0]!.files).toBe(3);
    const data = (await place.list(table)).filter((n) => n.startsWith('data/'));
    expect(data.map((n) => n.split('/').slice(0, 2).join('/')).sort()).toEqual(['data/c_boolean=__HIVE_DEFAULT_PARTITION__', 'data/c_boolean=false', 'data/c_boolean=true']);
    const { json } = await metadataOf(place, table);
    const boolId = json.schemas[0].fields.find((f: { name: string }) => f.name === 'c_boolean').id;
    expect(json['partition-specs']).toEqual([{ 'spec-id': 0, fields: [{ 'source-id': boolId, 'field-id': 1000, name: 'c_boolean', transform: 'identity' }] }]);
    await run(j);
    await expectTable(place.url(table), [ALL, ALL]);
  });

  it('a new column in a later run is added; a changed type fails naming the column and both types, and the table stays', async () => {
    const table = tableName('evolve');
    await run(job('ice-narrow', NARROW, `mode: append\n        ${place.output(table)}`));
    await run(job('ice-wider', WIDER, `mode: append\n        ${place.output(table)}`));
    await expectTable(place.url(table), [NARROW, WIDER]);
    const { json } = await metadataOf(place, table);
    expect(json.schemas.map((s: { fields: { id: number; name: string }[] }) => s.fields.map((f) => `${f.id}:${f.name}`))).toEqual([
      ['1:id', '2:c_varchar'],
      ['1:id', '2:c_varchar', '3:c_bigint', '4:c_date'],
    ]);

    const before = await place.list(table);
    const changed = job('ice-changed', 'select id, cast(c_bigint as varchar) as c_bigint from sample.all_types order by id', `mode: append\n        ${place.output(table)}`);
    const error = await run(changed).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergSchemaConflictError);
    expect((error as Error).message).toBe(
      `Iceberg table ${place.url(table)} (metadata/v2.metadata.json): column c_bigint is long in the table but string in this result; nothing was written. Cast the column to the table's type in the query, rename it (a new column is added to the table), or write to a new table location`,
    );
    expect(policyOf(error).retryJob).toBe(false);
    expect(await place.list(table)).toEqual(before);
    await expectTable(place.url(table), [NARROW, WIDER]);
  });

  it('two jobs committing to one table at once: one snapshot each, none lost', async () => {
    const table = tableName('race');
    await run(job('ice-race-0', NARROW, `mode: append\n        ${place.output(table)}`));
    const [a, b] = await Promise.all(['ice-race-a', 'ice-race-b'].map((name) => run(job(name, NARROW, `mode: append\n        ${place.output(table)}`))));
    await expectTable(place.url(table), [NARROW, NARROW, NARROW]);
    const { file, json } = await metadataOf(place, table);
    expect(file).toBe('metadata/v3.metadata.json');
    expect(json.snapshots.map((s: { summary: Record<string, string> }) => s.summary['sluice.execution-id']).slice(1).sort()).toEqual([a!.executionId, b!.executionId].sort());
  });

  it('a path holding something other than an Iceberg table: refused before an execution is started, nothing touched', async () => {
    const table = tableName('foreign');
    await place.write(table, 'metadata/notes.txt', 'not a table');
    const records: RunRecord[] = [];
    const error = await run(job('ice-foreign', NARROW, place.output(table)), { events: { onRecorded: (r) => records.push(r) } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergNotATableError);
    expect((error as Error).message).toBe(
      `${place.url(table)} is not an Iceberg table: it holds objects (e.g. metadata/notes.txt) but no metadata/v<N>.metadata.json; point the output at an empty location or an existing Iceberg table, or move those objects away`,
    );
    expect(records.at(-1)).toMatchObject({ outcome: 'failed', credits: 0 });
    expect(records.at(-1)!.execution_id ?? null).toBeNull();
    expect(await place.list(table)).toEqual(['metadata/notes.txt']);
  });

  it('corrupt metadata: refused before an execution, naming the table, the file and what to do; the previous snapshot stays readable', async () => {
    const table = tableName('corrupt');
    const j = job('ice-corrupt', NARROW, `mode: append\n        ${place.output(table)}`);
    await run(j);
    await place.write(table, 'metadata/v2.metadata.json', '{"format-version": 2, "table-uu');
    const before = await place.list(table);
    const error = await run(j).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IcebergMetadataError);
    expect((error as Error).message).toContain(`Iceberg table ${place.url(table)}: metadata/v2.metadata.json is not valid table metadata (not JSON`);
    expect((error as Error).message).toContain('Restore that file from a backup or from the engine that wrote it, or write to a new table location');
    expect(policyOf(error)).toMatchObject({ exit: 6, retryJob: false });
    expect(await place.list(table)).toEqual(before);
    // The hint still names v1, which readers follow.
    await expectTable(place.url(table), [NARROW]);
  });
});

/**
 * The file sink, but the first create-only publish of each destination waits until `writers` of them
 * got there: their commits race for the same metadata version every time (a stand-in for two hosts).
 */
function racingFileSink(writers: number): { sink: SinkDescriptor; refused(): number } {
  const file = builtins.sinks.find((s) => s.type === 'file')!;
  const waiting: (() => void)[] = [];
  let refused = 0;
  const sink = defineSink({
    ...file,
    type: 'racing-file',
    create(config) {
      const store = file.create(config) as ObjectStore;
      let first = true;
      return {
        ...store,
        async put(name, body, options = {}) {
          const condition = options.condition;
          if (first && condition !== undefined && 'ifAbsent' in condition) {
            first = false;
            await new Promise<void>((resolve) => {
              waiting.push(resolve);
              if (waiting.length === writers) for (const w of waiting.splice(0)) w();
            });
          }
          return store.put(name, body, options).catch((error: unknown) => {
            if (error instanceof PreconditionFailedError) refused++;
            throw error;
          });
        },
      };
    },
  });
  return { sink, refused: () => refused };
}

describe('table: iceberg, more', () => {
  it('a local folder of files sluice did not write is refused by the destination check, naming the folder and the files', async () => {
    const table = tableName('folder');
    await disk.write(table, 'day=1/part-0.parquet', 'x');
    const error = await run(job('ice-folder', NARROW, disk.output(table))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationCheckError);
    expect((error as Error).message).toContain(disk.url(table));
    expect((error as Error).message).toContain('the folder holds files sluice did not write (day=1); point the export at an empty or sluice-owned folder');
    expect(await disk.list(table)).toEqual(['day=1/part-0.parquet']);
  });

  it('Parquet field ids match the table schema and DuckDB reads the exact decimals and timestamps', async () => {
    const table = tableName('ids');
    await run(job('ice-ids', ALL, disk.output(table)));
    const { json } = await metadataOf(disk, table);
    const [file] = (await disk.list(table)).filter((n) => n.endsWith('.parquet'));
    const path = join(dir, table, file!);
    const ids = await duckRowsJS(`SELECT name, field_id FROM parquet_schema('${path}') WHERE field_id IS NOT NULL`);
    const byName = Object.fromEntries(ids.map((r) => [r.name, Number(r.field_id)]));
    for (const f of json.schemas[0].fields) expect(byName[f.name], f.name).toBe(f.id);
    const rows = await duckRowsJS(`SELECT c_decimal::VARCHAR AS d, strftime(c_timestamp, '%Y-%m-%d %H:%M:%S.%f') AS ts FROM '${path}' ORDER BY id`);
    const want = (await serviceRowsOf(ALL)).rows;
    expect(rows).toEqual(want.map((r) => ({ d: r.c_decimal, ts: r.c_timestamp })));
  });

  it('resume: a stopped export keeps its journaled parts and no snapshot; the next attempt with its id writes only the rest, in one snapshot', async () => {
    const path = join(dir, tableName('resume'));
    const output = resolveOutput({ format: 'parquet', path, table: 'iceberg', mode: 'append', max_rows_per_file: 10 }, builtins);
    const journal = join(path, '.sluice-journal-a1.json');
    const journaledParts = async () => {
      const text = await readFile(journal, 'utf8').catch(() => undefined);
      if (text === undefined) return 0;
      const inner = JSON.parse(Buffer.from((JSON.parse(text) as { journal: string }).journal, 'base64').toString('utf8')) as { parts: unknown[] };
      return inner.parts.length;
    };
    const stop = new AbortController();
    const first = await openExport(output, { executionId: 'e1' }, { resume: { attemptId: 'a1' }, keepOnStop: stop.signal, signal: stop.signal });
    expect(first.startRow).toBe(0);
    const stopping = async function* () {
      let rows = 0;
      for await (const batch of numbered(100, 10)) {
        yield batch;
        rows += batch.numRows;
        if (rows < 40) continue;
        // Stopped (SIGTERM) once a few parts are complete and journaled.
        while ((await journaledParts()) < 3) await new Promise((r) => setTimeout(r, 5));
        stop.abort(new Error('stopped'));
      }
    };
    await expect(first.write({ schema: numberedSchema, batches: stopping(), meta: { executionId: 'e1', totalRowCount: 100, pageSize: 10 } })).rejects.toThrow('stopped');
    const left = await disk.list(path.slice(dir.length + 1));
    expect(left.some((n) => n.startsWith('metadata/'))).toBe(false);
    expect(left.filter((n) => n.startsWith('data/')).length).toBeGreaterThanOrEqual(3);

    const second = await openExport(output, { executionId: 'e1' }, { resume: { attemptId: 'a1' } });
    expect(second.startRow).toBeGreaterThanOrEqual(30);
    expect(second.resumedFiles.length * 10).toBe(second.startRow);
    const rest = async function* () {
      for await (const batch of numbered(100, 10)) if (Number(batch.get(0)!.id - 9007199254740000n) >= second.startRow) yield batch;
    };
    const summary = await second.write({ schema: numberedSchema, batches: rest(), meta: { executionId: 'e1', totalRowCount: 100, pageSize: 10 } });
    expect(summary).toMatchObject({ rows: 100, resumedRows: second.startRow });
    expect(summary.commit?.snapshot).toMatch(/^\d+$/);
    const rows = await icebirdRead(`file://${path}`);
    expect(rows.map((r) => Number((r.id as bigint) - 9007199254740000n)).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    const files = await disk.list(path.slice(dir.length + 1));
    // Exactly the committed files: the ten parts (kept ones included) and the table's metadata; no journal.
    expect(files.filter((n) => n.startsWith('data/'))).toHaveLength(10);
    expect(files.filter((n) => !n.startsWith('data/') && !n.startsWith('metadata/'))).toEqual([]);
  });

  it('two exports committing to one table at the same instant (through the commit seam): both commit, the loser on top of the winner', async () => {
    const path = join(dir, tableName('seam-race'));
    const racing = racingFileSink(2);
    const output = resolveOutput({ format: 'parquet', path, table: 'iceberg', mode: 'append' }, { formats: builtins.formats, sinks: [racing.sink, ...builtins.sinks] });
    const write = (executionId: string) => writeExport({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId, totalRowCount: 30 } }, output);
    const [a, b] = await Promise.all([write('ea'), write('eb')]);
    // Both raced for v1; the one refused re-read the table and committed v2 on top.
    expect(racing.refused()).toBe(1);
    expect([a.commit?.version, b.commit?.version].sort()).toEqual(['metadata/v1.metadata.json', 'metadata/v2.metadata.json']);
    expect(await icebirdRead(`file://${path}`)).toHaveLength(60);
  });

  it('two exports racing without retries: one commits, the other fails cleanly, removes its files, and the table is the winner\'s', async () => {
    const path = join(dir, tableName('seam-race-once'));
    const racing = racingFileSink(2);
    const output = resolveOutput({ format: 'parquet', path, table: 'iceberg', mode: 'append' }, { formats: builtins.formats, sinks: [racing.sink, ...builtins.sinks] });
    const write = (executionId: string) =>
      writeExport({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId, totalRowCount: 30 } }, output, {
        commit: icebergCommit({ mode: 'append', partitionBy: [], commitAttempts: 1 }),
      });
    const settled = await Promise.allSettled([write('ea'), write('eb')]);
    const failed = settled.filter((s) => s.status === 'rejected') as PromiseRejectedResult[];
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toBeInstanceOf(IcebergCommitConflictError);
    expect((failed[0]!.reason as Error).message).toBe(
      `Iceberg table file://${path}: lost the commit of metadata/v1.metadata.json to a concurrent writer 1 time(s); nothing was committed and the table stays at its latest snapshot. Run again (or serialize the writers of this table)`,
    );
    const winner = (settled.find((s) => s.status === 'fulfilled') as PromiseFulfilledResult<ExportSummary>).value;
    expect(await icebirdRead(`file://${path}`)).toHaveLength(30);
    const files = await disk.list(path.slice(dir.length + 1));
    expect(files.filter((n) => n.startsWith('data/'))).toEqual(winner.commit!.files);
  });

  it('an empty first result commits a snapshot (one empty data file); appending an empty result commits nothing new', async () => {
    const flat = join(dir, tableName('empty'));
    const write = (path: string, executionId: string, rows: number, extra: object = {}) =>
      writeExport(
        { schema: numberedSchema, batches: numbered(rows, 10), meta: { executionId, totalRowCount: rows } },
        resolveOutput({ format: 'parquet', path, table: 'iceberg', mode: 'append', ...extra }, builtins),
      );
    expect(await write(flat, 'e0', 0)).toMatchObject({ rows: 0, files: [expect.objectContaining({ rows: 0 })] });
    expect(await icebirdRead(`file://${flat}`)).toEqual([]);

    const parted = join(dir, tableName('empty-parted'));
    await write(parted, 'e1', 5, { partition_by: ['grp'] });
    const empty = await write(parted, 'e2', 0, { partition_by: ['grp'] });
    // A run that appends zero rows commits nothing new: the table stays at its snapshot.
    expect(empty).toMatchObject({ rows: 0, files: [], committed: false });
    expect(empty.commit).toBeUndefined();
    expect((await readdir(join(parted, 'metadata'))).filter((n) => n.endsWith('.metadata.json'))).toEqual(['v1.metadata.json']);
    expect(await icebirdRead(`file://${parted}`)).toHaveLength(5);
  });

  it('sluice run: the summary names the snapshot', async () => {
    const table = tableName('cli');
    const file = join(dir, 'cli.yaml');
    await writeFile(
      file,
      `connection: { base_url: "${svc.url}", api_key_env: ICE_KEY }\nstate_dir: "${join(dir, 'cli-state')}"\njobs:\n  - name: ice-cli\n    source: { sql: "${NARROW}" }\n    outputs:\n      - { format: parquet, table: iceberg, mode: append, path: "${join(dir, table)}" }\n`,
    );
    const text = await startSluice(['run', file, '--quiet'], { env: { ICE_KEY: svc.keys.demo.admin } }).done;
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    const { json } = await metadataOf(disk, table);
    expect(text.stdout).toContain(`${disk.url(table)}  parquet  4 rows  1 file`);
    expect(text.stdout).toContain(`snapshot ${String(json['current-snapshot-id'])}`);
    const again = await startSluice(['run', file, '--json', '--quiet'], { env: { ICE_KEY: svc.keys.demo.admin } }).done;
    expect(again.code).toBe(0);
    const summary = JSON.parse(again.stdout) as { jobs?: unknown[]; outputs?: unknown[] };
    const outputs = (Array.isArray(summary.jobs) ? (summary.jobs[0] as { outputs: unknown[] }).outputs : summary.outputs)!;
    expect(outputs[0]).toMatchObject({ rows: 4, snapshot: expect.stringMatching(/^\d+$/) });
  });
});
