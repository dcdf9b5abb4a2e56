// The first read of a fresh 1M-row x 8-column result (SELECT * FROM sample.events ORDER BY id),
// right after its status says COMPLETED, and the same read again (warm), the service in a process
// of its own: with each format encoded when first read (engine.encode_results: on_first_read, the
// default: the first read is served by the encoder as it writes), with every format encoded at
// completion (at_completion, the earlier default), and by the page query alone. Every figure is a
// ratio against a baseline measured in the same run:
// - raw download of all pages at concurrency 4 against bare JSON.parse of the same bytes
//   (target <= 0.5x), first and warm;
// - Arrow download + RecordBatchReader against JSON download + JSON.parse (target Arrow >= 5x
//   faster), first and warm; the Arrow first read is of a second fresh result (the first one's
//   JSON read has warmed the disk cache for it);
// - against the two other ways: every format encoded as the execution's last step (at_completion:
//   time before COMPLETED, every read a byte range), and pre-encoding off (every page by the page
//   query); the time from submit to the last row read, each way;
// - the service process's peak RSS, each way;
// - the execution time with engine.encode_results at_completion against when_idle, and the service
//   process's CPU from submit to COMPLETED: two services at once, the same SQL submitted to each in
//   turn (when_idle's background encoding waited for between turns, not counted);
// - where the encoding's time goes, in this process on the stored result of the same rows: DuckDB
//   rendering the JSON rows, the JSON encoding alone as a first JSON read writes it (render + split
//   into the files + fsync), the same for JSON and CSV together as at completion, the Arrow chunks
//   from one scan, and all at once as at completion; process CPU and fsync time beside each.
// BENCH_FIRSTREAD_ONLY=on_first_read runs only the reads with the default setting, ROUNDS times
// (BENCH_FIRSTREAD_ROUNDS, default 3), each in a fresh service, and prints their ratios and
// medians (about 20 s a round; for comparing two versions of the code turn by turn): no figures
// are recorded then.
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { RecordBatchReader } from 'apache-arrow';
import { buildArrowPage } from '../src/service/engine/pages/arrowPage.ts';
import { writeEncodings, writeRowEncodings } from '../src/service/engine/encoding/encodedResult.ts';
import { streamChunk, writeArrowChunks } from '../src/service/engine/encoding/arrowEncoding.ts';
import { arrowChunks, type ArrowChunk } from '../src/service/engine/encoding/arrowChunks.ts';
import { planPage, renderedRowsSql } from '../src/service/engine/pages/pageQuery.ts';
import { SAMPLE_EVENTS_COLUMNS, sampleEventsSelect } from '../src/service/engine/tables/sampleEvents.ts';
import { recordFigure } from './figures.ts';
import { ARROW, cpuSeconds, downloadAll, fmt, get, ratio, ROWS, startChild, submitAndWait, type Child } from './service.ts';

const SQL = 'SELECT * FROM sample.events ORDER BY id';

interface Fresh {
  id: string;
  base: string;
  urls: string[];
  /** Submit to COMPLETED seen by polling. */
  submitToDoneMs: number;
  execMs: number;
}

/** Runs SQL, polls until it finished, and lists the URLs of every page of its default size. */
async function fresh(child: Child): Promise<Fresh> {
  const t0 = performance.now();
  const { id, status } = await submitAndWait(child.url, SQL);
  const submitToDoneMs = performance.now() - t0;
  if (status.state !== 'QUERY_STATE_COMPLETED') throw new Error(`bench query ended ${status.state}`);
  const m = status.result_metadata;
  // The page size: the service's default (the first page's row count), from the metadata alone.
  const pageRows = Math.min(32_000, Math.floor(250_000 / m.column_names.length));
  const base = `${child.url}/v1/execution/${id}/results`;
  const urls = Array.from({ length: Math.ceil(m.total_row_count / pageRows) }, (_, i) => `${base}?offset=${i * pageRows}&limit=${pageRows}`);
  return { id, base, urls, submitToDoneMs, execMs: Date.parse(status.execution_ended_at) - Date.parse(status.execution_started_at) };
}

/**
 * One turn of the event loop's I/O phase. The parse and the Arrow read below hold this process's
 * loop for seconds (7 s at load 20): the service closes connections idle for its keep-alive timeout
 * (5 s) meanwhile, and undici's pool learns of it only once the loop reads their FIN. A request sent
 * before that goes out on a closed connection: a GET is retried (service.ts get()), but the next
 * submit's POST is not, and failed with 'other side closed' (the socket's counts were those of the
 * pages it had served before, which made it look like a page cut mid-body: the service had sent
 * every page whole). Letting the loop read first drops those connections from the pool.
 */
const ioTurn = (): Promise<void> => new Promise((done) => setImmediate(done));

function parseAll(bodies: Buffer[]): { ms: number; rows: number } {
  const t = performance.now();
  let rows = 0;
  for (const b of bodies) rows += JSON.parse(b.toString('utf8')).result.rows.length;
  return { ms: performance.now() - t, rows };
}

function readArrow(bodies: Buffer[]): { ms: number; rows: number } {
  const t = performance.now();
  let rows = 0;
  for (const b of bodies) for (const batch of RecordBatchReader.from(b)) rows += batch.numRows;
  return { ms: performance.now() - t, rows };
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

interface Reads {
  json: { ms: number; parseMs: number; rows: number; bytes: number };
  arrow: { ms: number; readMs: number; rows: number };
}

/** JSON first read of one fresh result, Arrow first read of another; then both again, warm. */
async function reads(child: Child): Promise<{ first: Reads; warm: Reads; a: Fresh; b: Fresh }> {
  const a = await fresh(child);
  const jsonFirst = await downloadAll(a.urls, 4);
  const parsed = parseAll(jsonFirst.bodies);
  await ioTurn();
  const b = await fresh(child);
  const arrowFirst = await downloadAll(b.urls, 4, ARROW);
  const arrowRead = readArrow(arrowFirst.bodies);
  await ioTurn();
  const jsonWarm = await downloadAll(a.urls, 4);
  const arrowWarm = await downloadAll(b.urls, 4, ARROW);
  const bytes = jsonFirst.bodies.reduce((n, x) => n + x.length, 0);
  if (!Buffer.concat(jsonWarm.bodies).equals(Buffer.concat(jsonFirst.bodies))) throw new Error('the warm JSON read differs from the first');
  if (!Buffer.concat(arrowWarm.bodies).equals(Buffer.concat(arrowFirst.bodies))) throw new Error('the warm Arrow read differs from the first');
  const first: Reads = { json: { ms: jsonFirst.ms, parseMs: parsed.ms, rows: parsed.rows, bytes }, arrow: { ms: arrowFirst.ms, readMs: arrowRead.ms, rows: arrowRead.rows } };
  const warm: Reads = { json: { ...first.json, ms: jsonWarm.ms }, arrow: { ...first.arrow, ms: arrowWarm.ms } };
  return { first, warm, a, b };
}

function report(label: string, r: Reads): void {
  const jsonTotal = r.json.ms + r.json.parseMs;
  const arrowTotal = r.arrow.ms + r.arrow.readMs;
  console.log(
    `  ${label}: JSON download ${fmt(r.json.ms)} (${(r.json.bytes / 1e6).toFixed(1)} MB, ${r.json.rows} rows), JSON.parse ${fmt(r.json.parseMs)}: ` +
      `download/parse ${ratio(r.json.ms, r.json.parseMs)} (target <= 0.5x); Arrow download + read ${fmt(r.arrow.ms)} + ${fmt(r.arrow.readMs)} (${r.arrow.rows} rows): ` +
      `Arrow ${ratio(jsonTotal, arrowTotal)} faster than JSON (target >= 5x)`,
  );
}

/** Rounds of the execution time comparison. */
const EXEC_ROUNDS = 3;

interface ExecutionCost {
  /** execution_ended_at - execution_started_at. */
  ms: number;
  /** CPU the service process used from submit to COMPLETED: less shaken by the machine's load than the time. */
  cpuMs: number;
}

/** Execution times and CPU of SQL on two services at once, in turns: at_completion, when_idle. */
async function executionTimes(): Promise<{ atCompletion: ExecutionCost[]; whenIdle: ExecutionCost[] }> {
  const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'sluice-bench-exec-'))));
  const [now, idle] = await Promise.all([startChild(dirs[0]!, undefined, { encode_results: 'at_completion' }), startChild(dirs[1]!, undefined, { encode_results: 'when_idle' })]);
  const times = { atCompletion: [] as ExecutionCost[], whenIdle: [] as ExecutionCost[] };
  const cost = async (child: Child): Promise<ExecutionCost & { id: string }> => {
    const cpu = cpuSeconds(child.proc.pid!);
    const { execMs, id } = await fresh(child);
    return { id, ms: execMs, cpuMs: (cpuSeconds(child.proc.pid!) - cpu) * 1000 };
  };
  try {
    for (let i = 0; i < EXEC_ROUNDS; i++) {
      times.atCompletion.push(await cost(now));
      const { id, ...c } = await cost(idle);
      times.whenIdle.push(c);
      // Its background encoding runs now; the next turn starts once it is done.
      await idle.whenEncoded(id);
    }
  } finally {
    for (const child of [now, idle]) {
      child.proc.stdin!.write('stop\n');
      await new Promise((ok) => child.proc.once('exit', ok));
    }
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
  return times;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Part {
  label: string;
  wallMs: number;
  cpuMs: number;
  fsyncMs: number;
}

/**
 * The encoding's parts timed in this process, on a stored result of the bench's rows written as
 * the engine writes one, with the engine's files instance settings (its threads; a quarter of the
 * default memory_limit). fsync time is counted by wrapping FileHandle.sync.
 */
async function encodingParts(): Promise<Part[]> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-encode-'));
  const instance = await DuckDBInstance.create(':memory:', { threads: String(Math.min(4, availableParallelism())), memory_limit: '64MiB' });
  const conn = await instance.connect();
  const second = await instance.connect();
  const probe = await open(join(dir, 'probe'), 'w');
  const handleProto = Object.getPrototypeOf(probe) as { sync(): Promise<void> };
  await probe.close();
  const sync = handleProto.sync;
  let fsyncMs = 0;
  handleProto.sync = async function (this: unknown): Promise<void> {
    const t = performance.now();
    try {
      return await sync.call(this);
    } finally {
      fsyncMs += performance.now() - t;
    }
  };
  const parts: Part[] = [];
  try {
    await conn.run(`ATTACH '${join(dir, 'result.duckdb')}' AS r`);
    await conn.run(`CREATE TABLE r.main.result AS SELECT ${SAMPLE_EVENTS_COLUMNS.map((c, i) => `${c.name} AS c${i}`).join(', ')} FROM (${sampleEventsSelect(ROWS)}) ORDER BY id`);
    await conn.run('CHECKPOINT r');
    const types = (await conn.runAndReadAll('SELECT * FROM r.main.result LIMIT 0')).columnTypes();
    const names = SAMPLE_EVENTS_COLUMNS.map((c) => c.name);
    const protocolTypes = SAMPLE_EVENTS_COLUMNS.map((c) => c.type);
    const stored = { table: 'r.main.result', names, protocolTypes, types, rowCount: ROWS };
    const info = { columnNames: names, columnTypes: protocolTypes, rowCount: ROWS, bytes: 0, truncated: false };
    const chunkRows = Math.min(32_000, Math.floor(250_000 / names.length));
    // As the engine writes it: one scan of the table (a chunk is built by a page query only after a
    // value the vectors refuse, which these rows do not hold).
    const arrow = async (c: typeof conn, out: string): Promise<void> => {
      await mkdir(out, { recursive: true });
      const perChunk = async (o: number, l: number): Promise<ArrowChunk> => streamChunk(await buildArrowPage(c, stored, planPage(stored, { offset: o, limit: l }, 'json')));
      await writeArrowChunks(out, chunkRows, ROWS, arrowChunks(c, stored, chunkRows, ROWS, perChunk), () => false);
    };
    const timed = async (label: string, f: () => Promise<unknown>): Promise<void> => {
      fsyncMs = 0;
      const cpu = process.cpuUsage();
      const t = performance.now();
      await f();
      const used = process.cpuUsage(cpu);
      parts.push({ label, wallMs: performance.now() - t, cpuMs: (used.user + used.system) / 1000, fsyncMs });
    };
    const render = (texts: string) => async (): Promise<void> => {
      const rows = await conn.stream(`SELECT rn, b, ${texts} FROM (${renderedRowsSql(stored, names.map((_, i) => i), 'true', true)})`);
      while (((await rows.fetchChunk())?.rowCount ?? 0) > 0);
    };
    // A first JSON read renders and writes the JSON rows alone (one encoder a format).
    await timed('DuckDB renders the JSON rows (read, not written)', render('j'));
    await timed('JSON encoding alone, as a first JSON read writes it (render, split, fsync)', () => writeRowEncodings(conn, stored, info, { json: join(dir, 'json') }));
    await timed('DuckDB renders the JSON and CSV rows (read, not written)', render('j, c'));
    await timed('JSON + CSV encoding, as at completion (render, split, fsync)', () => writeEncodings(conn, stored, info, join(dir, 'rows')));
    await timed('Arrow chunks from one scan (built, written, fsync)', () => arrow(conn, join(dir, 'arrow')));
    await timed('all three at once, as at completion', () => Promise.all([writeEncodings(conn, stored, info, join(dir, 'both')), arrow(second, join(dir, 'both', 'arrow.tmp'))]));
  } finally {
    handleProto.sync = sync;
    conn.closeSync();
    second.closeSync();
    instance.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
  return parts;
}

/** The default's reads alone, in fresh services one after the other (BENCH_FIRSTREAD_ONLY, see the header). */
async function firstReadsOnly(): Promise<void> {
  const rounds = Number(process.env.BENCH_FIRSTREAD_ROUNDS ?? 3);
  const speed: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-first-read-'));
    const child = await startChild(dataDir);
    try {
      const { first } = await reads(child);
      report(`round ${i + 1}, first read`, first);
      speed.push((first.json.ms + first.json.parseMs) / (first.arrow.ms + first.arrow.readMs));
    } finally {
      child.proc.stdin!.write('stop\n');
      await new Promise((ok) => child.proc.once('exit', ok));
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`first read, Arrow against JSON, median of ${rounds}: ${median(speed).toFixed(2)}x as fast (${speed.map((x) => x.toFixed(2)).join(', ')})`);
}

export async function run(): Promise<void> {
  const only = process.env.BENCH_FIRSTREAD_ONLY;
  if (only !== undefined && only !== 'on_first_read') throw new Error(`BENCH_FIRSTREAD_ONLY: only on_first_read is known, not ${JSON.stringify(only)}`);
  if (only !== undefined) return firstReadsOnly();
  const rows = ROWS;
  const parts = await encodingParts();
  console.log(`where the encoding of ${rows} rows x 8 columns goes (this process, the files instance's settings; machine shared):`);
  const both = parts.at(-1)!;
  for (const p of parts) {
    console.log(`  ${p.label}: ${fmt(p.wallMs)} (${ratio(p.wallMs, both.wallMs)} of all at once), process CPU ${fmt(p.cpuMs)}, of it fsync ${fmt(p.fsyncMs)} (wall)`);
  }
  const exec = await executionTimes();
  const show = (xs: ExecutionCost[]): string => xs.map((x) => `${fmt(x.ms)} (CPU ${fmt(x.cpuMs)})`).join(', ');
  const med = (xs: ExecutionCost[], k: keyof ExecutionCost): number => median(xs.map((x) => x[k]));
  console.log(
    `execution, ${EXEC_ROUNDS} turns on two services at once: encode_results at_completion ${show(exec.atCompletion)}; when_idle ${show(exec.whenIdle)}: ` +
      `at_completion/when_idle time ${ratio(med(exec.atCompletion, 'ms'), med(exec.whenIdle, 'ms'))}, service CPU ${ratio(med(exec.atCompletion, 'cpuMs'), med(exec.whenIdle, 'cpuMs'))} (medians)`,
  );
  const results: Array<{ label: string; r: Awaited<ReturnType<typeof reads>>; rss: number }> = [];
  // The page query baseline gets 512MiB of memory_limit: with the default 256MiB, a quarter of it
  // for the files instance, four concurrent page queries of 31,250 rows x 8 can fail with DuckDB's
  // out-of-memory error (500), which ended the bench.
  for (const [label, encodeMinBytes, engine] of [
    ['encoded on first read (encode_results: on_first_read, the default)', undefined, undefined],
    ['encoded as the execution\'s last step (encode_results: at_completion, the earlier default)', undefined, { encode_results: 'at_completion' }],
    ['not pre-encoded (the first read of a fresh result before: the page query; memory_limit 512MiB)', Number.MAX_SAFE_INTEGER, { memory_limit: '512MiB' }],
  ] as const) {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-first-read-'));
    const child = await startChild(dataDir, encodeMinBytes, engine);
    try {
      const r = await reads(child);
      results.push({ label, r, rss: peakRssMb(child.proc.pid!) });
    } finally {
      child.proc.stdin!.write('stop\n');
      await new Promise((ok) => child.proc.once('exit', ok));
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`first read of a fresh ${rows}-row x 8-column result, pages of the default size at concurrency 4 (machine shared: ratios only):`);
  for (const { label, r, rss } of results) {
    console.log(`${label}: execution ${fmt(r.a.execMs)} and ${fmt(r.b.execMs)}, submit to COMPLETED ${fmt(r.a.submitToDoneMs)} and ${fmt(r.b.submitToDoneMs)}; service peak RSS ${rss.toFixed(0)} MB`);
    report('first read', r.first);
    report('warm read ', r.warm);
  }
  const [now, atCompletion, before] = results as [(typeof results)[0], (typeof results)[0], (typeof results)[0]];
  const download = (x: (typeof results)[0]): string => ratio(x.r.first.json.ms, x.r.first.json.parseMs);
  const arrowSpeed = (x: (typeof results)[0]): string => ratio(x.r.first.json.ms + x.r.first.json.parseMs, x.r.first.arrow.ms + x.r.first.arrow.readMs);
  recordFigure('firstread-download', `${download(now)}; ${download(atCompletion)} at completion`);
  recordFigure('firstread-arrow', `${arrowSpeed(now)} as fast / ${arrowSpeed(atCompletion)}`);
  const endToEnd = (x: (typeof results)[0], f: 'json' | 'arrow'): number =>
    f === 'json' ? x.r.a.submitToDoneMs + x.r.first.json.ms : x.r.b.submitToDoneMs + x.r.first.arrow.ms;
  recordFigure('firstread-end-to-end', `${ratio(endToEnd(now, 'json'), endToEnd(atCompletion, 'json'))} / ${ratio(endToEnd(now, 'arrow'), endToEnd(atCompletion, 'arrow'))} the time`);
  for (const f of ['json', 'arrow'] as const) {
    console.log(
      `submit to the last ${f === 'json' ? 'JSON' : 'Arrow'} page of the first read: ${fmt(endToEnd(now, f))} on first read, ${fmt(endToEnd(atCompletion, f))} at completion ` +
        `(${ratio(endToEnd(now, f), endToEnd(atCompletion, f))}), ${fmt(endToEnd(before, f))} with the page query (${ratio(endToEnd(now, f), endToEnd(before, f))})`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
