// Sinks benchmark: rows/s and peak RSS per format, to local disk and to a local S3 (fauxqs in a
// process of its own, objects stored on disk, so its memory is not counted as the writer's).
// 1M rows x 8 columns; BENCH_BIG=1 adds 5M. Each case runs in a fresh process, so its peak RSS is
// its own. Baseline: generating the same batches and discarding them, measured in the same run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Bool, DateDay, Decimal, Field, Float64, Int32, Int64, makeData, RecordBatch, Schema, Struct, TimeUnit, Timestamp, Utf8, vectorFromArray,
} from 'apache-arrow';
import { builtins } from '../connectors/index.ts';
import { resolveOutput, writeExport } from '../src/export/index.ts';
import { fileTableStorage, s3TableStorage, writeIcebergTable } from '../src/export/iceberg/index.ts';
import { parquet } from '../connectors/formats/parquet/index.ts';
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

type Case = { rows: number; format?: (typeof FORMATS)[number]; path?: string; endpoint?: string; iceberg?: boolean };
type Result = { seconds: number; peakRssMb: number; bytes: number };

/** One case, in this process: the child side of run(). Prints its result as one JSON line. */
export async function runCase(c: Case): Promise<void> {
  let bytes = 0;
  const m = await measure(async () => {
    if (c.format === undefined || c.path === undefined) {
      for await (const _ of generate(c.rows)) void _;
      return;
    }
    if (c.iceberg) {
      // The same Parquet files, committed as an Iceberg table (manifest, manifest list, vN.metadata.json).
      const client = c.endpoint ? new S3Client({ endpoint: c.endpoint, region: 'us-east-1', forcePathStyle: true }) : undefined;
      const storage = client ? s3TableStorage(client, { bucket: 'bench', prefix: c.path.replace(/^s3:\/\/bench\//, '') }) : fileTableStorage(c.path);
      const summary = await writeIcebergTable(
        { schema, batches: generate(c.rows), meta: { executionId: `bench-${c.rows}`, totalRowCount: c.rows } },
        { storage, format: parquet.create(parquet.config.parse('format_options' in c.format ? c.format.format_options : {})), mode: 'append' },
      );
      client?.destroy();
      bytes = summary.bytes;
      return;
    }
    const summary = await writeExport(
      { schema, batches: generate(c.rows), meta: { executionId: `bench-${c.rows}`, totalRowCount: c.rows } },
      resolveOutput({ ...c.format, path: c.path, ...(c.endpoint ? { s3: { endpoint: c.endpoint, region: 'us-east-1' } } : {}) }, builtins),
    );
    bytes = summary.bytes;
  });
  console.log(JSON.stringify({ ...m, bytes } satisfies Result));
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
  } finally {
    s3.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en').padStart(10);
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
