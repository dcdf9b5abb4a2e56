// One export of the `parallel` bench, in a process of its own so that its peak RSS (threads
// included) is its own: `exportCase` is called by bench/parallel.ts in a child process and prints
// one JSON line. Imports only what an export needs (no DuckDB).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { rm } from 'node:fs/promises';
import { builtins } from '../connectors/index.ts';
import { ServiceClient } from '../src/client/index.ts';
import { resolveOutput, writeExport, type NativeMode } from '../src/export/index.ts';
import { stream } from '../src/pipeline/stream.ts';
import { peakRss } from './peakRss.ts';

export interface CaseInput {
  readonly url: string;
  readonly key: string;
  readonly executionId: string;
  /**
   * The wire the rows come over; `json` decodes them in JS (the general path, `native: false`),
   * `native` is a service without Arrow pages written by DuckDB (src/export/nativeExport.ts).
   */
  readonly wire: 'json' | 'arrow' | 'native';
  /** With wire `native`: which pages and how many DuckDB threads (default `always`: the CSV pages, the default threads). */
  readonly native?: NativeMode;
  readonly out: string;
  readonly rowsPerFile: number;
  /** The client's `compression` (default: its own, `auto`). */
  readonly compression?: 'auto' | 'on' | 'off';
}

export interface CaseResult {
  readonly ms: number;
  readonly rows: number;
  readonly files: number;
  /** Peak resident set of the process (all its threads), bytes. */
  readonly peakRss: number;
  /** RSS once the code was loaded, before the export started. */
  readonly startRss: number;
  /** Share of the export's time the main thread was busy (1: always). */
  readonly mainBusy: number;
  /** CPU time of the process (every thread) during the export, ms: over `ms`, the cores it got. */
  readonly cpuMs: number;
  /** 99th percentile of the main thread's event-loop delay during the export, ms. */
  readonly loopDelayP99: number;
  /**
   * When, since the export started (ms), the stream had read its first page (`info`: the columns),
   * and the first and last page of the rows' reads came in (the native path's range reads count
   * from zero again: the stream's first page is not among them).
   */
  readonly timeline: { readonly info: number; readonly firstPage: number | undefined; readonly lastPage: number | undefined };
}

export async function exportCase(input: CaseInput): Promise<void> {
  const client = new ServiceClient({ baseUrl: input.url, apiKey: input.key, env: {}, ...(input.compression === undefined ? {} : { compression: input.compression }) });
  const startRss = process.memoryUsage().rss;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const t = performance.now();
  const output = resolveOutput({ format: 'parquet', format_options: { compression: 'zstd' }, path: input.out, max_rows_per_file: input.rowsPerFile }, builtins);
  const wire = input.wire === 'native' ? 'json' : input.wire;
  let firstPage: number | undefined;
  let lastPage: number | undefined;
  const onProgress = (p: { pages: number }) => {
    if (p.pages === 0) return;
    firstPage ??= performance.now() - t;
    lastPage = performance.now() - t;
  };
  const s = stream(client, { executionId: input.executionId }, { wire, onProgress });
  const info = await s.info();
  const infoMs = performance.now() - t;
  const summary = await writeExport(
    { schema: await s.schema(), batches: s.batches(), meta: { executionId: info.executionId, totalRowCount: info.totalRows }, parts: await s.rangeReader() },
    output,
    { native: input.wire === 'native' ? (input.native ?? 'always') : 'never' },
  );
  const ms = performance.now() - t;
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(elu).utilization;
  delay.disable();
  await client.close();
  await rm(input.out, { recursive: true, force: true });
  const result: CaseResult = {
    ms,
    rows: summary.rows,
    files: summary.files.length,
    peakRss: peakRss(),
    startRss,
    mainBusy: busy,
    cpuMs: (used.user + used.system) / 1000,
    loopDelayP99: delay.percentile(99) / 1e6,
    timeline: { info: infoMs, firstPage, lastPage },
  };
  console.log(JSON.stringify(result));
}

export interface BatchesInput {
  readonly url: string;
  readonly key: string;
  readonly source: { readonly executionId: string } | { readonly sql: string };
  readonly wire: 'json' | 'arrow';
}

export interface BatchesResult {
  readonly ms: number;
  readonly rows: number;
  readonly startRss: number;
  readonly peakRss: number;
}

/** `.batches()` of a result with default options, read to the end: time and peak RSS of this process. */
export async function batchesCase(input: BatchesInput): Promise<void> {
  const client = new ServiceClient({ baseUrl: input.url, apiKey: input.key, env: {} });
  const s = stream(client, input.source, { wire: input.wire });
  await s.info();
  const startRss = process.memoryUsage().rss;
  const t = performance.now();
  let rows = 0;
  for await (const b of s.batches()) rows += b.numRows;
  const ms = performance.now() - t;
  await client.close();
  const result: BatchesResult = { ms, rows, startRss, peakRss: peakRss() };
  console.log(JSON.stringify(result));
}
