// Parquet column encodings and statistics, read from the files by DuckDB's parquet_metadata, and
// the values read back by DuckDB and polars. sample.events comes from the real service.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Decimal, FixedSizeBinary, RecordBatch, makeVector, tableFromArrays, type Table } from 'apache-arrow';
import { countValues } from '../../connectors/formats/parquet/encodings.ts';
import pl from 'nodejs-polars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { parquet } from '../../connectors/index.ts';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { fromArray, numbered, numberedSchema, resolved } from './fixtures.ts';
import { readBack } from './readBack.ts';

const ROWS = 20_000;
let svc: TestService;
let events: RecordBatch[];
const dirs: string[] = [];

beforeAll(async () => {
  svc = await startTestService({ sampleRows: ROWS });
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
  events = [];
  for await (const b of stream(client, { sql: 'select * from sample.events order by id' }, { concurrency: 2 }).batches()) events.push(b);
  await client.close?.();
});
afterAll(async () => {
  await svc?.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function exportParquet(batches: RecordBatch[], formatOptions: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-pq-enc-'));
  dirs.push(dir);
  const path = join(dir, 'out');
  await writeExport({ schema: batches[0]!.schema, batches: fromArray(batches), meta: { executionId: 'e-enc' } }, resolved({ format: 'parquet', format_options: formatOptions, path }));
  const files = (await readdir(path)).filter((n) => n.endsWith('.parquet'));
  expect(files).toHaveLength(1);
  return join(path, files[0]!);
}

/** Column -> encodings of its chunks (DuckDB lists them per chunk, e.g. "RLE, DELTA_BINARY_PACKED"). */
async function encodings(file: string): Promise<Record<string, string>> {
  const rows = await duckRowsJS(`SELECT path_in_schema AS c, string_agg(DISTINCT encodings, ' | ') AS e FROM parquet_metadata('${file}') GROUP BY ALL`);
  return Object.fromEntries(rows.map((r) => [String(r.c), String(r.e)]));
}

describe('parquet encodings of sample.events', () => {
  it('chooses an encoding per column from the data and writes statistics for every column', async () => {
    const file = await exportParquet(events);
    expect(await encodings(file)).toEqual({
      id: 'RLE, DELTA_BINARY_PACKED', // sorted: deltas of 1
      ts: 'RLE, DELTA_BINARY_PACKED', // sorted, evenly spaced
      name: 'PLAIN, RLE', // 1,000 names repeating in order: zstd finds the repeats in plain text
      value: 'RLE, BYTE_STREAM_SPLIT', // doubles: byte planes compress better than whole values
      amount: 'RLE, DELTA_BINARY_PACKED', // DECIMAL(18, 4) is an INT64
      quantity: 'RLE, DELTA_BINARY_PACKED',
      flag: 'PLAIN, RLE',
      day: 'PLAIN, RLE', // one date (20,000 events span 6.9 hours): a single run
    });
    const stats = await duckRowsJS(
      `SELECT path_in_schema AS c, min(stats_min_value) AS lo, max(stats_max_value) AS hi, sum(stats_null_count)::INTEGER AS nulls,
              bool_and(stats_min_value IS NOT NULL AND stats_max_value IS NOT NULL) AS every_group
       FROM parquet_metadata('${file}') GROUP BY ALL ORDER BY c`,
    );
    for (const s of stats) {
      expect(s.every_group, `${s.c}: min/max in every row group`).toBe(true);
      expect(s.nulls, `${s.c}: null count`).toBe(0);
    }
    const byColumn = Object.fromEntries(stats.map((s) => [String(s.c), s]));
    expect([byColumn.id!.lo, byColumn.id!.hi]).toEqual(['0', String(ROWS - 1)]);
    // day is the date of ts: 20,000 rows are an event every 1.234567 s from midnight, 6.9 hours.
    expect([byColumn.day!.lo, byColumn.day!.hi]).toEqual(['2026-01-01', '2026-01-01']);
    expect([byColumn.flag!.lo, byColumn.flag!.hi]).toEqual(['false', 'true']);
  });

  it('reads back value for value in DuckDB and in polars', async () => {
    const file = await exportParquet(events);
    const schema = events[0]!.schema;
    // The reference: every column plain, which the conformance suite checks value by value for every type.
    const plain = await exportParquet(events, { dictionary: false, columns: Object.fromEntries(schema.fields.map((f) => [f.name, { encoding: 'plain' }])) });
    expect(Object.values(await encodings(plain)).every((e) => e === 'PLAIN, RLE')).toBe(true);
    const back = await readBack('parquet', [file], schema);
    expect(back.id).toHaveLength(ROWS);
    expect(back).toEqual(await readBack('parquet', [plain], schema));

    const frame = pl.readParquet(file);
    expect(frame.height).toBe(ROWS);
    const column = (name: string) => events.flatMap((b) => Array.from(b.getChild(name)!.toArray() as ArrayLike<unknown>));
    expect(frame.getColumn('id').cast(pl.Float64).toArray()).toEqual(column('id').map(Number));
    expect(frame.getColumn('ts').cast(pl.Int64).cast(pl.Float64).toArray()).toEqual(column('ts').map(Number));
    expect(frame.getColumn('name').toArray()).toEqual(events.flatMap((b) => b.getChild('name')!.toArray() as string[]));
    expect(frame.getColumn('value').toArray()).toEqual(column('value'));
    expect(frame.getColumn('quantity').toArray()).toEqual(column('quantity'));
    expect(frame.getColumn('day').cast(pl.Int32).toArray()).toEqual(column('day').map((ms) => Number(ms) / 86_400_000)); // arrow-js: epoch ms
    expect(frame.getColumn('amount').cast(pl.Utf8).toArray()).toEqual(back.amount);
  });

  it('dictionary: true and false still apply to every column', async () => {
    const dictionary = await encodings(await exportParquet(events, { dictionary: true }));
    expect(dictionary.id).toContain('RLE_DICTIONARY');
    expect(dictionary.name).toContain('RLE_DICTIONARY');
    const none = await encodings(await exportParquet(events, { dictionary: false }));
    expect(Object.values(none).join(' ')).not.toContain('DICTIONARY');
    expect(none.id).toBe('PLAIN, RLE');
  });
});

describe('parquet format options', () => {
  it('per-column encoding, dictionary and statistics override the automatic choice', async () => {
    const file = await exportParquet(events, {
      columns: {
        id: { encoding: 'plain' },
        name: { dictionary: true },
        value: { encoding: 'plain', statistics: 'none' },
        ts: { encoding: 'delta_binary_packed', statistics: 'chunk' },
      },
    });
    const e = await encodings(file);
    expect(e.id).toBe('PLAIN, RLE');
    expect(e.name).toContain('RLE_DICTIONARY');
    expect(e.value).toBe('PLAIN, RLE');
    const stats = await duckRowsJS(`SELECT path_in_schema AS c, bool_or(stats_min_value IS NOT NULL) AS has FROM parquet_metadata('${file}') GROUP BY ALL`);
    const has = Object.fromEntries(stats.map((s) => [String(s.c), s.has]));
    expect(has).toMatchObject({ value: false, ts: true, id: true });
  });

  it('statistics: none leaves min/max out of every column', async () => {
    const file = await exportParquet(events, { statistics: 'none' });
    const [row] = await duckRowsJS(`SELECT count(stats_min_value)::INTEGER AS n FROM parquet_metadata('${file}')`);
    expect(row!.n).toBe(0);
  });

  it('row_group_bytes ends row groups by size; row_group_size by rows', async () => {
    // The writer checks the size between batches.
    const small = events.flatMap((b) => Array.from({ length: Math.ceil(b.numRows / 1000) }, (_, i) => b.slice(i * 1000, (i + 1) * 1000)));
    const bySize = await exportParquet(small, { row_group_bytes: 64 * 1024 });
    const [a] = await duckRowsJS(`SELECT count(DISTINCT row_group_id)::INTEGER AS n, max(row_group_num_rows)::INTEGER AS most FROM parquet_metadata('${bySize}')`);
    expect(a!.n).toBeGreaterThan(2);
    const byRows = await exportParquet(events, { row_group_size: 5_000 });
    const [b] = await duckRowsJS(`SELECT count(DISTINCT row_group_id)::INTEGER AS n FROM parquet_metadata('${byRows}')`);
    expect(b!.n).toBe(ROWS / 5_000);
  });

  it('rejects bad values with the field named', () => {
    for (const [input, path] of [
      [{ compression: 'lzma' }, ['compression']],
      [{ row_group_bytes: 10 }, ['row_group_bytes']],
      [{ data_page_size: 0 }, ['data_page_size']],
      [{ dictionary: 'sometimes' }, ['dictionary']],
      [{ statistics: 'all' }, ['statistics']],
      [{ columns: { id: { encoding: 'rle' } } }, ['columns', 'id', 'encoding']],
      [{ columns: { id: { dictonary: true } } }, ['columns', 'id']],
    ] as const) {
      const result = parquet.config.safeParse(input);
      expect(result.success, JSON.stringify(input)).toBe(false);
      expect(result.error?.issues[0]?.path).toEqual(path);
    }
  });

  it('refuses a column setting that cannot apply, naming the column and what would', async () => {
    const encode = async (columns: Record<string, unknown>) => {
      const format = parquet.create(parquet.config.parse({ columns }));
      for await (const _ of format.encode(numberedSchema, numbered(10, 10))) void _;
    };
    await expect(encode({ nope: { dictionary: true } })).rejects.toThrow('format_options.columns.nope: no such column; the columns are id, name, grp');
    await expect(encode({ name: { encoding: 'delta_binary_packed' } })).rejects.toThrow(
      'format_options.columns.name.encoding: delta_binary_packed cannot encode name (Utf8); use one of plain, delta_length_byte_array, delta_byte_array',
    );
    await expect(encode({ id: { encoding: 'byte_stream_split' } })).rejects.toThrow('use one of plain, delta_binary_packed');
  });
});

describe('counting a sample\'s values for the dictionary estimate', () => {
  it('counts distinct values, and those seen once and twice, for every width of value', () => {
    const n = 1_000;
    // 50 values 18 times each, then 100 rows over 60 more values: 40 of them once, 20 twice.
    const key = (i: number) => (i < 900 ? i % 50 : 50 + (i % 60));
    const keys = Array.from({ length: n }, (_, i) => key(i));
    const expected = (() => {
      const m = new Map<number, number>();
      for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
      const counts = [...m.values()];
      return { distinct: m.size, once: counts.filter((c) => c === 1).length, twice: counts.filter((c) => c === 2).length };
    })();
    const columns = {
      int8: new Int8Array(keys.map((k) => k - 60)),
      int16: new Int16Array(keys.map((k) => k * 300 - 20_000)),
      int32: new Int32Array(keys.map((k) => k * 40_000_000 - 2e9)),
      float32: new Float32Array(keys.map((k) => k / 7)),
      int64: new BigInt64Array(keys.map((k) => BigInt(k) * 2n ** 40n - 2n ** 62n)),
      float64: new Float64Array(keys.map((k) => k / 3)),
      text: keys.map((k) => `value number ${k} ${'x'.repeat(k)}`),
    };
    const table = tableFromArrays(columns);
    const decimal = makeVector({
      type: new Decimal(4, 30, 128),
      data: new Uint32Array(keys.flatMap((k) => [k * 7, 0, k % 3, 0])),
      length: n,
    } as never);
    const decimalBatch = new RecordBatch({ decimal: decimal.data[0]! } as never) as RecordBatch;
    for (const [index, name] of Object.keys(columns).entries()) {
      const got = countValues(table.batches, index, n);
      expect({ distinct: got.distinct, once: got.once, twice: got.twice }, name).toEqual(expected);
      expect(got.values, name).toBe(n);
    }
    const got = countValues([decimalBatch], 0, n);
    expect({ distinct: got.distinct, once: got.once, twice: got.twice }).toEqual(expected);
    expect(got.rawBytes).toBe(16 * n);
    // Values of 1 to 3 bytes that are not one element each: fixed-size binary.
    for (const byteWidth of [1, 2, 3]) {
      const binary = makeVector({
        type: new FixedSizeBinary(byteWidth),
        data: new Uint8Array(keys.flatMap((k) => Array.from({ length: byteWidth }, (_, b) => (b === byteWidth - 1 ? k : 0)))),
        length: n,
      } as never);
      const counted = countValues([new RecordBatch({ binary: binary.data[0]! } as never) as RecordBatch], 0, n);
      expect({ distinct: counted.distinct, once: counted.once, twice: counted.twice }, `fixed-size binary(${byteWidth})`).toEqual(expected);
      expect(counted.rawBytes).toBe(byteWidth * n);
    }
  });

  it('skips nulls, and reads values by their type, not by the length of a buffer with room to spare', () => {
    const table = tableFromArrays({ a: [1, null, 1, null, 2] as (number | null)[] } as never) as unknown as Table;
    expect(countValues(table.batches, 0, 5)).toMatchObject({ values: 3, distinct: 2, once: 1, twice: 1 });
  });
});

describe('encodings an Iceberg table output may choose', () => {
  // Sorted URLs that share long prefixes: what DELTA_BYTE_ARRAY (prefix + suffix) was made for.
  const urls = () => {
    const values = Array.from({ length: ROWS }, (_, i) => `https://cdn.example.com/assets/2026/catalogue/items/${String(i).padStart(8, '0')}/thumbnail.png`);
    return tableFromArrays({ url: values }).batches as RecordBatch[];
  };

  it('auto picks DELTA_BYTE_ARRAY for shared prefixes, which hyparquet (icebird\'s reader) cannot read; a table output leaves it out, and hyparquet reads its file', async () => {
    const plain = await exportParquet(urls());
    expect((await encodings(plain)).url).toContain('DELTA_BYTE_ARRAY');
    const read = (file: string) => readFile(file).then((b) => parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer, compressors }));
    await expect(read(plain)).rejects.toThrow(/unsupported encoding: DELTA_BYTE_ARRAY/);

    const table = resolved({ format: 'parquet', path: '/srv/lake/t', table: 'iceberg' });
    const options = (table.formatConfig as { auto_encodings: string[] }).auto_encodings;
    expect(options).not.toContain('delta_byte_array');
    const portable = await exportParquet(urls(), { auto_encodings: options });
    expect((await encodings(portable)).url).not.toContain('DELTA_BYTE_ARRAY');
    const rows = await read(portable);
    expect(rows).toHaveLength(ROWS);
    expect(rows[ROWS - 1]).toEqual({ url: `https://cdn.example.com/assets/2026/catalogue/items/${String(ROWS - 1).padStart(8, '0')}/thumbnail.png` });
    // Set in format_options, the table output takes what it is given.
    expect(resolved({ format: 'parquet', path: '/srv/lake/t', table: 'iceberg', format_options: { auto_encodings: ['delta_byte_array'] } }).formatConfig).toMatchObject({ auto_encodings: ['delta_byte_array'] });
  });
});
