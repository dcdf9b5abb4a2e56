// Pipeline throughput and memory against the local service on the sample dataset (sample.events,
// 1M rows x 8 columns). The service runs in a child process: in this process it would share the one
// JS thread with the client (it spends ~150 ms encoding each 31k-row page) and its DuckDB memory would
// be counted as the client's, hiding what the pipeline itself costs. Figures:
// - rows/s of `stream()` (typed rows) for concurrency 1, 2, 4, 8, with 0 and 50 ms of injected latency;
// - the baseline, measured in the same run: bare JSON.parse of the same page bytes, as a ratio;
// - peak RSS while streaming 1M and 5M rows (sampled during the run), against the RSS before:
//   bounded memory means the two peaks are about the same.
// `npm run bench -- pipeline`, or `node bench/pipeline.ts` (runs when executed directly).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ServiceClient } from '../src/client/index.ts';
import { stream } from '../src/pipeline/stream.ts';
import type { StreamSource } from '../src/pipeline/source.ts';
import { ResultPageSchema } from '../src/protocol/index.ts';
import { parseJsonLossless } from '../src/types/json.ts';
import { compileRowDecoder, type RowDecoder } from '../src/types/decode.ts';
// sampleEvents.ts, not sampleDataset.ts: the latter loads DuckDB, which this process must not hold.
import { sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';

const ROWS = 1_000_000;
const BIG_ROWS = 5_000_000;
const KEY = 'sk_bench_admin_key';
const CONCURRENCIES = [1, 2, 4, 8] as const;
const LATENCIES = [0, 50] as const;

/** sample.events' eight columns, generated for any row count (the 5M run). */
const generatedEvents = sampleEventsSelect;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const rate = (rows: number, ms: number) => Math.round((rows * 1000) / ms);
const fmt = (n: number) => n.toLocaleString('en-US');

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-pipeline-'));
  let svc: ChildService | undefined;
  let client: ServiceClient | undefined;
  try {
    const t0 = performance.now();
    svc = await startChildService(dataDir);
    client = new ServiceClient({ baseUrl: svc.url, apiKey: KEY });
    console.log(`service with sample.events (${fmt(ROWS)} rows) up in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const execution = await client.execute({ sql: 'SELECT * FROM sample.events' });
    await execution.wait();
    const source: StreamSource = { executionId: execution.id };

    console.log('peak RSS of the client process while streaming, concurrency 4:');
    for (const [label, src] of [
      ['1M', source],
      ['5M', { sql: generatedEvents(BIG_ROWS) }],
    ] as const) {
      const s = stream(client, src, { concurrency: 4 });
      await s.info(); // execute and wait outside the measured read
      globalThis.gc?.();
      const before = process.memoryUsage().rss;
      const sampler = sampleRss();
      let rows = 0;
      const started = performance.now();
      for await (const _ of s) rows++;
      const ms = performance.now() - started;
      const peak = sampler.stop();
      console.log(`${label}: ${fmt(rows)} rows, ${fmt(rate(rows, ms))} rows/s, RSS before ${mb(before)}, peak ${mb(peak)} (+${mb(peak - before)})`);
    }
    console.log('');

    const baseline = await jsonParseBaseline(svc, execution.id);
    console.log(
      `baseline: JSON.parse of the same page bytes: ${fmt(rate(baseline.rows, baseline.parseMs))} rows/s ` +
        `(${baseline.pages} pages, ${mb(baseline.bytes)}, ${(baseline.bytes / 2 ** 20 / (baseline.parseMs / 1000)).toFixed(0)} MB/s)`,
    );
    const parseRate = rate(baseline.rows, baseline.parseMs);
    console.log('client CPU on the same bytes, no network (cumulative stages):');
    for (const [stage, stageMs] of [
      ['lossless parse', baseline.losslessMs],
      ['+ zod page validation', baseline.losslessMs + baseline.validateMs],
      ['+ typed row decode', baseline.losslessMs + baseline.validateMs + baseline.decodeMs],
    ] as const) {
      console.log(`  ${stage.padEnd(22)} ${fmt(rate(baseline.rows, stageMs)).padStart(10)} rows/s  ${(rate(baseline.rows, stageMs) / parseRate).toFixed(2)}x`);
    }

    console.log('\nstream() typed rows, 1M rows x 8 columns:');
    console.log('latency  concurrency  rows/s      seconds  vs JSON.parse');
    for (const latency of LATENCIES) {
      await svc.setFaults({ latency_ms: latency });
      for (const concurrency of CONCURRENCIES) {
        const { rows, ms } = await timeRows(client, source, concurrency);
        if (rows !== ROWS) throw new Error(`expected ${ROWS} rows, read ${rows}`);
        const r = rate(rows, ms);
        console.log(
          `${String(latency).padStart(4)} ms  ${String(concurrency).padStart(11)}  ${fmt(r).padEnd(10)}  ${(ms / 1000).toFixed(2).padStart(7)}  ${(r / rate(baseline.rows, baseline.parseMs)).toFixed(2)}x`,
        );
      }
    }
    await svc.setFaults({ latency_ms: 0 });

    {
      const { rows, ms } = await timeBatches(client, source, 4);
      console.log(`\n.batches() Arrow, concurrency 4: ${fmt(rate(rows, ms))} rows/s`);
    }

  } finally {
    await client?.close();
    await svc?.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function timeRows(client: ServiceClient, source: StreamSource, concurrency: number) {
  const started = performance.now();
  let rows = 0;
  for await (const _ of stream(client, source, { concurrency })) rows++;
  return { rows, ms: performance.now() - started };
}

async function timeBatches(client: ServiceClient, source: StreamSource, concurrency: number) {
  const started = performance.now();
  let rows = 0;
  for await (const batch of stream(client, source, { concurrency }).batches()) rows += batch.numRows;
  return { rows, ms: performance.now() - started };
}

/**
 * Fetches every page's raw body (not timed) and times `JSON.parse` of it (the baseline), then the
 * client's own stages on the same text: lossless parse, page validation, typed decoding.
 */
async function jsonParseBaseline(svc: ChildService, executionId: string) {
  let offset: number | undefined = 0;
  let parseMs = 0;
  let losslessMs = 0;
  let validateMs = 0;
  let decodeMs = 0;
  let rows = 0;
  let bytes = 0;
  let pages = 0;
  let decode: RowDecoder | undefined;
  while (offset !== undefined) {
    const res = await fetch(`${svc.url}/v1/execution/${executionId}/results?offset=${offset}`, { headers: { 'X-Service-Api-Key': KEY } });
    const text = await res.text();
    let t = performance.now();
    JSON.parse(text);
    parseMs += performance.now() - t;
    t = performance.now();
    const value = parseJsonLossless(text);
    losslessMs += performance.now() - t;
    t = performance.now();
    const page = ResultPageSchema.parse(value);
    validateMs += performance.now() - t;
    const result = page.result!;
    const m = result.metadata;
    decode ??= compileRowDecoder(m.column_names.map((name, i) => ({ name, type: m.column_types[i]! })));
    t = performance.now();
    for (let i = 0; i < result.rows.length; i++) decode(result.rows[i], rows + i);
    decodeMs += performance.now() - t;
    rows += result.rows.length;
    bytes += Buffer.byteLength(text);
    pages++;
    offset = page.next_offset;
  }
  return { rows, parseMs, losslessMs, validateMs, decodeMs, bytes, pages };
}

function sampleRss() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss);
    },
  };
}

export interface ChildService {
  url: string;
  setFaults(faults: { latency_ms: number }): Promise<void>;
  /** CPU time the service process has used so far (all its threads), ms. */
  cpuMs(): Promise<number>;
  close(): Promise<void>;
}

/** The service in a child process, driven over the IPC channel. */
export async function startChildService(dataDir: string, rows: number = ROWS): Promise<ChildService> {
  const serviceModule = new URL('../src/service/index.ts', import.meta.url).href;
  const code = `
    import { startService } from ${JSON.stringify(serviceModule)};
    const svc = await startService(${JSON.stringify({
      dataDir,
      sampleRows: rows,
      // Every format encoded as the execution's last step: the client's figures are taken against
      // stored pages, as a real service (on machines of its own) serves them; and every result kept
      // while the bench runs (a 5x result and its encodings pass the default bound of stored results).
      settings: { teams: [{ name: 'bench', keys: [{ key: KEY, scopes: ['Admin'] }] }], datasets: ['sample'], engine: { encode_results: 'at_completion' }, limits: { result_store_max_bytes: 64 * 2 ** 30 } },
    })});
    process.on('message', async (m) => {
      if (m.faults) { svc.setFaults(m.faults); process.send({ ok: true }); }
      if (m.cpu) { const u = process.cpuUsage(); process.send({ cpuMs: (u.user + u.system) / 1000 }); }
      if (m.close) { await svc.close(); process.disconnect(); }
    });
    process.send({ url: svc.url });`;
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // One listener for the exit, however many messages are awaited.
  const exited = once(child, 'exit').then(() => Promise.reject(new Error('service process exited')));
  exited.catch(() => undefined);
  const next = async (): Promise<Record<string, unknown>> => {
    const [message] = (await Promise.race([once(child, 'message'), exited])) as [Record<string, unknown>];
    return message;
  };
  const { url } = await next();
  if (typeof url !== 'string') throw new Error(`service process sent ${JSON.stringify(url)} instead of its URL`);
  return {
    url,
    async setFaults(faults) {
      child.send({ faults });
      await next();
    },
    async cpuMs() {
      child.send({ cpu: true });
      const { cpuMs } = await next();
      if (typeof cpuMs !== 'number') throw new Error(`service process sent ${JSON.stringify(cpuMs)} instead of its CPU time`);
      return cpuMs;
    },
    async close() {
      const gone = once(child, 'exit');
      child.send({ close: true });
      await gone;
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
