import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../src/export/index.ts';
import { duck } from '../jobs/duck.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

let dir: string;
let s3: LocalS3;
const BUCKET = 'append';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-append-'));
  s3 = await startLocalS3();
  await s3.createBucket(BUCKET);
});
afterAll(async () => {
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Manifest {
  execution_id: string;
  mode: string;
  total_rows: number;
  files: { path: string; rows: number }[];
}

const write = (output: ReturnType<typeof resolved>, executionId: string, rows: number, failAt?: number) =>
  writeExport({ schema: numberedSchema, batches: numbered(rows, 1000, failAt), meta: { executionId } }, output);

describe('mode: append', () => {
  it('on disk: each run adds its parts under its own names; the manifest lists all; the committed files are kept as they are', async () => {
    const out = join(dir, 'local');
    const output = resolved({ format: 'parquet', path: out, mode: 'append', max_rows_per_file: 1500 });
    await write(output, 'EXEC1', 2000);
    const firstPart = await stat(join(out, 'part-00000-EXEC1.parquet'));
    const summary = await write(output, 'EXEC2', 1000);
    // The summary speaks of this run: its rows and files.
    expect(summary).toMatchObject({ rows: 1000, files: [{ path: 'part-00000-EXEC2.parquet', rows: 1000 }] });
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ execution_id: 'EXEC2', mode: 'append', total_rows: 3000 });
    expect(manifest.files.map((f) => [f.path, f.rows])).toEqual([
      ['part-00000-EXEC1.parquet', 1500],
      ['part-00001-EXEC1.parquet', 500],
      ['part-00000-EXEC2.parquet', 1000],
    ]);
    expect((await readdir(out)).sort()).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-EXEC1.parquet', 'part-00000-EXEC2.parquet', 'part-00001-EXEC1.parquet']);
    // The same file (a hard link carried into the new commit), not a copy.
    const after = await stat(join(out, 'part-00000-EXEC1.parquet'));
    expect([after.ino, after.mtimeMs]).toEqual([firstPart.ino, firstPart.mtimeMs]);
    expect(await duck(`select count(*) as n, count(distinct id) as ids from read_parquet('${out}/*.parquet')`)).toEqual([{ n: '3000', ids: '2000' }]);
  });

  it('on disk: a run with no rows commits nothing; a run that fails leaves the committed output as it was', async () => {
    const out = join(dir, 'local-empty');
    const output = resolved({ format: 'csv', path: out, mode: 'append' });
    await write(output, 'EXEC1', 10);
    const before = await readFile(join(out, '_manifest.json'), 'utf8');
    const empty = await write(output, 'EMPTY', 0);
    expect(empty).toMatchObject({ rows: 0, files: [], committed: false });
    await expect(write(output, 'BROKEN', 5000, 2000)).rejects.toThrow('source failed at row 2000');
    expect(await readFile(join(out, '_manifest.json'), 'utf8')).toBe(before);
    expect((await readdir(out)).sort()).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-EXEC1.csv']);
    expect((await readdir(dir)).filter((n) => n.includes('local-empty.sluice-staging'))).toEqual([]);
  });

  it('on S3: appended objects stay, the manifest lists all, a failed append removes only its own objects', async () => {
    const s3opts = { endpoint: s3.endpoint, region: s3.region, force_path_style: true };
    const output = resolved({ format: 'ndjson', path: `s3://${BUCKET}/events`, mode: 'append', s3: s3opts });
    await write(output, 'EXEC1', 100);
    await write(output, 'EXEC2', 50);
    const keys = (await s3.list(BUCKET, 'events/')).sort();
    expect(keys).toEqual(['events/_SUCCESS', 'events/_manifest.json', 'events/part-00000-EXEC1.ndjson', 'events/part-00000-EXEC2.ndjson']);
    const manifest = JSON.parse(new TextDecoder().decode(await s3.get(BUCKET, 'events/_manifest.json'))) as Manifest;
    expect(manifest.files.map((f) => [f.path, f.rows])).toEqual([
      ['part-00000-EXEC1.ndjson', 100],
      ['part-00000-EXEC2.ndjson', 50],
    ]);
    await expect(write(output, 'BROKEN', 5000, 2000)).rejects.toThrow('source failed');
    expect((await s3.list(BUCKET, 'events/')).sort()).toEqual(keys);
    const local = join(dir, 's3-copy');
    await s3.download(BUCKET, 'events/', local);
    expect(await duck(`select count(*) as n from read_ndjson_auto('${local}/**/*.ndjson')`)).toEqual([{ n: '150' }]);
  });

  it('on disk, partitioned: the committed files in every partition directory are kept', async () => {
    const out = join(dir, 'hive');
    const output = resolved({ format: 'parquet', path: out, mode: 'append', partition_by: ['grp'] });
    await write(output, 'EXEC1', 30);
    await write(output, 'EXEC2', 30);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as Manifest;
    expect(manifest.files.map((f) => f.path).sort()).toEqual([
      'grp=__HIVE_DEFAULT_PARTITION__/part-00000-EXEC1.parquet',
      'grp=__HIVE_DEFAULT_PARTITION__/part-00000-EXEC2.parquet',
      'grp=g1/part-00001-EXEC1.parquet',
      'grp=g1/part-00001-EXEC2.parquet',
      'grp=g2/part-00002-EXEC1.parquet',
      'grp=g2/part-00002-EXEC2.parquet',
    ]);
    expect(await duck(`select grp, count(*)::int as n from read_parquet('${out}/*/*.parquet', hive_partitioning = true) group by grp order by grp`)).toEqual([
      { grp: 'g1', n: 20 },
      { grp: 'g2', n: 20 },
      { grp: null, n: 20 },
    ]);
  });

  it('refuses to append an execution the output holds already (written with other options)', async () => {
    const out = join(dir, 'twice');
    await write(resolved({ format: 'csv', path: out, mode: 'append' }), 'EXEC1', 10);
    await expect(write(resolved({ format: 'csv', path: out, mode: 'append', max_rows_per_file: 5 }), 'EXEC1', 10)).rejects.toThrow(
      /it holds the rows of execution EXEC1 already \(written with other options\); appending them again would duplicate them/,
    );
  });

  it('refuses to append with another format, naming both', async () => {
    const out = join(dir, 'layout');
    await write(resolved({ format: 'parquet', path: out, mode: 'append' }), 'EXEC1', 10);
    await expect(write(resolved({ format: 'arrow', path: out, mode: 'append' }), 'EXEC2', 10)).rejects.toThrow(/it holds parquet files, not arrow; append with format: parquet/);
  });
});
