// An Iceberg table's writers go through the one transaction of every sink: each holds a lease while
// it writes, and the sweep after a commit removes what a dead writer left that the table does not
// reference, never what a live writer wrote or journaled. Tables on disk and on the local S3
// (fauxqs behind the precondition gate) and on the GCS stand-in, read back by an independent Iceberg reader (icebird).
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordBatch } from 'apache-arrow';
import { builtins } from '../../../connectors/index.ts';
import { openExport, resolveOutput, writeExport } from '../../../src/export/index.ts';
import { openDestination } from '../../../src/export/storage/index.ts';
import { icebergCommit } from '../../../src/export/iceberg/index.ts';
import { startLocalS3, type LocalS3 } from '../../helpers/s3.ts';
import { startLocalGcs, type LocalGcs } from '../../helpers/gcs.ts';
import { startPreconditionGate, type PreconditionGate } from '../../helpers/preconditionGate.ts';
import { icebirdRead } from '../../helpers/icebird.ts';
import { numbered, numberedSchema } from '../../connectors/fixtures.ts';

let s3: LocalS3;
let gate: PreconditionGate;
let gcs: LocalGcs;
let dir: string;

beforeAll(async () => {
  [s3, gcs] = await Promise.all([startLocalS3(), startLocalGcs()]);
  await Promise.all([s3.createBucket('lake'), gcs.createBucket('lake')]);
  gate = await startPreconditionGate(s3.endpoint);
  dir = await mkdtemp(join(tmpdir(), 'sluice-iceberg-sweep-'));
});
afterAll(async () => {
  await gate?.stop();
  await s3?.stop();
  expect(gcs?.violations).toEqual([]);
  await gcs?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Where {
  readonly name: string;
  output(table: string): Record<string, unknown>;
  url(table: string): string;
  /** Every object of the table, relative to it, sorted. */
  list(table: string): Promise<string[]>;
  read(table: string, name: string): Promise<string | undefined>;
  write(table: string, name: string, body: string): Promise<void>;
}

const disk: Where = {
  name: 'disk',
  output: (table) => ({ path: join(dir, table) }),
  url: (table) => `file://${join(dir, table)}`,
  list: async (table) =>
    (await readdir(join(dir, table), { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(join(dir, table).length + 1))
      .sort(),
  read: (table, name) => readFile(join(dir, table, name), 'utf8').catch(() => undefined),
  write: (table, name, body) => writeFile(join(dir, table, name), body),
};

const onS3: Where = {
  name: 's3',
  output: (table) => ({ path: `s3://lake/${table}`, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } }),
  url: (table) => `s3://lake/${table}`,
  list: async (table) => (await s3.list('lake', `${table}/`)).map((k) => k.slice(table.length + 1)).sort(),
  read: async (table, name) => (await s3.list('lake', `${table}/${name}`)).includes(`${table}/${name}`) ? new TextDecoder().decode(await s3.get('lake', `${table}/${name}`)) : undefined,
  async write(table, name, body) {
    await s3.client.send(new PutObjectCommand({ Bucket: 'lake', Key: `${table}/${name}`, Body: body }));
  },
};

const onGcs: Where = {
  name: 'gcs',
  output: (table) => ({ path: `gs://lake/${table}`, gcs: gcs.options }),
  url: (table) => `gs://lake/${table}`,
  list: async (table) => (await gcs.list('lake', `${table}/`)).map((k) => k.slice(table.length + 1)).sort(),
  read: async (table, name) => (await gcs.list('lake', `${table}/${name}`)).includes(`${table}/${name}`) ? new TextDecoder().decode(await gcs.get('lake', `${table}/${name}`)) : undefined,
  write: (table, name, body) => gcs.put('lake', `${table}/${name}`, body),
};

let tables = 0;

/** How many parts the journal of `attempt` lists (0 while it has none). */
async function journaled(where: Where, table: string, attempt: string): Promise<number> {
  const text = await where.read(table, `.sluice-journal-${attempt}.json`);
  if (text === undefined) return 0;
  const inner = JSON.parse(Buffer.from((JSON.parse(text) as { journal: string }).journal, 'base64').toString('utf8')) as { parts: unknown[] };
  return inner.parts.length;
}

/** `numbered(rows)` that, once `parts` parts are journaled, calls `reached` and then waits for `go`. */
function pausing(where: Where, table: string, attempt: string, parts: number, reached: () => void, go: Promise<void>): AsyncIterable<RecordBatch> {
  return (async function* () {
    let rows = 0;
    for await (const batch of numbered(60, 10)) {
      yield batch;
      rows += batch.numRows;
      if (rows !== parts * 10 + 10) continue;
      while ((await journaled(where, table, attempt)) < parts) await new Promise((r) => setTimeout(r, 5));
      reached();
      await go;
    }
  })();
}

const dataFiles = (names: readonly string[]) => names.filter((n) => n.startsWith('data/'));

describe.each([disk, onS3, onGcs])('Iceberg writers under the one sweep rule, on $name', (where) => {
  it("a commit's sweep removes a dead writer's parts, journal and lease, and nothing of a live writer's; both commits read back whole", async () => {
    const table = `sweep-${++tables}`;
    const output = resolveOutput({ format: 'parquet', table: 'iceberg', mode: 'append', max_rows_per_file: 10, ...where.output(table) }, builtins);
    const meta = (executionId: string) => ({ executionId, totalRowCount: 60, pageSize: 10 });

    // A writer stopped for good after two journaled parts: its process is this one, its lease released, so it is dead.
    const stop = new AbortController();
    const dead = await openExport(output, { executionId: 'e-dead' }, { resume: { attemptId: 'dead' }, keepOnStop: stop.signal, signal: stop.signal });
    const stopping = pausing(where, table, 'dead', 2, () => stop.abort(new Error('stopped')), Promise.resolve());
    await expect(dead.write({ schema: numberedSchema, batches: stopping, meta: meta('e-dead') })).rejects.toThrow('stopped');
    const deadFiles = dataFiles(await where.list(table));
    expect(deadFiles.length).toBeGreaterThanOrEqual(2);
    expect(await where.list(table)).toEqual(expect.arrayContaining(['.sluice-journal-dead.json', '.sluice-lease-dead']));

    // A live writer, paused mid-way with two parts journaled.
    let reached!: () => void;
    const paused = new Promise<void>((r) => (reached = r));
    let go!: () => void;
    const live = await openExport(output, { executionId: 'e-live' }, { resume: { attemptId: 'live' } });
    const writing = live.write({ schema: numberedSchema, batches: pausing(where, table, 'live', 2, reached, new Promise((r) => (go = r))), meta: meta('e-live') });
    await paused;
    const liveFiles = dataFiles(await where.list(table)).filter((n) => !deadFiles.includes(n));
    expect(liveFiles.length).toBeGreaterThanOrEqual(2);

    // A sweep as a skipped run's tidy-up does it, then another writer's commit and the sweep after it.
    const destination = openDestination(output);
    await destination.sweep!(async () => []);
    await destination.close();
    const other = await writeExport({ schema: numberedSchema, batches: numbered(60, 10), meta: meta('e-other') }, output);
    expect(other.commit?.snapshot).toMatch(/^\d+$/);

    const after = await where.list(table);
    for (const name of deadFiles) expect(after, `the dead writer's ${name}`).not.toContain(name);
    expect(after).not.toContain('.sluice-journal-dead.json');
    expect(after).not.toContain('.sluice-lease-dead');
    for (const name of liveFiles) expect(after, `the live writer's ${name}`).toContain(name);
    expect(after).toEqual(expect.arrayContaining(['.sluice-journal-live.json', '.sluice-lease-live']));

    go();
    const summary = await writing;
    expect(summary).toMatchObject({ rows: 60, resumedFiles: 0 });
    expect(summary.commit?.snapshot).toMatch(/^\d+$/);
    const ids = (await icebirdRead(where.url(table), where === onGcs ? gcs : s3)).map((r) => Number((r.id as bigint) - 9007199254740000n)).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 60 }, (_, i) => [i, i]).flat());
    // Exactly what the table references: both commits' data files and the metadata, no record of any writer.
    const left = await where.list(table);
    expect(dataFiles(left).sort()).toEqual([...other.commit!.files, ...summary.commit!.files].sort());
    expect(left.filter((n) => !n.startsWith('data/') && !n.startsWith('metadata/'))).toEqual([]);
  });

  it("a run that finds the table committed tidies it as a commit would: a dead writer's parts, journal and lease go", async () => {
    const table = `tidy-${++tables}`;
    const output = resolveOutput({ format: 'parquet', table: 'iceberg', mode: 'append', max_rows_per_file: 10, ...where.output(table) }, builtins);
    const meta = (executionId: string) => ({ executionId, totalRowCount: 60, pageSize: 10 });
    const first = await writeExport({ schema: numberedSchema, batches: numbered(60, 10), meta: meta('e1') }, output);
    const stop = new AbortController();
    const dead = await openExport(output, { executionId: 'e-dead' }, { resume: { attemptId: 'dead' }, keepOnStop: stop.signal, signal: stop.signal });
    await expect(dead.write({ schema: numberedSchema, batches: pausing(where, table, 'dead', 2, () => stop.abort(new Error('stopped')), Promise.resolve()), meta: meta('e-dead') })).rejects.toThrow('stopped');
    expect(dataFiles(await where.list(table)).length).toBeGreaterThan(first.commit!.files.length);

    // What `sluice run` does when the execution is already committed (committedExport): finish, then tidy.
    const protocol = icebergCommit({ mode: 'append', partitionBy: [] });
    const tidy = async () => {
      const destination = openDestination(output);
      try {
        await protocol.finish!(destination, (await protocol.read(destination))!);
      } finally {
        await destination.close();
      }
    };
    await tidy();
    const left = await where.list(table);
    expect(dataFiles(left).sort()).toEqual([...first.commit!.files].sort());
    expect(left.filter((n) => !n.startsWith('data/') && !n.startsWith('metadata/'))).toEqual([]);

    // A writer killed after its snapshot landed, before its lease went: its files are the table's, they stay.
    const token = /-([0-9a-f]{8})\.parquet$/.exec(first.commit!.files[0]!)![1]!;
    await where.write(table, '.sluice-lease-killed', `${JSON.stringify({ host: hostname(), pid: process.pid, token: 'not-held-here', tag: token })}\n`);
    await tidy();
    const still = await where.list(table);
    expect(dataFiles(still).sort()).toEqual([...first.commit!.files].sort());
    expect(still).not.toContain('.sluice-lease-killed');
    expect(await icebirdRead(where.url(table), where === onGcs ? gcs : s3)).toHaveLength(60);
  });
});
