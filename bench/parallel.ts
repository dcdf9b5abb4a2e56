// One export on every core: the figures of the connector's parallel work, as ratios against
// baselines measured in the same run (the machine is shared, so absolute times are noisy).
// The service runs in a child process (its page encoding must not share this process's thread), and
// each result is read once the service has finished encoding it in the background.
// - bare JSON.parse of the same page bytes (the floor of anything that reads JSON pages), and the
//   floor of typed rows read that way (only the bigints and Dates the type table asks for, and the
//   async iteration of the rows);
// - stream() typed rows over JSON;
// - .batches() over JSON;
// - .batches() over Arrow pages, when the service serves them (else said so);
// - peak RSS of a process reading batches() at 1M and 5M rows (bounded memory: the same peak);
// - an export to zstd Parquet in parts (writeExport) over each wire and by the native path, against
//   DuckDB COPY ... TO parquet of the same rows; each case in a process of its own, with its peak
//   RSS (threads included) and how busy its main thread was.
// The processes of their own (peak RSS, exports) run the compiled JavaScript, as the installed
// package and the image do: run from the TypeScript sources, each process and thread would also
// hold Node's type stripping (some 15-20 MB). BENCH_FROM_SOURCE=1 runs them from the sources.
// `npm run bench -- parallel`; BENCH_PARALLEL_ROWS overrides 1M (the 5M runs use 5x);
// BENCH_BIG=1 repeats the exports at 5x the rows.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { ServiceClient } from '../src/client/index.ts';
import type { BatchesInput, BatchesResult, CaseInput, CaseResult } from './parallelCase.ts';
import { stream, type StreamOptions } from '../src/pipeline/stream.ts';
import type { StreamSource } from '../src/pipeline/source.ts';
import { ARROW_STREAM_MEDIA_TYPE } from '../src/protocol/index.ts';
import { sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';
import { startChildService } from './pipeline.ts';
import { runChildCase } from './childCase.ts';
import { recordFigure } from './figures.ts';

const ROWS = Number(process.env.BENCH_PARALLEL_ROWS ?? 1_000_000);
/** Figures go to docs/performance.md only from the runs its rows describe: 1M rows, compiled cases. */
const record: typeof recordFigure = (id, value) => {
  if (ROWS === 1_000_000 && process.env.BENCH_FROM_SOURCE !== '1') recordFigure(id, value);
};
/** Rows per part (max_rows_per_file) of the exports: 4 parts per million rows. */
const PART_ROWS = Math.max(1, Math.round(ROWS / 4));
const KEY = 'sk_bench_admin_key';
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const x = (n: number) => `${n.toFixed(2)}x`;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** The module the child processes run their case from (bench/parallelCase.ts, or its compiled output). */
let caseModule = new URL('./parallelCase.ts', import.meta.url).href;
/** The folder the cases were compiled into, removed at the end. */
let build: string | undefined;

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-parallel-'));
  const svc = await startChildService(dataDir, ROWS);
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: KEY });
  try {
    console.log(`${fmt(ROWS)} rows x 8 columns (sample.events); ${availableParallelism()} cores`);
    if (process.env.BENCH_FROM_SOURCE === '1') console.log('processes of their own run the TypeScript sources (BENCH_FROM_SOURCE=1)');
    else {
      build = await compileCases();
      caseModule = pathToFileURL(join(build, 'out', 'bench', 'parallelCase.js')).href;
      console.log('processes of their own run the compiled JavaScript, as the installed package and the image do');
    }
    const execution = await client.execute({ sql: 'SELECT * FROM sample.events' });
    await execution.wait();
    await encodingsSettled(dataDir);
    const source: StreamSource = { executionId: execution.id };
    // The 5x result, executed once (and its encodings settled) for the peak-RSS read and the big exports.
    let big: Promise<string> | undefined;
    const bigExecution = () =>
      (big ??= (async () => {
        const e = await client.execute({ sql: sampleEventsSelect(ROWS * 5) });
        await e.wait();
        await encodingsSettled(dataDir);
        return e.id;
      })());
    const arrowOffered = await offersArrow(svc.url, execution.id);

    const parse = await jsonParseBaseline(svc.url, execution.id);
    console.log(`baseline JSON.parse of the same bytes: ${(parse.ms / 1000).toFixed(2)} s (${mb(parse.bytes)}, ${parse.pages} pages)`);
    const floor = await typedRowsFloor(svc.url, execution.id);
    console.log(
      `floor of typed rows over JSON.parse (a bigint per bigint, a Date per timestamp with time zone, no checks; then one \`for await\` step per row): ${(floor.typedMs / 1000).toFixed(2)} s = ${x(floor.typedMs / parse.ms)}; ${(floor.awaitedMs / 1000).toFixed(2)} s = ${x(floor.awaitedMs / parse.ms)}`,
    );

    // One untimed read of each kind first: the first read of a process also compiles and warms up the
    // page readers (the generated text scanners, the decoders), which the timed reads would otherwise
    // share unevenly (the first case paying for all).
    for await (const _ of stream(client, source, { wire: 'json' }));
    for await (const _ of stream(client, source, { wire: 'json' }).batches());
    const rowsMs = await timed(async () => {
      let n = 0;
      for await (const _ of stream(client, source, { wire: 'json' })) n++;
      return n;
    });
    console.log(`stream() rows over JSON (target: at most 1.5x the JSON.parse time; after a warm-up read): ${(rowsMs / 1000).toFixed(2)} s = ${x(rowsMs / parse.ms)}`);
    record('rows-json', `${x(rowsMs / parse.ms)} the time`);
    const jsonBatchesMs = await timeBatches(client, source, { wire: 'json' });
    console.log(`.batches() over JSON, concurrency 4: ${(jsonBatchesMs / 1000).toFixed(2)} s = ${x(jsonBatchesMs / parse.ms)}`);
    record('batches-json', `${x(jsonBatchesMs / parse.ms)} the time`);
    if (arrowOffered) {
      const ms = await timeBatches(client, source, { wire: 'arrow' });
      console.log(`.batches() over Arrow: ${(ms / 1000).toFixed(2)} s = ${x(jsonBatchesMs / ms)} faster than over JSON (target >= 5x)`);
      record('batches-arrow', `${x(jsonBatchesMs / ms)} as fast`);
    } else {
      console.log('.batches() over Arrow: the service does not serve Arrow pages (it answered JSON): no figure');
    }

    // Each read in a process of its own: this one holds the baseline's page bytes. Twice each: the
    // same read peaks some 20 MB apart from one run to the next (when V8's collections fall).
    console.log('\npeak RSS of a process reading .batches() (default options), threads included, two runs each:');
    const peaks = { json: [] as string[], arrow: [] as string[] };
    for (const [label, src] of [
      [`${fmt(ROWS)}`, source],
      [`${fmt(ROWS * 5)}`, { executionId: await bigExecution() }],
    ] as const) {
      for (const wire of arrowOffered ? (['json', 'arrow'] as const) : (['json'] as const)) {
        const runs: BatchesResult[] = [];
        for (let k = 0; k < 2; k++) runs.push(await runChild<BatchesResult>('batchesCase', { url: svc.url, key: KEY, source: src, wire } satisfies BatchesInput));
        const range = (f: (r: BatchesResult) => number, show: (n: number) => string) => {
          const [lo, hi] = [Math.min(...runs.map(f)), Math.max(...runs.map(f))];
          return show(lo) === show(hi) ? show(lo) : `${show(lo)}-${show(hi)}`;
        };
        const mib = (n: number) => (n / 2 ** 20).toFixed(0);
        const peak = range((r) => r.peakRss, mib);
        const start = range((r) => r.startRss, mib);
        const secs = range((r) => r.ms, (n) => (n / 1000).toFixed(2));
        console.log(`${label.padStart(9)} rows over ${wire.padEnd(5)}: ${start} MB -> peak ${peak} MB in ${secs} s (target: peak <= 300 MB, the same at 5x the rows)`);
        peaks[wire].push(`${peak} MB`);
      }
    }
    record('batches-peak-json', peaks.json.join(' / '));
    if (arrowOffered) record('batches-peak-arrow', peaks.arrow.join(' / '));
    // Exports: each case in a process of its own (its peak RSS, threads included, is its own).
    const sizes = process.env.BENCH_BIG === '1' ? [ROWS, ROWS * 5] : [ROWS];
    // The export again under the image's memory settings (its ENV: NODE_OPTIONS, MALLOC_*).
    const image = await imageMemoryEnv();
    const settings: { label: string; env?: Record<string, string> }[] = [{ label: 'default' }, { label: "image's env", env: image }];
    for (const size of sizes) {
      console.log(`\nexport of ${fmt(size)} rows to zstd Parquet, parts of ${fmt(PART_ROWS)} rows (writeExport), vs DuckDB COPY of the same rows:`);
      const duckMs = (await duckdbCopy(dataDir, size)).ms;
      console.log(`DuckDB COPY ... TO parquet (zstd): ${(duckMs / 1000).toFixed(2)} s`);
      const id = size === ROWS ? execution.id : await bigExecution();
      console.log('wire   settings             seconds  vs DuckDB  speed-up vs json  CPU s  cores got  peak RSS  main thread busy  loop delay p99');
      const cases = new Map<string, CaseResult>();
      for (const wire of arrowOffered ? (['json', 'arrow'] as const) : (['json'] as const)) {
        for (const { label, env } of settings) {
          const r = await runCase({ url: svc.url, key: KEY, executionId: id, wire, out: join(dataDir, `export-${wire}`), rowsPerFile: PART_ROWS }, env);
          if (r.rows !== size) throw new Error(`exported ${r.rows} rows, expected ${size}`);
          cases.set(`${wire}${env === undefined ? '' : ' image'}`, r);
          const json = cases.get('json')!;
          console.log(
            `${wire.padEnd(5)}  ${label.padEnd(19)}  ${(r.ms / 1000).toFixed(2).padStart(7)}  ${x(r.ms / duckMs).padStart(9)}  ${x(json.ms / r.ms).padStart(16)}  ${(r.cpuMs / 1000).toFixed(1).padStart(5)}  ${(r.cpuMs / r.ms).toFixed(2).padStart(9)}  ${mb(r.peakRss).padStart(8)}  ${`${(r.mainBusy * 100).toFixed(0)}%`.padStart(16)}  ${`${r.loopDelayP99.toFixed(0)} ms`.padStart(14)}`,
          );
        }
      }
      // The native path over JSON pages (DuckDB writes the Parquet from them, with its own threads). Over CSV pages: bench/wire.ts.
      const native = await runCase({ url: svc.url, key: KEY, executionId: id, wire: 'native', native: 'json', out: join(dataDir, 'export-native'), rowsPerFile: PART_ROWS });
      if (native.rows !== size) throw new Error(`exported ${native.rows} rows natively, expected ${size}`);
      const json = cases.get('json')!;
      console.log(
        `native (DuckDB)              ${(native.ms / 1000).toFixed(2).padStart(7)}  ${x(native.ms / duckMs).padStart(9)}  ${x(json.ms / native.ms).padStart(16)}  ${(native.cpuMs / 1000).toFixed(1).padStart(5)}  ${(native.cpuMs / native.ms).toFixed(2).padStart(9)}  ${mb(native.peakRss).padStart(8)}`,
      );
      if (size === ROWS) {
        recordExports(cases, duckMs);
        record('export-native-duckdb', `${x(native.ms / duckMs)} the time`);
        record('export-native', `${x(json.ms / native.ms)} as fast`);
        // Bounded memory: the same export of 5x the rows peaks as high.
        const big = await runCase({ url: svc.url, key: KEY, executionId: await bigExecution(), wire: 'native', native: 'json', out: join(dataDir, 'export-native-big'), rowsPerFile: PART_ROWS });
        if (big.rows !== size * 5) throw new Error(`exported ${big.rows} rows natively, expected ${size * 5}`);
        console.log(`native export of ${fmt(size * 5)} rows: ${(big.ms / 1000).toFixed(2)} s, peak RSS ${mb(big.peakRss)} (target <= 300 MB)`);
        record('export-native-peak', `${mb(native.peakRss)} / ${mb(big.peakRss)}`);
      }
    }
    console.log('targets: within 5x DuckDB COPY; peak RSS <= 300 MB and the same at 5x the rows');
    console.log(`"image's env": ${Object.entries(image).map(([k, v]) => `${k}=${v}`).join(' ')}, as the Dockerfile sets them`);
    console.log('"cores got": CPU time of the export process (all its threads) over its wall time; the service process and other programs share the same cores');
  } finally {
    await client.close();
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
    if (build !== undefined) await rm(build, { recursive: true, force: true });
  }
}

/**
 * Compiles the sources and bench/parallelCase.ts as `npm run build` does (its tsconfig) into a
 * folder of their own under .sluice/ (inside the checkout, so that their imports find
 * node_modules), which it returns. A type error stops the bench, as it stops
 * the build.
 */
export async function compileCases(): Promise<string> {
  await mkdir(join(ROOT, '.sluice'), { recursive: true });
  const folder = await mkdtemp(join(ROOT, '.sluice', 'bench-parallel-'));
  const config = join(folder, 'tsconfig.json');
  const settings = {
    extends: join(ROOT, 'tsconfig.build.json'),
    compilerOptions: { outDir: join(folder, 'out'), rootDir: ROOT, declaration: false },
    include: [join(ROOT, 'src'), join(ROOT, 'connectors'), join(ROOT, 'bench', 'parallelCase.ts')],
  };
  await writeFile(config, JSON.stringify(settings));
  try {
    await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], { cwd: ROOT, maxBuffer: 64 << 20 });
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    // tsc prints its diagnostics on stdout.
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`compiling the bench's cases failed (BENCH_FROM_SOURCE=1 runs them from the sources):\n${stdout}${stderr}`);
  }
  return folder;
}

/** The export figures of docs/performance.md, from the cases at 1M rows (`wire[ image]`). */
function recordExports(cases: ReadonlyMap<string, CaseResult>, duckMs: number): void {
  const json = cases.get('json')!;
  const jsonImage = cases.get('json image')!;
  record('export-json-duckdb', `${x(json.ms / duckMs)} the time`);
  record('export-peak-json', `${mb(json.peakRss)} / ${mb(jsonImage.peakRss)}`);
  record('export-time-image', `${x(jsonImage.ms / json.ms)} the time`);
  const arrow = cases.get('arrow');
  if (arrow === undefined) return;
  record('export-arrow-duckdb', `${x(arrow.ms / duckMs)} the time`);
  record('export-arrow', `${x(json.ms / arrow.ms)} as fast`);
  record('export-peak-arrow', `${mb(arrow.peakRss)} / ${mb(cases.get('arrow image')!.peakRss)}`);
}

async function timed(f: () => Promise<number>): Promise<number> {
  const t = performance.now();
  const n = await f();
  const ms = performance.now() - t;
  if (n !== ROWS) throw new Error(`expected ${ROWS} rows, got ${n}`);
  return ms;
}

function timeBatches(client: ServiceClient, source: StreamSource, options: StreamOptions): Promise<number> {
  return timed(async () => {
    let n = 0;
    for await (const b of stream(client, source, options).batches()) n += b.numRows;
    return n;
  });
}

/** One export in a child process (bench/parallelCase.ts): its time, peak RSS and how busy its main thread was. */
function runCase(input: CaseInput, env?: Record<string, string>): Promise<CaseResult> {
  return runChild<CaseResult>('exportCase', input, env);
}

/** The memory settings of the image: the NODE_OPTIONS and MALLOC_* variables of the Dockerfile's ENV. */
async function imageMemoryEnv(): Promise<Record<string, string>> {
  const text = (await readFile(join(ROOT, 'Dockerfile'), 'utf8')).replace(/\\\n/g, ' ');
  const env: Record<string, string> = {};
  for (const line of text.split('\n').filter((l) => /^ENV\s/.test(l))) {
    for (const [, k, v] of line.matchAll(/\b([A-Z_][A-Z0-9_]*)=(\S+)/g)) if (k === 'NODE_OPTIONS' || k!.startsWith('MALLOC_')) env[k!] = v!;
  }
  return env;
}

/** A function of bench/parallelCase.ts in a child process: the JSON of the last line it prints. */
function runChild<T>(name: string, input: object, env?: Record<string, string>): Promise<T> {
  return runChildCase<T>(caseModule, name, input, env);
}

/** DuckDB's own COPY of the same rows from a table to zstd Parquet (default threads: one per core), its time and CPU. */
export async function duckdbCopy(dir: string, rows: number): Promise<{ ms: number; cpuMs: number }> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`CREATE TABLE events AS ${sampleEventsSelect(rows)}`);
    const file = join(dir, 'duckdb.parquet');
    const cpu = process.cpuUsage();
    const t = performance.now();
    await connection.run(`COPY events TO '${file}' (FORMAT parquet, COMPRESSION zstd)`);
    const ms = performance.now() - t;
    const used = process.cpuUsage(cpu);
    await rm(file, { force: true });
    return { ms, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/**
 * Waits until the local service has written every encoding of its results (JSON, CSV and Arrow;
 * the bench's service encodes them as an execution's last step): until then it spends a core the client's
 * figures would be measured against, which a real service, on machines of its own, does not.
 */
export async function encodingsSettled(dataDir: string): Promise<void> {
  const results = join(dataDir, 'engine', 'results');
  const deadline = performance.now() + 300_000;
  for (;;) {
    const names = await readdir(results);
    const encoded = names.filter((n) => n.endsWith('.enc'));
    // Each format's directory is whole once its info.json is written (last).
    const whole = encoded.flatMap((n) => ['json', 'csv', 'arrow'].map((format) => exists(join(results, n, format, 'info.json'))));
    if (encoded.length > 0 && (await Promise.all(whole)).every(Boolean)) return;
    if (performance.now() > deadline) throw new Error(`the service's encodings under ${results} did not settle in 5 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function offersArrow(url: string, executionId: string): Promise<boolean> {
  const res = await fetch(`${url}/v1/execution/${executionId}/results?limit=1`, { headers: { 'X-Service-Api-Key': KEY, accept: ARROW_STREAM_MEDIA_TYPE } });
  await res.arrayBuffer();
  return (res.headers.get('content-type') ?? '').startsWith(ARROW_STREAM_MEDIA_TYPE);
}

async function jsonParseBaseline(url: string, executionId: string) {
  let offset: number | undefined = 0;
  let ms = 0;
  let bytes = 0;
  let pages = 0;
  while (offset !== undefined) {
    const res = await fetch(`${url}/v1/execution/${executionId}/results?offset=${offset}`, { headers: { 'X-Service-Api-Key': KEY } });
    const text = await res.text();
    const t = performance.now();
    const page = JSON.parse(text) as { next_offset?: number };
    ms += performance.now() - t;
    bytes += Buffer.byteLength(text);
    pages++;
    offset = page.next_offset;
  }
  return { ms, bytes, pages };
}

/**
 * What typed rows cost at least when read with JSON.parse: each page parsed, then only the values
 * whose JS type differs from JSON's made (bigint columns as bigint; timestamps with time zone, in
 * the service's canonical text, as Date, read at fixed positions with no checks), then each row
 * handed out through an async iterator as `for await` reads it. Page by page; fetching not timed.
 */
async function typedRowsFloor(url: string, executionId: string) {
  let offset: number | undefined = 0;
  let typedMs = 0;
  let awaitedMs = 0;
  const digits = (s: string, from: number, to: number) => {
    let n = 0;
    for (let i = from; i < to; i++) n = n * 10 + s.charCodeAt(i) - 48;
    return n;
  };
  const date = (s: string) => new Date(Date.UTC(digits(s, 0, 4), digits(s, 5, 7) - 1, digits(s, 8, 10), digits(s, 11, 13), digits(s, 14, 16), digits(s, 17, 19)) + digits(s, 20, 23));
  type Page = { next_offset?: number; result: { rows: Record<string, unknown>[]; metadata: { column_names: string[]; column_types: string[] } } };
  const typedRows = function* (page: Page) {
    const { column_names: names, column_types: types } = page.result.metadata;
    const bigints = names.filter((_, i) => types[i] === 'bigint');
    const stamps = names.filter((_, i) => /^timestamp(\(\d+\))? with time zone$/.test(types[i]!));
    for (const row of page.result.rows) {
      for (const n of bigints) if (row[n] != null) row[n] = BigInt(row[n] as number);
      for (const n of stamps) if (row[n] != null) row[n] = date(row[n] as string);
      yield row;
    }
  };
  while (offset !== undefined) {
    const res = await fetch(`${url}/v1/execution/${executionId}/results?offset=${offset}`, { headers: { 'X-Service-Api-Key': KEY } });
    const text = await res.text();
    let t = performance.now();
    let page = JSON.parse(text) as Page;
    for (const _ of typedRows(page));
    typedMs += performance.now() - t;
    t = performance.now();
    page = JSON.parse(text) as Page;
    const rows = typedRows(page);
    const cursor = { next: () => Promise.resolve(rows.next()), [Symbol.asyncIterator]: () => cursor };
    for await (const _ of cursor);
    awaitedMs += performance.now() - t;
    offset = page.next_offset;
  }
  return { typedMs, awaitedMs };
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
