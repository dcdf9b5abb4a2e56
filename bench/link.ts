// Reading a result over a network link rather than loopback: each link simulated by a proxy in a
// process of its own (bench/linkProxy.ts: bandwidth shared by all connections, a round-trip time,
// one round trip per new connection). Per link, the same result read by
// - a bare download of its pages (the floor of any client: the same pages as sluice fetches, 4 at
//   a time as sluice does by default, compressed with zstd, bodies dropped undecoded), Arrow and JSON;
// - sluice stream(): rows (which it reads over JSON) and .batches() over Arrow, with compression
//   (and without, where the bench measures what compression costs);
// - sluice exports to zstd Parquet (writeExport, as a job runs) in a process of their own;
// - the official TypeScript client reading the whole result (getExecutionResults: one page after
//   another; its fetch asks for gzip) in a process of its own. It writes no Parquet: its read is
//   the least any export through it would take.
// Bytes on the wire: what the proxy carried from the service to the client (headers included);
// on loopback, the body bytes a sluice read counted. Service CPU: what the service process spent
// answering (pages on the page grid are compressed once and then sent from stored frames, see
// src/service/http/compressedFrames.ts; storedFrameCosts measures that per page). Every figure of a link is from the same run;
// the machine is shared, so absolute times vary from run to run, the ratios less.
// `npm run bench -- link`; BENCH_LINK_ROWS overrides 1M rows (the 20 Mbit/s link reads a quarter of them).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ServiceClient } from '../src/client/index.ts';
import { stream } from '../src/pipeline/stream.ts';
import { ARROW_STREAM_MEDIA_TYPE } from '../src/protocol/index.ts';
import { sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';
import { runChildCase } from './childCase.ts';
import type { OfficialInput } from './linkCase.ts';
import type { LinkSpec } from './linkProxy.ts';
import { encodingsSettled } from './parallel.ts';
import type { CaseInput, CaseResult } from './parallelCase.ts';
import { startChildService } from './pipeline.ts';

const ROWS = Number(process.env.BENCH_LINK_ROWS ?? 1_000_000);
const KEY = 'sk_bench_admin_key';
const CONCURRENCY = 4;

interface Link {
  readonly name: string;
  /** Undefined: the service's own address, no proxy. */
  readonly spec?: LinkSpec;
  /** Rows read over this link (a slow link reads fewer, to keep the bench short). */
  readonly rows: number;
  /** Also read without compression (what it saves or costs on this link). */
  readonly uncompressed: readonly ('json' | 'arrow')[];
}

const LINKS: readonly Link[] = [
  { name: 'loopback', rows: ROWS, uncompressed: ['json', 'arrow'] },
  { name: '1 Gbit/s, 50 ms RTT', spec: { bitsPerSecond: 1e9, rttMs: 50 }, rows: ROWS, uncompressed: ['json', 'arrow'] },
  { name: '100 Mbit/s, 50 ms RTT', spec: { bitsPerSecond: 1e8, rttMs: 50 }, rows: ROWS, uncompressed: ['arrow'] },
  { name: '20 Mbit/s, 50 ms RTT', spec: { bitsPerSecond: 2e7, rttMs: 50 }, rows: Math.round(ROWS / 4), uncompressed: [] },
];

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${(bytes / 1e6).toFixed(1)} MB`);
const x = (n: number) => `${n.toFixed(2)}x`;

const STREAM_LABEL = { arrow: 'sluice stream().batches(), Arrow', json: 'sluice stream() rows, JSON' } as const;

interface Figure {
  readonly label: string;
  readonly ms: number;
  readonly wire: number | undefined;
}

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-link-'));
  const svc = await startChildService(dataDir, ROWS);
  const setup = new ServiceClient({ baseUrl: svc.url, apiKey: KEY, env: {} });
  try {
    const ids = new Map<number, string>();
    for (const rows of new Set(LINKS.map((l) => l.rows))) {
      const e = await setup.execute({ sql: rows === ROWS ? 'SELECT * FROM sample.events' : sampleEventsSelect(rows) });
      await e.wait();
      ids.set(rows, e.id);
    }
    await encodingsSettled(dataDir);
    const pageSize = (await stream(setup, { executionId: ids.get(ROWS)! }).info()).pageSize;
    console.log(`sample.events (8 columns); pages of ${fmt(pageSize)} rows; ${CONCURRENCY} pages at a time; compression: zstd unless said`);
    await storedFrameCosts(svc, ids.get(ROWS)!, ROWS, pageSize);
    const summary: string[] = [];
    for (const link of LINKS) {
      const executionId = ids.get(link.rows)!;
      const proxy = link.spec === undefined ? undefined : await startProxy(svc.url, link.spec);
      const url = proxy?.url ?? svc.url;
      console.log(`\n${link.name}: ${fmt(link.rows)} rows`);
      console.log(`${'client'.padEnd(48)}  seconds  bytes on the wire  service CPU`);
      const figures: Figure[] = [];
      const measure = async (label: string, f: () => Promise<{ ms: number; wire?: number }>) => {
        const before = await proxy?.bytes();
        const cpu = await svc.cpuMs();
        const r = await f();
        const serviceMs = (await svc.cpuMs()) - cpu;
        const after = await proxy?.bytes();
        const figure = { label, ms: r.ms, wire: before !== undefined && after !== undefined ? after - before : r.wire };
        figures.push(figure);
        console.log(`${label.padEnd(48)} ${secs(figure.ms).padStart(8)}  ${mb(figure.wire).padStart(17)}  ${secs(serviceMs).padStart(11)}`);
        return figure;
      };
      const bareArrow = await measure('bare download, Arrow', () => bare(url, executionId, link.rows, pageSize, 'arrow'));
      const bareJson = await measure('bare download, JSON', () => bare(url, executionId, link.rows, pageSize, 'json'));
      const streamArrow = await measure(STREAM_LABEL.arrow, () => sluiceStream(url, executionId, link.rows, 'arrow', 'on'));
      const streamJson = await measure(STREAM_LABEL.json, () => sluiceStream(url, executionId, link.rows, 'json', 'on'));
      for (const wire of link.uncompressed) await measure(`${STREAM_LABEL[wire]}, uncompressed`, () => sluiceStream(url, executionId, link.rows, wire, 'off'));
      const exportArrow = await measure('sluice export to Parquet, Arrow', () => sluiceExport(url, executionId, link.rows, 'arrow', 'on', dataDir));
      const exportJson = await measure('sluice export to Parquet, JSON', () => sluiceExport(url, executionId, link.rows, 'json', 'on', dataDir));
      for (const wire of link.uncompressed) await measure(`sluice export, ${wire === 'arrow' ? 'Arrow' : 'JSON'}, uncompressed`, () => sluiceExport(url, executionId, link.rows, wire, 'off', dataDir));
      const official = await measure('official client (whole result)', () => officialRead(url, executionId, link.rows));
      await proxy?.close();
      console.log(
        `ratios: official / sluice batches() Arrow ${x(official.ms / streamArrow.ms)}, rows JSON ${x(official.ms / streamJson.ms)}; official / sluice export Arrow ${x(official.ms / exportArrow.ms)}, JSON ${x(official.ms / exportJson.ms)}`,
      );
      console.log(
        `        sluice / bare download: batches() Arrow ${x(streamArrow.ms / bareArrow.ms)}, rows JSON ${x(streamJson.ms / bareJson.ms)}; export Arrow ${x(exportArrow.ms / bareArrow.ms)}, JSON ${x(exportJson.ms / bareJson.ms)}`,
      );
      for (const wire of link.uncompressed) {
        const name = wire === 'arrow' ? 'Arrow' : 'JSON';
        const off = figures.find((f) => f.label === `${STREAM_LABEL[wire]}, uncompressed`)!;
        const offExport = figures.find((f) => f.label === `sluice export, ${name}, uncompressed`);
        const on = wire === 'arrow' ? streamArrow : streamJson;
        const onExport = wire === 'arrow' ? exportArrow : exportJson;
        console.log(`        compressed / uncompressed, ${name}: stream() ${x(on.ms / off.ms)}${offExport === undefined ? '' : `, export ${x(onExport.ms / offExport.ms)}`}`);
      }
      summary.push(`${link.name.padEnd(22)} official / sluice batches() Arrow ${x(official.ms / streamArrow.ms)}; sluice batches() Arrow / bare ${x(streamArrow.ms / bareArrow.ms)}; export Arrow / bare ${x(exportArrow.ms / bareArrow.ms)}`);
    }
    console.log(`\n${summary.join('\n')}`);
    console.log('targets: at 100 Mbit/s sluice >= 6x faster than the official client and within 1.2x of the bare compressed download; the same order at 20 Mbit/s; on loopback no slower than without compression (the default there)');
  } finally {
    await setup.close();
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * The service's CPU per compressed page, on loopback, before any other compressed read of the
 * result: pages off the page grid (one row short, so compressed per request, as every page was
 * before frames were stored), then the pages on the grid read the first time (compressed and
 * stored), then read again (sent from the stored frames).
 */
async function storedFrameCosts(svc: { url: string; cpuMs(): Promise<number> }, executionId: string, rows: number, pageSize: number): Promise<void> {
  console.log(`\nservice CPU and time per compressed page (loopback, ${fmt(rows)} rows, pages of ${fmt(pageSize)} rows; 'per request' Arrow pages are off the Arrow chunks too, so also built per request)`);
  console.log(`${'wire, coding'.padEnd(14)} ${'per request'.padStart(24)} ${'first read, stored'.padStart(24)} ${'stored frame'.padStart(24)}`);
  for (const wire of ['json', 'arrow'] as const) {
    for (const coding of ['zstd', 'gzip'] as const) {
      const cells: string[] = [];
      for (const step of [pageSize - 1, pageSize, pageSize]) {
        const cpu = await svc.cpuMs();
        const r = await bare(svc.url, executionId, rows, step, wire, coding);
        const pages = Math.ceil(rows / step);
        cells.push(`${(((await svc.cpuMs()) - cpu) / pages).toFixed(1)} ms CPU, ${(r.ms / pages).toFixed(1)} ms`.padStart(24));
      }
      console.log(`${`${wire}, ${coding}`.padEnd(14)} ${cells.join(' ')}`);
    }
  }
}

/** Every page of the result (JSON, Arrow or CSV pages), CONCURRENCY at a time, in zstd (unless said), each body read to its end and dropped: the floor of any export of it. */
export async function bare(url: string, executionId: string, rows: number, pageSize: number, wire: 'json' | 'arrow' | 'csv', coding: 'zstd' | 'gzip' = 'zstd'): Promise<{ ms: number; wire: number }> {
  const offsets: number[] = [];
  for (let o = 0; o < rows; o += pageSize) offsets.push(o);
  let bytes = 0;
  const t = performance.now();
  const worker = async () => {
    for (let o = offsets.shift(); o !== undefined; o = offsets.shift()) {
      const res = await request(`${url}/v1/execution/${executionId}/results${wire === 'csv' ? '/csv' : ''}?offset=${o}&limit=${pageSize}`, {
        headers: { 'x-service-api-key': KEY, 'accept-encoding': coding, accept: wire === 'arrow' ? ARROW_STREAM_MEDIA_TYPE : wire === 'csv' ? 'text/csv' : 'application/json' },
      });
      if (res.statusCode !== 200) throw new Error(`bare download: ${res.statusCode} at offset ${o}`);
      for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { ms: performance.now() - t, wire: bytes };
}

async function sluiceStream(url: string, executionId: string, rows: number, wire: 'json' | 'arrow', compression: 'on' | 'off'): Promise<{ ms: number; wire: number }> {
  const client = new ServiceClient({ baseUrl: url, apiKey: KEY, env: {}, compression });
  try {
    const t = performance.now();
    const s = stream(client, { executionId }, { wire });
    let n = 0;
    // Rows are read over JSON pages whatever the wire; Arrow pages are for batches.
    if (wire === 'arrow') for await (const b of s.batches()) n += b.numRows;
    else for await (const _ of s) n++;
    const ms = performance.now() - t;
    if (n !== rows) throw new Error(`stream() read ${n} rows, expected ${rows}`);
    return { ms, wire: s.progress?.wireBytes ?? 0 };
  } finally {
    await client.close();
  }
}

async function sluiceExport(url: string, executionId: string, rows: number, wire: 'json' | 'arrow', compression: 'on' | 'off', dataDir: string): Promise<{ ms: number }> {
  const input: CaseInput = { url, key: KEY, executionId, wire, out: join(dataDir, `export-${wire}-${compression}`), rowsPerFile: Math.max(1, Math.round(rows / 4)), compression };
  const r = await runChildCase<CaseResult>(new URL('./parallelCase.ts', import.meta.url).href, 'exportCase', input);
  if (r.rows !== rows) throw new Error(`export wrote ${r.rows} rows, expected ${rows}`);
  return { ms: r.ms };
}

async function officialRead(url: string, executionId: string, rows: number): Promise<{ ms: number }> {
  const r = await runChildCase<{ ms: number; rows: number }>(new URL('./linkCase.ts', import.meta.url).href, 'officialCase', { url, key: KEY, executionId } satisfies OfficialInput);
  if (r.rows !== rows) throw new Error(`the official client read ${r.rows} rows, expected ${rows}`);
  return { ms: r.ms };
}

/** The link proxy in a process of its own, in front of the service at `serviceUrl`. */
export async function startProxy(serviceUrl: string, spec: LinkSpec): Promise<{ url: string; bytes(): Promise<number>; close(): Promise<void> }> {
  const target = new URL(serviceUrl);
  const module = new URL('./linkProxy.ts', import.meta.url).href;
  const code = `const m = await import(${JSON.stringify(module)}); await m.serveLinkProxy(${JSON.stringify({ host: target.hostname, port: Number(target.port) })}, ${JSON.stringify(spec)});`;
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit').then(() => Promise.reject(new Error('link proxy exited')));
  exited.catch(() => undefined);
  const next = async (): Promise<Record<string, unknown>> => {
    const [message] = (await Promise.race([once(child, 'message'), exited])) as [Record<string, unknown>];
    return message;
  };
  const { port } = await next();
  return {
    url: `http://127.0.0.1:${String(port)}${target.pathname}`,
    async bytes() {
      child.send({ bytes: true });
      const { bytes } = (await next()) as { bytes: { down: number } };
      return bytes.down;
    },
    async close() {
      const gone = once(child, 'exit');
      child.send({ close: true });
      await gone;
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
