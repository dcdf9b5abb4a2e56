import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { HIVE_DEFAULT_PARTITION, ManifestInvalidError, RowCountMismatchError, writeExport } from '../../src/export/index.ts';
import { ConfigError, DestinationError } from '../../src/kit/index.ts';
import { streamSink } from '../../connectors/sinks/stdout/index.ts';
import { file, stdout } from '../../connectors/index.ts';
import { builtins } from '../../connectors/index.ts';
import { resolveOutput } from '../../src/export/index.ts';
import { countingFileSink, listFiles } from '../connectors/destinations.ts';
import { fromArray, numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';

const dirs: string[] = [];
async function outDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-export-'));
  dirs.push(parent);
  return join(parent, 'out');
}
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('writeExport', () => {
  it('partitions Hive-style, NULL as the default partition, readable by DuckDB with hive_partitioning', async () => {
    const path = await outDir();
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(90, 20), meta: { executionId: 'e-part', totalRowCount: 90 } },
      resolved({ format: 'parquet', path, partition_by: ['grp'] }),
    );
    const names = await listFiles(path);
    expect(names.filter((n) => !n.startsWith('_')).map((n) => n.split('/')[0])).toEqual(
      expect.arrayContaining([`grp=${HIVE_DEFAULT_PARTITION}`, 'grp=g1', 'grp=g2']),
    );
    // One file per partition: unsorted input still lands in one open file per directory.
    expect(summary.files).toHaveLength(3);
    expect(summary.files.find((f) => f.path.startsWith('grp=g1/'))?.partition).toEqual({ grp: 'g1' });
    const rows = await query(
      `SELECT grp, count(*)::INTEGER AS n, min(id)::VARCHAR AS lo FROM read_parquet('${path}/**/*.parquet', hive_partitioning = true) GROUP BY grp ORDER BY grp NULLS FIRST`,
    );
    expect(rows).toEqual([
      { grp: null, n: 30, lo: '9007199254740000' },
      { grp: 'g1', n: 30, lo: '9007199254740001' },
      { grp: 'g2', n: 30, lo: '9007199254740002' },
    ]);
    // Partition columns live in the path, not in the files.
    const cols = await query(`DESCRIBE SELECT * FROM read_parquet('${path}/grp=g1/*.parquet', hive_partitioning = false)`);
    expect(cols.map((c) => c.column_name)).toEqual(['id', 'name']);

    // keep_partition_columns: the column stays in the files too, with its type.
    const kept = await outDir();
    await writeExport({ schema: numberedSchema, batches: numbered(90, 20), meta: { executionId: 'e-keep' } }, resolved({ format: 'parquet', path: kept, partition_by: ['grp'], keep_partition_columns: true }));
    const inFile = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT grp)::INTEGER AS g FROM read_parquet('${kept}/grp=g1/*.parquet', hive_partitioning = false) WHERE grp = 'g1'`);
    expect(inFile).toEqual([{ n: 30, g: 1 }]);
  });

  it('partitions by several columns, nested in the given order, each NULL as the default partition', async () => {
    const path = await outDir();
    const { Schema, Field, Utf8, Int64, RecordBatch, makeData, Struct, vectorFromArray } = await import('apache-arrow');
    const schema = new Schema([new Field('a', new Utf8(), true), new Field('b', new Int64(), true), new Field('v', new Int64(), false)]);
    const batch = new RecordBatch(schema, makeData({
      type: new Struct(schema.fields), length: 5, nullCount: 0,
      children: [
        vectorFromArray(['x', 'x', 'y', null, 'x'], new Utf8()).data[0]!,
        vectorFromArray([1n, null, 1n, 2n, 1n], new Int64()).data[0]!,
        vectorFromArray([10n, 20n, 30n, 40n, 50n], new Int64()).data[0]!,
      ],
    }));
    const summary = await writeExport({ schema, batches: fromArray([batch]), meta: { executionId: 'e-two', totalRowCount: 5 } }, resolved({ format: 'parquet', path, partition_by: ['a', 'b'] }));
    expect(summary.files.map((f) => f.path.split('/').slice(0, 2).join('/')).sort()).toEqual([
      `a=${HIVE_DEFAULT_PARTITION}/b=2`,
      'a=x/b=1',
      `a=x/b=${HIVE_DEFAULT_PARTITION}`,
      'a=y/b=1',
    ]);
    expect(summary.files.find((f) => f.path.startsWith('a=x/b=1/'))).toMatchObject({ rows: 2, partition: { a: 'x', b: '1' } });
    const rows = await query(`SELECT a, b::VARCHAR AS b, sum(v)::INTEGER AS v FROM read_parquet('${path}/*/*/*.parquet', hive_partitioning = true) GROUP BY a, b ORDER BY a NULLS FIRST, b NULLS FIRST`);
    expect(rows).toEqual([
      { a: null, b: '2', v: 40 },
      { a: 'x', b: null, v: 20 },
      { a: 'x', b: '1', v: 60 },
      { a: 'y', b: '1', v: 30 },
    ]);
  });

  it('escapes partition values as Hive does', async () => {
    const path = await outDir();
    const { Schema, Field, Utf8, Int64, RecordBatch, makeData, Struct, vectorFromArray } = await import('apache-arrow');
    const schema = new Schema([new Field('k', new Utf8(), true), new Field('v', new Int64(), true)]);
    const batch = new RecordBatch(schema, makeData({
      type: new Struct(schema.fields), length: 3, nullCount: 0,
      children: [vectorFromArray(['a/b', 'x=y:z', ''], new Utf8()).data[0]!, vectorFromArray([1n, 2n, 3n], new Int64()).data[0]!],
    }));
    await writeExport({ schema, batches: fromArray([batch]), meta: { executionId: 'e-esc' } }, resolved({ format: 'csv', path, partition_by: ['k'] }));
    const dirsWritten = (await listFiles(path)).filter((n) => !n.startsWith('_')).map((n) => n.split('/')[0]).sort();
    expect(dirsWritten).toEqual([`k=${HIVE_DEFAULT_PARTITION}`, 'k=a%2Fb', 'k=x%3Dy%3Az']);
  });

  it('keeps at most max_open_files files open: the least recently used partition file is finished and later rows roll to a new part', async () => {
    const path = await outDir();
    // The file sink, counting the streams being written at once.
    const counter = { writing: 0, most: 0 };
    const counted = countingFileSink(counter);
    const registry = { formats: builtins.formats, sinks: builtins.sinks.map((s) => (s.type === 'file' ? counted : s)) };
    // Unsorted: the three groups alternate row by row, in batches of 9 rows.
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(90, 9), meta: { executionId: 'e-lru', totalRowCount: 90 } },
      resolved({ format: 'csv', path, partition_by: ['grp'], max_open_files: 2 }, registry),
    );
    expect(counter.most).toBe(2);
    // The group evicted first (NULL) comes back: its later rows wait and make one more file at
    // the end, instead of a new part each time it returns.
    expect(summary.files.map((f) => f.path.split('/')[0]).sort()).toEqual(['grp=__HIVE_DEFAULT_PARTITION__', 'grp=__HIVE_DEFAULT_PARTITION__', 'grp=g1', 'grp=g2']);
    const rows = await query(`SELECT grp, count(*)::INTEGER AS n, sum(id - 9007199254740000)::INTEGER AS s FROM read_csv('${path}/**/*.csv', hive_partitioning = true) GROUP BY grp ORDER BY grp NULLS FIRST`);
    expect(rows).toEqual([
      { grp: null, n: 30, s: 1305 },
      { grp: 'g1', n: 30, s: 1335 },
      { grp: 'g2', n: 30, s: 1365 },
    ]);

    // The default bound leaves three partitions alone: one file each.
    const again = await writeExport({ schema: numberedSchema, batches: numbered(90, 9), meta: { executionId: 'e-lru2' } }, resolved({ format: 'csv', path: await outDir(), partition_by: ['grp'] }));
    expect(again.files).toHaveLength(3);
    expect(() => resolveOutput({ format: 'csv', path: '/x', max_open_files: 0 }, builtins)).toThrow(/max_open_files/);
  });

  it('rolls files by bytes', async () => {
    const path = await outDir();
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(2000, 100), meta: { executionId: 'e-bytes' } },
      resolved({ format: 'csv', path, max_bytes_per_file: 8 * 1024 }),
    );
    expect(summary.files.length).toBeGreaterThan(3);
    expect(summary.files.reduce((n, f) => n + f.rows, 0)).toBe(2000);
    // Checked between batches: a file overshoots by at most one batch (100 rows, well under 8 KiB).
    for (const f of summary.files) expect(f.bytes).toBeLessThan(16 * 1024);
  });

  it('fails on a row count mismatch and commits nothing', async () => {
    const path = await outDir();
    const run = writeExport({ schema: numberedSchema, batches: numbered(100, 30), meta: { executionId: 'e-count', totalRowCount: 101 } }, resolved({ format: 'ndjson', path }));
    await expect(run).rejects.toBeInstanceOf(RowCountMismatchError);
    await expect(run).rejects.toThrow('wrote 100 rows but the result has 101');
    expect(await listFiles(path)).toEqual([]);
  });

  it('writes the schema with service types and metadata into the manifest', async () => {
    const path = await outDir();
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e-man', queryId: 3, parameters: { big: 2n ** 64n }, endedAt: '2024-01-01T00:00:00Z' } },
      resolved({ format: 'csv', path }),
    );
    const manifest = JSON.parse(await readFile(join(path, '_manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ version: 1, format: 'csv', query_id: 3, ended_at: '2024-01-01T00:00:00Z', parameters: { big: '18446744073709551616' } });
    expect(manifest.schema.fields.map((f: { name: string; type: string }) => [f.name, f.type])).toEqual([['id', 'Int64'], ['name', 'Utf8'], ['grp', 'Utf8']]);
    expect(summary.manifest?.total_rows).toBe(10);
    expect(await readFile(join(path, '_SUCCESS'))).toHaveLength(0);
  });

  it('refuses to replace a directory it did not write', async () => {
    const path = await outDir();
    await mkdir(path, { recursive: true });
    await writeFile(join(path, 'precious.txt'), 'keep me');
    const run = writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e-foreign' } }, resolved({ format: 'csv', path }));
    await expect(run).rejects.toBeInstanceOf(DestinationError);
    await expect(run).rejects.toThrow('precious.txt');
    expect(await listFiles(path)).toEqual(['precious.txt']);
  });

  it('refuses an unreadable previous manifest instead of guessing what to delete', async () => {
    const path = await outDir();
    await mkdir(path, { recursive: true });
    await writeFile(join(path, '_manifest.json'), '{"version":1,"execution_id":"x","files":[{"path":"../../etc/passwd","rows":1,"bytes":1,"sha256":""}]}');
    await expect(writeExport({ schema: numberedSchema, batches: numbered(1, 1), meta: { executionId: 'e' } }, resolved({ format: 'csv', path }))).rejects.toBeInstanceOf(
      ManifestInvalidError,
    );
  });

  it('names a partition column that is not in the result', async () => {
    const run = writeExport({ schema: numberedSchema, batches: numbered(1, 1), meta: { executionId: 'e' } }, resolved({ format: 'csv', path: await outDir(), partition_by: ['grp', 'nope'] }));
    await expect(run).rejects.toBeInstanceOf(ConfigError);
    await expect(run).rejects.toThrow(/partition_by\[1\]: no such column.*\(got "nope"\)/);
  });

  it('streams a single file to stdout, without markers', async () => {
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const registry = { formats: builtins.formats, sinks: [{ ...stdout, create: () => streamSink(out) }, ...builtins.sinks.filter((s) => s.type !== 'stdout')] };
    const progress: number[] = [];
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(5, 2), meta: { executionId: 'e-out', totalRowCount: 5 } },
      resolved({ format: 'ndjson', path: '-' }, registry),
      { onProgress: (p) => progress.push(p.rows) },
    );
    const lines = Buffer.concat(chunks).toString('utf8').trim().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe('{"id":9007199254740000,"name":"row 0","grp":null}');
    expect(summary.manifest).toBeUndefined();
    expect(progress).toEqual([2, 4, 5]);
  });
});
