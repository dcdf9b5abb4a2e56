// Partitioned output when partitions outnumber max_open_files and rows arrive interleaved:
// each partition still gets a bounded number of files (not one per returning run), at most
// max_open_files are written at once, and every row comes back.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DateDay, Field, Int64, makeData, RecordBatch, Schema, Struct, Utf8, vectorFromArray } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../src/export/index.ts';
import { builtins } from '../../connectors/index.ts';
import { countingFileSink } from '../connectors/destinations.ts';
import { resolved } from '../connectors/fixtures.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const DAYS = 365;
const schema = new Schema([new Field('id', new Int64(), false), new Field('day', new DateDay(), false), new Field('name', new Utf8(), false)]);

/** `rows` rows whose day cycles through 365 values row by row: the worst arrival order. */
async function* roundRobin(rows: number, size: number): AsyncIterable<RecordBatch> {
  for (let start = 0; start < rows; start += size) {
    const n = Math.min(size, rows - start);
    const id = new BigInt64Array(n);
    const day = new Int32Array(n);
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      id[i] = BigInt(start + i);
      day[i] = 20_454 + ((start + i) % DAYS);
      names.push(`event ${start + i}`);
    }
    const children = [
      makeData({ type: new Int64(), length: n, nullCount: 0, data: id }),
      makeData({ type: new DateDay(), length: n, nullCount: 0, data: day }),
      vectorFromArray(names, new Utf8()).data[0]!,
    ];
    yield new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children }));
  }
}

describe('partitioned output with more partitions than max_open_files', () => {
  it('groups interleaved rows: at most two files per partition, 16 written at once, every row read back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-spread-'));
    dirs.push(dir);
    const path = join(dir, 'out');
    const counter = { writing: 0, most: 0 };
    const counted = countingFileSink(counter);
    const registry = { formats: builtins.formats, sinks: builtins.sinks.map((s) => (s.type === 'file' ? counted : s)) };
    // Fewer rows than the 1M of the bench figure (npm run bench -- sinks), same shape; no encoding
    // trial per file (dictionary: false) to keep the test quick.
    const rows = 10_950;
    const summary = await writeExport(
      { schema, batches: roundRobin(rows, 1_024), meta: { executionId: 'e-spread', totalRowCount: rows } },
      resolved({ format: 'parquet', format_options: { dictionary: false }, path, partition_by: ['day'], max_open_files: 16 }, registry),
    );
    expect(counter.most).toBeLessThanOrEqual(16);
    const perPartition = new Map<string, number>();
    for (const f of summary.files) perPartition.set(f.path.split('/')[0]!, (perPartition.get(f.path.split('/')[0]!) ?? 0) + 1);
    expect(perPartition.size).toBe(DAYS);
    expect(Math.max(...perPartition.values())).toBeLessThanOrEqual(2);
    expect(summary.files.length).toBeLessThan(2 * DAYS);
    const back = await query(
      `SELECT count(*)::INTEGER AS n, count(DISTINCT day)::INTEGER AS days, sum(id)::BIGINT AS ids, bool_and(name = 'event ' || id) AS names,
              bool_and((id % ${DAYS})::INTEGER = (day - DATE '2026-01-01')) AS placed
       FROM read_parquet('${path}/**/*.parquet', hive_partitioning = true)`,
    );
    expect(back).toEqual([{ n: rows, days: DAYS, ids: BigInt((rows * (rows - 1)) / 2), names: true, placed: true }]);
  });
});
