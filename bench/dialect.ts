// DuneSQL translation cost: time per statement of the translator (the 298 statements of the
// conformance cases and a 3 KB query, each translated many times), the translator's memory (the
// heap its module and its work keep), and what the dialect adds to an execution: `SELECT 1` and
// a short aggregate executed by the engine as DuneSQL against as DuckDB SQL, in the same run.
// `npm run bench -- dialect`.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import { recordFigure } from './figures.ts';

const REPEAT = 200;
const EXECUTIONS = 20;
const ROUNDS = 7;

function heapMb(): number {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 1e6;
}

async function statements(): Promise<string[]> {
  const text = await readFile(new URL('../test/service/dialect/conformance.yaml', import.meta.url), 'utf8');
  const cases = Object.values(parse(text) as Record<string, { sql: string }[]>).flat();
  const job = parse(await readFile(new URL('../config/examples/dune-transfers.yaml', import.meta.url), 'utf8')) as {
    jobs: { source: { sql: string } }[];
  };
  const long = Array.from({ length: 8 }, () => job.jobs[0]!.source.sql).join('\nUNION ALL\n');
  return [...cases.map((c) => c.sql), long];
}

async function translation(): Promise<{ perStatementUs: number; longUs: number; heapDeltaMb: number }> {
  const sqls = await statements();
  const before = heapMb();
  const { translateDuneSql } = await import('../src/service/engine/dialect/translate.ts');
  for (const s of sqls) translateDuneSql(s); // warm up
  let t = performance.now();
  for (let r = 0; r < REPEAT; r++) for (const s of sqls.slice(0, -1)) translateDuneSql(s);
  const perStatementUs = ((performance.now() - t) * 1000) / (REPEAT * (sqls.length - 1));
  const long = sqls.at(-1)!;
  t = performance.now();
  for (let r = 0; r < REPEAT; r++) translateDuneSql(long);
  const longUs = ((performance.now() - t) * 1000) / REPEAT;
  console.log(`dialect: ${sqls.length - 1} statements (median ${[...sqls].sort((a, b) => a.length - b.length)[sqls.length >> 1]!.length} chars) translated in ${perStatementUs.toFixed(1)} us each; a ${long.length}-char query in ${longUs.toFixed(0)} us`);
  const heapDeltaMb = heapMb() - before;
  console.log(`dialect: heap kept by the translator's modules after ${REPEAT * sqls.length} translations: ${heapDeltaMb.toFixed(2)} MB`);
  return { perStatementUs, longUs, heapDeltaMb };
}

async function executions(): Promise<number> {
  const { openEngine } = await import('../src/service/engine/index.ts');
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-dialect-'));
  const engine = await openEngine({ dataDir, datasets: ['sample'], sampleRows: 10_000, duneSampleTransactions: 2_000 });
  const signal = new AbortController().signal;
  const sql = "SELECT name, count(*) AS n, approx_count_distinct(quantity) AS q FROM sample.events WHERE day >= DATE '2026-01-01' GROUP BY name ORDER BY n DESC LIMIT 10";
  let id = 0;
  const time = async (dialect: 'dunesql' | 'duckdb'): Promise<number> => {
    const t = performance.now();
    for (let i = 0; i < EXECUTIONS; i++) await engine.execute(sql, { resultId: `r${(id += 1)}`, signal, dialect });
    return (performance.now() - t) / EXECUTIONS;
  };
  try {
    // Alternated rounds, the median of each: the machine may be shared.
    const duckRuns: number[] = [];
    const duneRuns: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Each goes first in every other round: what one leaves behind (a checkpoint, garbage) is not always the other's cost.
      if (round % 2 === 0) {
        duckRuns.push(await time('duckdb'));
        duneRuns.push(await time('dunesql'));
      } else {
        duneRuns.push(await time('dunesql'));
        duckRuns.push(await time('duckdb'));
      }
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    const duck = median(duckRuns);
    const dune = median(duneRuns);
    console.log(`dialect: rounds (ms) duckdb ${duckRuns.map((x) => x.toFixed(0)).join(' ')}; dunesql ${duneRuns.map((x) => x.toFixed(0)).join(' ')}`);
    console.log(`dialect: an execution took ${dune.toFixed(2)} ms as DuneSQL, ${duck.toFixed(2)} ms as DuckDB SQL (${(dune / duck).toFixed(2)}x)`);
    return dune / duck;
  } finally {
    await engine.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const t = await translation();
  const ratio = await executions();
  recordFigure('dialect-translate', `${t.perStatementUs.toFixed(1)} us per statement (a ${'3 KB'} query ${t.longUs.toFixed(0)} us); ${t.heapDeltaMb.toFixed(1)} MB of heap`);
  recordFigure('dialect-execute', `${ratio.toFixed(2)}x the time`);
}
