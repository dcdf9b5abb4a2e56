// Sinks benchmark: rows/s and peak RSS per format, to local disk and to a local S3 (fauxqs in a
// process of its own, objects stored on disk, so its memory is not counted as the writer's).
// 1M rows x 8 columns; BENCH_BIG=1 adds 5M. Each case runs in a fresh process, so its peak RSS is
// its own. Baseline: generating the same batches and discarding them, measured in the same run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Bool, DateDay, Decimal, Field, Float64, Int32, Int64, makeData, RecordBatch, Schema, Struct, TimeUnit, Timestamp, Utf8, vectorFromArray,
} from 'apache-arrow';
import { builtins } from '../connectors/index.ts';
import { resolveOutput, writeExport } from '../src/export/index.ts';
import { sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

const BATCH = 65_536;

const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('ts', new Timestamp(TimeUnit.MICROSECOND, 'UTC'), false),
  new Field('amount', new Decimal(2, 18, 128), false),
  new Field('price', new Float64(), false),
  new Field('qty', new Int32(), false),
  new Field('name', new Utf8(), false),
  new Field('flag', new Bool(), false),
  new Field('day', new DateDay(), false),
]);

/** Batches made one at a time, so the generator never holds the whole result. */
async function* generate(rows: number): AsyncIterable<RecordBatch> {
  for (let start = 0; start < rows; start += BATCH) {
    const n = Math.min(BATCH, rows - start);
    const id = new BigInt64Array(n);
    const ts = new BigInt64Array(n);
    const amount = new Uint32Array(n * 4);
    const price = new Float64Array(n);
    const qty = new Int32Array(n);
    const names: string[] = new Array(n);
    const flags: boolean[] = new Array(n);
    const day = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const r = start + i;
      id[i] = BigInt(r) + 9_007_199_254_740_993n;
      ts[i] = 1_700_000_000_000_000n + BigInt(r) * 1_000n;
      amount[i * 4] = (r * 7919) % 1_000_000;
      price[i] = r * 0.25;
      qty[i] = r % 1000;
      names[i] = `customer-${r % 50_000}`;
      flags[i] = (r & 1) === 0;
      day[i] = 19_700 + (r % 365);
    }
    const children = [
      makeData({ type: new Int64(), length: n, nullCount: 0, data: id }),
      makeData({ type: new Timestamp(TimeUnit.MICROSECOND, 'UTC'), length: n, nullCount: 0, data: ts }),
      makeData({ type: new Decimal(2, 18, 128), length: n, nullCount: 0, data: amount }),
      makeData({ type: new Float64(), length: n, nullCount: 0, data: price }),
      makeData({ type: new Int32(), length: n, nullCount: 0, data: qty }),
      vectorFromArray(names, new Utf8()).data[0]!,
      vectorFromArray(flags, new Bool()).data[0]!,
      makeData({ type: new DateDay(), length: n, nullCount: 0, data: day }),
    ];
    yield new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children }));
  }
}

async function measure(run: () => Promise<unknown>): Promise<{ seconds: number; peakRssMb: number }> {
  globalThis.gc?.();
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  const started = performance.now();
  try {
    await run();
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, process.memoryUsage.rss());
  return { seconds: (performance.now() - started) / 1000, peakRssMb: peak / 2 ** 20 };
}

const FORMATS = [
  { format: 'csv' },
  { format: 'ndjson' },
  { format: 'arrow' },
  { format: 'parquet', format_options: { compression: 'snappy' } },
  { format: 'parquet', format_options: { compression: 'zstd' } },
] as const;

type Case = { rows: number; format?: (typeof FORMATS)[number]; path?: string; endpoint?: string; iceberg?: boolean; sizes?: SizeCase; partitioned?: boolean };
type Result = { seconds: number; peakRssMb: number; bytes: number; files?: number; mostPerPartition?: number };

/** One case, in this process: the child side of run(). Prints its result as one JSON line. */
export async function runCase(c: Case): Promise<void> {
  if (c.sizes) return runSizes(c.sizes);
  let bytes = 0;
  let files = 0;
  let mostPerPartition = 0;
  const m = await measure(async () => {
    if (c.format === undefined || c.path === undefined) {
      for await (const _ of generate(c.rows)) void _;
      return;
    }
    const summary = await writeExport(
      { schema, batches: generate(c.rows), meta: { executionId: `bench-${c.rows}`, totalRowCount: c.rows } },
      resolveOutput(
        {
          ...c.format,
          path: c.path,
          ...(c.endpoint ? { s3: { endpoint: c.endpoint, region: 'us-east-1' } } : {}),
          ...(c.partitioned ? { partition_by: ['day'], max_open_files: 16 } : {}),
          // The same Parquet files committed as an Iceberg table (manifest, manifest list, vN.metadata.json), as a job does.
          ...(c.iceberg ? { table: 'iceberg' } : {}),
        },
        builtins,
      ),
    );
    bytes = summary.bytes;
    files = summary.files.length;
    const per = new Map<string, number>();
    for (const f of summary.files) per.set(f.path.split('/')[0]!, (per.get(f.path.split('/')[0]!) ?? 0) + 1);
    mostPerPartition = Math.max(...per.values());
  });
  console.log(JSON.stringify({ ...m, bytes, files, mostPerPartition } satisfies Result));
}

function inChild(c: Case): Result {
  const script = `const m = await import(${JSON.stringify(import.meta.url)}); await m.runCase(${JSON.stringify(c)});`;
  const out = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', env: s3Env() });
  if (out.status !== 0) throw new Error(`bench case ${JSON.stringify(c)} failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '') as Result;
}

function s3Env(): NodeJS.ProcessEnv {
  return { AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1', ...process.env };
}

/** fauxqs on 127.0.0.1 in a child process; resolves with its endpoint once it listens. */
async function startS3Process(storageDir: string): Promise<{ endpoint: string; stop(): void }> {
  const script = `import { startFauxqs } from 'fauxqs'; const s = await startFauxqs({ port: 0, logger: false, s3StorageDir: ${JSON.stringify(storageDir)} }); console.log('port=' + s.port);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      const m = /port=(\d+)/.exec(text);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`fauxqs exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

export async function run(): Promise<void> {
  await parquetSizes();
  const sizes = process.env.BENCH_BIG === '1' ? [1_000_000, 5_000_000] : [1_000_000];
  const scratch = await mkdtemp(join(tmpdir(), 'sluice-bench-sinks-'));
  const s3 = await startS3Process(join(scratch, 's3'));
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
  client.destroy();
  try {
    for (const rows of sizes) {
      const base = inChild({ rows });
      const baseRate = rows / base.seconds;
      console.log(`\nsinks: ${rows.toLocaleString('en')} rows x 8 columns, batches of ${BATCH}, each case in a fresh process`);
      console.log(`  baseline (generate only)      ${fmt(baseRate)} rows/s   peak RSS ${base.peakRssMb.toFixed(0)} MB`);
      const plainParquet = new Map<string, number>();
      for (const f of FORMATS) {
        for (const target of ['disk', 's3'] as const) {
          const label = `${f.format}${'format_options' in f ? `/${f.format_options.compression}` : ''} -> ${target}`;
          const path = target === 'disk' ? join(scratch, `${label.replace(/\W+/g, '-')}-${rows}`) : `s3://bench/${label.replace(/\W+/g, '-')}-${rows}`;
          const m = inChild({ rows, format: f, path, ...(target === 's3' ? { endpoint: s3.endpoint } : {}) });
          const rate = rows / m.seconds;
          console.log(
            `  ${label.padEnd(28)}  ${fmt(rate)} rows/s  ${(m.bytes / 2 ** 20 / m.seconds).toFixed(1).padStart(6)} MB/s  ` +
              `${(m.bytes / 2 ** 20).toFixed(1).padStart(7)} MB  peak RSS ${m.peakRssMb.toFixed(0)} MB  (${(rate / baseRate).toFixed(2)}x baseline)`,
          );
          if (label.startsWith('parquet/snappy')) plainParquet.set(target, m.seconds);
          if (target === 'disk') await rm(path, { recursive: true, force: true });
        }
      }
      // Iceberg commit overhead: the same rows as parquet/snappy, committed as an Iceberg table.
      for (const target of ['disk', 's3'] as const) {
        const label = `iceberg parquet/snappy -> ${target}`;
        const path = target === 'disk' ? join(scratch, `iceberg-${rows}`) : `s3://bench/iceberg-${rows}`;
        const f = FORMATS.find((x) => x.format === 'parquet')!;
        const m = inChild({ rows, format: f, path, iceberg: true, ...(target === 's3' ? { endpoint: s3.endpoint } : {}) });
        const plain = plainParquet.get(target)!;
        console.log(
          `  ${label.padEnd(28)}  ${fmt(rows / m.seconds)} rows/s  ${(m.bytes / 2 ** 20).toFixed(1).padStart(7)} MB  peak RSS ${m.peakRssMb.toFixed(0)} MB  ` +
            `(${(m.seconds / plain).toFixed(2)}x the time of plain parquet/snappy -> ${target})`,
        );
        if (target === 'disk') await rm(path, { recursive: true, force: true });
      }
    }
    // Partitioned by day: 365 partitions cycling row by row (the worst arrival order) into
    // max_open_files: 16, against the same rows unpartitioned, same format, same run.
    const rows = 1_000_000;
    const format = { format: 'parquet', format_options: { compression: 'zstd' } } as const;
    const flat = inChild({ rows, format, path: join(scratch, 'flat') });
    const parted = inChild({ rows, format, path: join(scratch, 'parted'), partitioned: true });
    console.log(`\npartitioned: ${rows.toLocaleString('en')} rows into 365 day partitions (interleaved row by row), max_open_files 16, parquet/zstd`);
    for (const [label, m] of [['unpartitioned (baseline)', flat], ['partition_by: [day]', parted]] as const) {
      console.log(
        `  ${label.padEnd(26)} ${fmt(rows / m.seconds)} rows/s  ${m.files} files (at most ${m.mostPerPartition} per partition)  ` +
          `peak RSS ${m.peakRssMb.toFixed(0)} MB  (${(flat.seconds / m.seconds).toFixed(2)}x baseline rate)`,
      );
    }
  } finally {
    s3.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

// Parquet size per format option set against DuckDB's own writer on the same rows, same run.
// The rows: sample.events (the service's generated table, same SELECT) and a wide table of hex
// strings (transaction hashes, addresses drawn at random from pools of 50 to 200,000, 32-byte
// topics, payloads) as users of the service export most. DuckDB generates them and writes its
// zstd reference; the same rows go to sluice's writer as Arrow batches of 65,536 rows, each
// option set through writeExport to disk, timed (the batches are in memory before the clock starts).

const HEX_ROWS = Number(process.env.BENCH_HEX_ROWS ?? 250_000);
const SIZE_ROUNDS = Number(process.env.BENCH_SIZE_ROUNDS ?? 3);

function hexSelect(rows: number): string {
  const address = (seed: string, k: number, pool: number) => `'0x' || left(sha256('${seed}' || (hash(i, ${k}) % ${pool})::VARCHAR), 40)`;
  return `SELECT i AS block_number,
  TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_microseconds(i * 80000) AS block_time,
  '0x' || sha256('tx' || i::VARCHAR) AS tx_hash,
  '0x' || sha256('block' || (i // 150)::VARCHAR) AS block_hash,
  ${address('from', 1, 20_000)} AS from_address,
  ${address('to', 2, 200_000)} AS to_address,
  ${address('token', 3, 50)} AS token_address,
  '0x' || sha256('topic' || (hash(i, 4) % 7)::VARCHAR) AS topic0,
  '0x' || sha256('t1-' || i::VARCHAR) AS topic1,
  '0x' || sha256('t2-' || i::VARCHAR) AS topic2,
  '0x' || sha256('d1-' || i::VARCHAR) || sha256('d2-' || i::VARCHAR) AS data,
  (hash(i, 5) % 300)::INTEGER AS log_index
FROM range(${rows}) t(i)`;
}

const PARQUET_OPTION_SETS: { label: string; options: Record<string, unknown> }[] = [
  { label: 'default (zstd, encodings chosen per column)', options: {} },
  { label: 'snappy', options: { compression: 'snappy' } },
  { label: 'gzip', options: { compression: 'gzip' } },
  { label: 'zstd, dictionary: true (every column)', options: { dictionary: true } },
  { label: 'zstd, dictionary: false', options: { dictionary: false } },
  { label: 'before: snappy, dictionary everywhere', options: { compression: 'snappy', dictionary: true } },
];

type SizeCase = { name: string; sql: string; rows: number; dir: string };
type SizeResult = { label: string; bytes: number; seconds: number };

/** Child side: DuckDB's reference file, then every option set, one JSON line each. */
async function runSizes(c: SizeCase): Promise<void> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const wasm = await import('parquet-wasm');
  const { tableFromIPC } = await import('apache-arrow');
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const reference = join(c.dir, `${c.name}-duckdb.parquet`);
  const source = join(c.dir, `${c.name}-source.parquet`);
  await con.run(`CREATE TABLE t AS ${c.sql}`);
  await con.run(`COPY t TO '${source}' (FORMAT parquet, COMPRESSION uncompressed)`);
  const wasmTable = wasm.readParquet(await readFile(source), { batchSize: BATCH });
  const table = tableFromIPC(wasmTable.intoIPCStream());
  async function* batches(): AsyncIterable<RecordBatch> {
    for (const b of table.batches) yield b;
  }
  // Warm-up (JIT, wasm instance), not measured: otherwise the first option set pays for it.
  const warm = join(c.dir, `${c.name}-warm-up`);
  await writeExport({ schema: table.schema, batches: batches(), meta: { executionId: `bench-${c.name}` } }, resolveOutput({ format: 'parquet', format_options: { compression: 'zstd' }, path: warm }, builtins));
  await rm(warm, { recursive: true, force: true });
  // Every writer runs SIZE_ROUNDS times, the rounds interleaved, and reports its median time: on a
  // shared machine one stall during a single timed write would otherwise decide a ratio.
  const times = new Map<string, { bytes: number; seconds: number[] }>();
  const timed = (label: string, bytes: number, seconds: number) => {
    const t = times.get(label) ?? { bytes, seconds: [] };
    t.seconds.push(seconds);
    times.set(label, t);
  };
  const duckLabel = 'DuckDB COPY (FORMAT parquet, COMPRESSION zstd)';
  for (let round = 0; round < SIZE_ROUNDS; round++) {
    let started = performance.now();
    await con.run(`COPY t TO '${reference}' (FORMAT parquet, COMPRESSION zstd)`);
    timed(duckLabel, (await stat(reference)).size, (performance.now() - started) / 1000);
    for (const set of PARQUET_OPTION_SETS) {
      const path = join(c.dir, `${c.name}-${PARQUET_OPTION_SETS.indexOf(set)}`);
      globalThis.gc?.();
      started = performance.now();
      const summary = await writeExport({ schema: table.schema, batches: batches(), meta: { executionId: `bench-${c.name}`, totalRowCount: c.rows } }, resolveOutput({ format: 'parquet', format_options: set.options, path }, builtins));
      timed(set.label, summary.bytes, (performance.now() - started) / 1000);
      await rm(path, { recursive: true, force: true });
    }
  }
  con.closeSync();
  db.closeSync();
  for (const [label, t] of times) {
    const sorted = [...t.seconds].sort((a, b) => a - b);
    console.log(JSON.stringify({ label, bytes: t.bytes, seconds: sorted[Math.floor(sorted.length / 2)]! } satisfies SizeResult));
  }
}

export async function parquetSizes(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-parquet-'));
  try {
    for (const [name, rows, sql, what] of [
      ['events', 1_000_000, sampleEventsSelect(1_000_000), 'sample.events, 8 columns'],
      ['hex', HEX_ROWS, hexSelect(HEX_ROWS), 'hex strings, 12 columns (hashes, addresses, topics)'],
    ] as const) {
      const script = `const m = await import(${JSON.stringify(import.meta.url)}); await m.runCase(${JSON.stringify({ rows, sizes: { name, sql, rows, dir } } satisfies Case)});`;
      const out = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 1 << 24 });
      if (out.status !== 0) throw new Error(`parquet size case ${name} failed: ${out.stderr}`);
      const results = out.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as SizeResult);
      const duck = results[0]!;
      console.log(`\nparquet size: ${rows.toLocaleString('en')} rows of ${what}; bytes against DuckDB's zstd file of the same rows, same run; rates are medians of ${SIZE_ROUNDS} interleaved rounds`);
      for (const r of results) {
        const rate = rows / r.seconds;
        console.log(
          `  ${r.label.padEnd(48)} ${(r.bytes / 2 ** 20).toFixed(2).padStart(8)} MiB  ${(r.bytes / duck.bytes).toFixed(2).padStart(5)}x DuckDB  ` +
            `${fmt(rate)} rows/s  (${(rate / (rows / duck.seconds)).toFixed(2)}x DuckDB's rate)`,
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en').padStart(10);
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
