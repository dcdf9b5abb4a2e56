// The wires of the real service (JSON and CSV pages, no Arrow) read at DuckDB's speed: the native
// export (src/export/nativeExport.ts) against DuckDB's own `COPY ... TO parquet` of the same rows,
// measured in the same run. Figures:
// - the native export to zstd Parquet over CSV pages (the default: asked for in zstd and handed to
//   DuckDB as received), over CSV pages uncompressed (the client's `compression: off`, as before
//   pages were kept in zstd) and over JSON pages, and the general path over JSON pages (JS decoders,
//   one thread), each in a process of its own (compiled, as parallel.ts runs them): time and CPU
//   against COPY's, peak RSS; over CSV pages at 5x the rows too (bounded memory);
// - the floor of any reader of the CSV or JSON pages with DuckDB (bench/readerFloor.ts): the pages already on
//   disk read by one plain typed statement into Parquet, with 1 and 2 threads, against COPY; and by
//   the native path's own statement (its columns as text, checked and cast);
// - the native export over CSV pages with 1 and 2 DuckDB threads (the service shares the cores
//   here; docs/performance.md has the run with the service pinned to a core of its own);
// - at 50 ms of latency per request (the service's `faults`): the official TypeScript client
//   reading the whole result against stream() rows over JSON pages, each cold in a process of its
//   own (until December 2026 stream() read in the bench's own process, cold there too);
// - over a simulated 100 Mbit/s link with a 50 ms round trip (bench/linkProxy.ts): the native
//   export against the bare compressed download of the same CSV pages (4 at a time, zstd).
// `npm run bench -- wire`; BENCH_WIRE_ROWS overrides 1M. BENCH_WIRE_LINK=N runs the link case
// alone, N times (the median last): for comparing two versions of the native path run by run.
// BENCH_WIRE_OFFICIAL=N runs the official client's case alone, N times over N results (the two
// reads taking turns at going first, each run printed, the medians last). Both reads of that case
// run cold, each in a process of its own (bench/rowsCase.ts, bench/linkCase.ts): a user's first
// read is cold too.
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ServiceClient } from '../src/client/index.ts';
import type { NativeMode } from '../src/export/nativeExport.ts';
import { stream } from '../src/pipeline/stream.ts';
import { sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';
import { runChildCase } from './childCase.ts';
import { readerFloor } from './readerFloor.ts';
import { recordFigure } from './figures.ts';
import { bare, startProxy } from './link.ts';
import type { OfficialInput } from './linkCase.ts';
import { compileCases, duckdbCopy, encodingsSettled } from './parallel.ts';
import type { CaseInput, CaseResult } from './parallelCase.ts';
import { startChildService } from './pipeline.ts';

const ROWS = Number(process.env.BENCH_WIRE_ROWS ?? 1_000_000);
/** Runs of the link case alone (undefined: every case once). */
const LINK_RUNS = process.env.BENCH_WIRE_LINK === undefined ? undefined : Math.max(1, Number(process.env.BENCH_WIRE_LINK));
/** Runs of the official client's case alone (undefined: every case once). */
const OFFICIAL_RUNS = process.env.BENCH_WIRE_OFFICIAL === undefined ? undefined : Math.max(1, Number(process.env.BENCH_WIRE_OFFICIAL));
const KEY = 'sk_bench_admin_key';
const record: typeof recordFigure = (id, value) => {
  if (ROWS === 1_000_000) recordFigure(id, value);
};
const x = (n: number) => `${n.toFixed(2)}x`;
const secs = (ms: number) => (ms / 1000).toFixed(2);
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-wire-'));
  const svc = await startChildService(dataDir, ROWS);
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: KEY, env: {} });
  // The official client's case alone needs no compiled cases (its reads run from the sources).
  const build = OFFICIAL_RUNS === undefined ? await compileCases() : undefined;
  const caseModule = build === undefined ? '' : pathToFileURL(join(build, 'out', 'bench', 'parallelCase.js')).href;
  try {
    console.log(`${fmt(ROWS)} rows x 8 columns (sample.events); ${availableParallelism()} cores; the service in a process of its own on the same cores`);
    const id = await executed(client, sampleEventsSelect(ROWS), dataDir, svc.url);
    const exportCase = async (label: string, executionId: string, native: NativeMode | undefined, compression?: CaseInput['compression']) => {
      const input: CaseInput = {
        url: svc.url,
        key: KEY,
        executionId,
        wire: native === undefined ? 'json' : 'native',
        ...(native === undefined ? {} : { native }),
        out: join(dataDir, `out-${label}`),
        rowsPerFile: Math.max(1, Math.round(ROWS / 4)),
        ...(compression === undefined ? {} : { compression }),
      };
      const r = await runChildCase<CaseResult>(caseModule, 'exportCase', input);
      if (r.rows !== (executionId === id ? ROWS : ROWS * 5)) throw new Error(`${label}: exported ${r.rows} rows`);
      return r;
    };
    if (OFFICIAL_RUNS !== undefined) {
      await officialRuns(svc, OFFICIAL_RUNS, id, () => executed(client, sampleEventsSelect(ROWS), dataDir, svc.url));
      return;
    }
    const pageSize = (await stream(client, { executionId: id }).info()).pageSize;
    if (LINK_RUNS === undefined) await everyCase(svc, client, id, pageSize, dataDir, exportCase);

    const proxy = await startProxy(svc.url, { bitsPerSecond: 1e8, rttMs: 50 });
    try {
      const ratios: number[] = [];
      for (let k = 0; k < (LINK_RUNS ?? 1); k++) ratios.push(await linkCase(proxy.url, id, pageSize, dataDir, caseModule));
      if (LINK_RUNS !== undefined) console.log(`median of ${ratios.length} runs: ${x(ratios.sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!)} the time`);
    } finally {
      await proxy.close();
    }
  } finally {
    await client.close();
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
    if (build !== undefined) await rm(build, { recursive: true, force: true });
  }
}

type ExportCase = (label: string, executionId: string, native: NativeMode | undefined, compression?: CaseInput['compression']) => Promise<CaseResult>;

/** Every case but the link's: the exports on loopback against COPY, and the official client at 50 ms per request. */
async function everyCase(svc: Faulty, client: ServiceClient, id: string, pageSize: number, dataDir: string, exportCase: ExportCase): Promise<void> {
  const copy = await duckdbCopy(dataDir, ROWS);
  console.log(`\nDuckDB COPY ... TO parquet (zstd) of the same rows: ${secs(copy.ms)} s, CPU ${secs(copy.cpuMs)} s`);
  for (const pages of ['csv', 'json'] as const) {
    const floors = await readerFloor(svc.url, KEY, id, ROWS, pageSize, dataDir, pages);
    const what = pages === 'csv' ? 'CSV pages (zstd, on disk)' : "JSON pages' rows arrays (on disk)";
    for (const f of floors) {
      const how = f.read === 'plain' ? 'the floor: DuckDB reading' : "the native path's own statement (checks and casts) reading";
      console.log(`${how} the same ${what} to Parquet, ${f.threads} thread(s): ${secs(f.ms)} s = ${x(f.ms / copy.ms)} COPY, CPU ${secs(f.cpuMs)} s = ${x(f.cpuMs / copy.cpuMs)}`);
    }
    for (const read of ['plain', 'checked'] as const) {
      const of = floors.filter((f) => f.read === read);
      record(`wire-${pages}-${read === 'plain' ? 'floor' : 'checked'}`, of.map((f) => `${x(f.ms / copy.ms)}`).join(' / ') + ` the time (CPU ${of.map((f) => x(f.cpuMs / copy.cpuMs)).join(' / ')})`);
    }
  }
  console.log('export to zstd Parquet, parts of a quarter of the rows   seconds  vs COPY  CPU s  CPU vs COPY  peak RSS');
  const line = (label: string, r: CaseResult) =>
    console.log(`${label.padEnd(55)} ${secs(r.ms).padStart(8)}  ${x(r.ms / copy.ms).padStart(7)}  ${secs(r.cpuMs).padStart(5)}  ${x(r.cpuMs / copy.cpuMs).padStart(11)}  ${mb(r.peakRss).padStart(8)}`);
  const csv = await exportCase('csv', id, 'csv');
  line('native, CSV pages in zstd (the default)', csv);
  const plain = await exportCase('csv-plain', id, 'csv', 'off');
  line('native, CSV pages uncompressed (compression: off)', plain);
  const json = await exportCase('json', id, 'json');
  line('native, JSON pages', json);
  const general = await exportCase('general', id, undefined);
  line('general path, JSON pages (JS decoders, one thread)', general);
  const threads = [];
  for (const n of [1, 2]) {
    const r = await exportCase(`threads-${n}`, id, { pages: 'csv', threads: n });
    line(`native, CSV pages, DuckDB threads: ${n}`, r);
    threads.push(r);
  }
  const bigId = await executed(client, sampleEventsSelect(ROWS * 5), dataDir, svc.url);
  const big = await exportCase('big', bigId, 'csv');
  line(`native, CSV pages, ${fmt(ROWS * 5)} rows`, big);
  console.log('targets: over CSV and JSON pages at most 3x the time of COPY; peak RSS <= 300 MB, the same at 5x the rows');
  record('wire-native-csv', `${x(csv.ms / copy.ms)} the time (CPU ${x(csv.cpuMs / copy.cpuMs)})`);
  record('wire-native-csv-plain', `${x(plain.ms / copy.ms)} the time (CPU ${x(plain.cpuMs / copy.cpuMs)})`);
  record('wire-native-json', `${x(json.ms / copy.ms)} the time (CPU ${x(json.cpuMs / copy.cpuMs)})`);
  record('wire-native-general', `${x(general.ms / csv.ms)} / ${x(general.ms / json.ms)} as fast`);
  record('wire-native-peak', `${mb(csv.peakRss)} / ${mb(big.peakRss)}`);
  record('wire-threads', `${x(threads[0]!.ms / threads[1]!.ms)} as fast (CPU ${x(threads[1]!.cpuMs / threads[0]!.cpuMs)})`);

  const { rowsMs, officialMs } = await officialCase(svc, id, false);
  record('wire-official', `${x(officialMs / rowsMs)} the time`);
}

type Faulty = { url: string; setFaults(faults: { latency_ms: number }): Promise<unknown> };

/**
 * At 50 ms per request: stream() rows over JSON pages against the official client reading the
 * whole result, each cold in a process of its own; printed, the times returned.
 */
async function officialCase(svc: Faulty, id: string, officialFirst: boolean): Promise<{ rowsMs: number; officialMs: number }> {
  const input: OfficialInput = { url: svc.url, key: KEY, executionId: id };
  const read = async (module: string, name: string, who: string) => {
    const r = await runChildCase<{ ms: number; rows: number }>(new URL(module, import.meta.url).href, name, input);
    if (r.rows !== ROWS) throw new Error(`${who} read ${r.rows} rows`);
    return r.ms;
  };
  const rows = () => read('./rowsCase.ts', 'rowsCase', 'stream()');
  const official = () => read('./linkCase.ts', 'officialCase', 'the official client');
  await svc.setFaults({ latency_ms: 50 });
  let rowsMs: number;
  let officialMs: number;
  try {
    if (officialFirst) {
      officialMs = await official();
      rowsMs = await rows();
    } else {
      rowsMs = await rows();
      officialMs = await official();
    }
  } finally {
    await svc.setFaults({ latency_ms: 0 });
  }
  console.log(`\n50 ms per request: stream() rows over JSON pages ${secs(rowsMs)} s; the official TypeScript client (whole result) ${secs(officialMs)} s = ${x(officialMs / rowsMs)} the time (target >= 2.5x)`);
  return { rowsMs, officialMs };
}

/**
 * The official client's case `runs` times, the two reads taking turns at going first; the medians
 * last. Each run reads a result of its own, as the full bench's one run does: the service stores
 * the gzip frames of the pages the official client asks for in gzip on their first request (measured:
 * a second read of the same result took some two thirds of the first's time).
 */
async function officialRuns(svc: Faulty, runs: number, first: string, fresh: () => Promise<string>): Promise<void> {
  const rows: number[] = [];
  const official: number[] = [];
  const ratios: number[] = [];
  for (let k = 0; k < runs; k++) {
    const r = await officialCase(svc, k === 0 ? first : await fresh(), k % 2 === 1);
    rows.push(r.rowsMs);
    official.push(r.officialMs);
    ratios.push(r.officialMs / r.rowsMs);
  }
  const median = (a: number[]) => a.sort((p, q) => p - q)[Math.floor(a.length / 2)]!;
  console.log(`medians of ${runs} runs: stream() rows ${secs(median(rows))} s; the official client ${secs(median(official))} s; ratio ${x(median(ratios))} the time`);
}

/** The native export over the link against the bare download of the same pages: printed, the ratio returned. */
async function linkCase(url: string, id: string, pageSize: number, dataDir: string, caseModule: string): Promise<number> {
  const floor = await bare(url, id, ROWS, pageSize, 'csv');
  // Compression on, as `auto` has it on any address but loopback (the proxy listens on loopback).
  const link: CaseInput = { url, key: KEY, executionId: id, wire: 'native', native: 'csv', out: join(dataDir, 'out-link'), rowsPerFile: Math.max(1, Math.round(ROWS / 4)), compression: 'on' };
  const r = await runChildCase<CaseResult>(caseModule, 'exportCase', link);
  console.log(`100 Mbit/s, 50 ms round trip: bare zstd download of the CSV pages ${secs(floor.ms)} s (${mb(floor.wire)}); native export ${secs(r.ms)} s = ${x(r.ms / floor.ms)} the time (target <= 1.2x)`);
  const { info, firstRequest, firstPage, lastPage } = r.timeline;
  // Where the export's time goes beside the download: before its first page request (asked for
  // with the stream's first page, which tells the columns), the pages themselves, after the last page (its part's
  // COPY and store).
  console.log(
    `  the export's timeline: first page request at ${secs(firstRequest ?? Number.NaN)} s; first page read (columns) at ${secs(info)} s; the CSV pages came in from ${secs(firstPage ?? Number.NaN)} to ${secs(lastPage ?? Number.NaN)} s (${secs((lastPage ?? Number.NaN) - (firstRequest ?? info))} s after the first request, against ${secs(floor.ms)} s for the bare download); the last part written and stored ${secs(r.ms - (lastPage ?? Number.NaN))} s after its last page; CPU ${secs(r.cpuMs)} s`,
  );
  if (LINK_RUNS === undefined) record('wire-link', `${x(r.ms / floor.ms)} the time`);
  return r.ms / floor.ms;
}

/**
 * The execution of `sql`, once the service has encoded its result and stored the zstd frames of its
 * CSV pages (a bare download in zstd asks for each once): the client's figures are taken against
 * pages a real service, on machines of its own, serves ready.
 */
async function executed(client: ServiceClient, sql: string, dataDir: string, url: string): Promise<string> {
  const e = await client.execute({ sql });
  await e.wait();
  await encodingsSettled(dataDir);
  const info = await stream(client, { executionId: e.id }).info();
  await bare(url, e.id, info.totalRows, info.pageSize, 'csv');
  return e.id;
}


if (import.meta.url === `file://${process.argv[1]}`) await run();
