// Engine benchmark: store a 1M-row x 8-column result, then serve it as JSON and CSV pages of
// 32,000 rows: pages/s, MB/s, first page against last page, and peak RSS. Baseline in the same
// run: a plain `SELECT count(*)` scan of the stored result's source table.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine } from '../src/service/engine/index.ts';

const ROWS = 1_000_000;
const PAGE = 32_000;

let peakRss = 0;
function sampleRss(): void {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-engine-'));
  const rssTimer = setInterval(sampleRss, 25);
  try {
    let t = performance.now();
    const engine = await openEngine({ dataDir, datasets: ['sample'], sampleRows: ROWS });
    console.log(`engine: sample dataset of ${ROWS} rows loaded in ${(performance.now() - t).toFixed(0)} ms`);
    const signal = new AbortController().signal;

    t = performance.now();
    const info = await engine.execute('SELECT * FROM sample.events ORDER BY id', { resultId: 'bench', signal });
    const storeMs = performance.now() - t;
    console.log(
      `engine: stored ${info.rowCount} rows x ${info.columnNames.length} cols (${mb(info.bytes)} MB as text) in ${storeMs.toFixed(0)} ms, ${((info.rowCount / storeMs) * 1000).toFixed(0)} rows/s`,
    );

    for (const format of ['json', 'csv'] as const) {
      const times: number[] = [];
      let bytes = 0;
      const start = performance.now();
      for (let offset = 0; offset < info.rowCount; offset += PAGE) {
        const p0 = performance.now();
        if (format === 'json') {
          const page = await engine.page('bench', { offset, limit: PAGE });
          bytes += Buffer.byteLength(page.rowsJson);
        } else {
          const page = await engine.csvPage('bench', { offset, limit: PAGE });
          bytes += Buffer.byteLength(page.csv);
        }
        times.push(performance.now() - p0);
        sampleRss();
      }
      const total = (performance.now() - start) / 1000;
      const sorted = [...times].sort((a, b) => a - b);
      console.log(
        `engine ${format}: ${times.length} pages of ${PAGE} rows in ${total.toFixed(2)} s: ${(times.length / total).toFixed(1)} pages/s, ${mb(bytes / total)} MB/s, ${((info.rowCount / total) / 1000).toFixed(0)}k rows/s; median page ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms`,
      );
      // First vs last: repeat each a few times so a cold cache does not decide the figure.
      const at = async (offset: number): Promise<number> => {
        const runs: number[] = [];
        for (let i = 0; i < 5; i += 1) {
          const p0 = performance.now();
          if (format === 'json') await engine.page('bench', { offset, limit: PAGE });
          else await engine.csvPage('bench', { offset, limit: PAGE });
          runs.push(performance.now() - p0);
        }
        return runs.sort((a, b) => a - b)[2]!;
      };
      const first = await at(0);
      const lastFull = await at(info.rowCount - PAGE);
      const tail = await at(990_000);
      console.log(
        `engine ${format}: full page at offset 0: ${first.toFixed(1)} ms, at offset ${info.rowCount - PAGE}: ${lastFull.toFixed(1)} ms (ratio ${(lastFull / first).toFixed(2)}); 10,000-row tail page at offset 990000: ${tail.toFixed(1)} ms`,
      );
    }

    t = performance.now();
    await engine.execute('SELECT count(*) FROM sample.events', { resultId: 'baseline', signal });
    console.log(`engine: baseline count(*) over the source: ${(performance.now() - t).toFixed(1)} ms`);
    sampleRss();
    console.log(`engine: peak RSS ${mb(peakRss)} MB`);
    await engine.close();
  } finally {
    clearInterval(rssTimer);
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
