/**
 * src/types figures: lossless page parsing (fast path, exact path, bare JSON.parse baseline on
 * the same bytes), row decoding, and Arrow batch building for 1M rows x 8 columns; then the
 * JSON page decode of sample.events (rows and Arrow) as a ratio to bare JSON.parse (typesDecode.ts).
 * Run alone: `node --expose-gc bench/types.ts`.
 */
import { performance } from 'node:perf_hooks';
import { compileRowDecoder, createBatchBuilder, parseJsonLossless, type ColumnSpec } from '../src/types/index.ts';
import { parseJsonWithReviver } from '../src/types/json.ts';
import { runDecodeVsParse } from './typesDecode.ts';

const COLUMNS: ColumnSpec[] = [
  { name: 'id', type: 'bigint' },
  { name: 'user_name', type: 'varchar' },
  { name: 'amount', type: 'double' },
  { name: 'qty', type: 'integer' },
  { name: 'price', type: 'decimal(18, 4)' },
  { name: 'created_at', type: 'timestamp(3)' },
  { name: 'active', type: 'boolean' },
  { name: 'day', type: 'date' },
];

const PAGE_ROWS = 10_000;
const TOTAL_ROWS = 1_000_000;

/** One JSON page as the service writes it; `bigIds` puts ids beyond 2^53 in every row. */
function page(offset: number, bigIds: boolean): string {
  const rows: string[] = [];
  for (let i = offset; i < offset + PAGE_ROWS; i++) {
    const id = bigIds ? `${9_007_199_254_740_993n + BigInt(i)}` : `${1_000_000_000 + i}`;
    const day = 1 + (i % 28);
    rows.push(
      `{"id":${id},"user_name":"user_${i % 5000}","amount":${(i * 0.37).toFixed(2)},"qty":${i % 1000},` +
        `"price":"${i % 100000}.${String(i % 100).padStart(2, '0')}00","created_at":"2026-11-${String(day).padStart(2, '0')} 10:15:30.${String(i % 1000).padStart(3, '0')}",` +
        `"active":${i % 2 === 0},"day":"2026-11-${String(day).padStart(2, '0')}"}`,
    );
  }
  return (
    `{"execution_id":"01BENCH","state":"QUERY_STATE_COMPLETED","result":{"rows":[${rows.join(',')}],` +
    `"metadata":{"column_names":${JSON.stringify(COLUMNS.map((c) => c.name))},"column_types":${JSON.stringify(COLUMNS.map((c) => c.type))}}},"next_offset":${offset + PAGE_ROWS}}`
  );
}

/**
 * Rows per second of each function over `pages`, best of `rounds`. The functions take turns
 * within every round, so a busy neighbour on the machine slows all of them alike.
 */
function rates(pages: string[], fns: Array<(text: string) => unknown>, rounds = 7): number[] {
  const best = fns.map(() => Number.POSITIVE_INFINITY);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, k) => {
      const start = performance.now();
      for (const text of pages) fn(text);
      best[k] = Math.min(best[k]!, performance.now() - start);
    });
  }
  return best.map((ms) => (pages.length * PAGE_ROWS) / (ms / 1000));
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function rowsOf(parsed: unknown): unknown[] {
  const result = (parsed as { result?: { rows?: unknown } }).result;
  if (!Array.isArray(result?.rows)) throw new Error('bench page has no rows');
  return result.rows;
}

export async function run(): Promise<void> {
  const smallPages = Array.from({ length: 20 }, (_, i) => page(i * PAGE_ROWS, false));
  const bigPages = Array.from({ length: 20 }, (_, i) => page(i * PAGE_ROWS, true));
  const mb = Buffer.byteLength(smallPages[0]!) / 1e6;
  console.log(`types: JSON pages of ${PAGE_ROWS} rows x ${COLUMNS.length} columns, ${mb.toFixed(2)} MB each`);

  const plain = (t: string): unknown => JSON.parse(t);
  const [bare, fast] = rates(smallPages, [plain, parseJsonLossless]) as [number, number];
  const [bareBig, exactBig, reviverBig] = rates(bigPages, [plain, parseJsonLossless, parseJsonWithReviver], 5) as [
    number,
    number,
    number,
  ];
  console.log(`  page without ints > 2^53:`);
  console.log(`    JSON.parse (baseline)            ${fmt(bare)} rows/s`);
  console.log(`    parseJsonLossless (fast path)    ${fmt(fast)} rows/s  ${(fast / bare).toFixed(2)}x baseline`);
  console.log(`  page with an int > 2^53 in every row:`);
  console.log(`    JSON.parse (baseline, rounds)    ${fmt(bareBig)} rows/s`);
  console.log(`    parseJsonLossless (marker path)  ${fmt(exactBig)} rows/s  ${(exactBig / bareBig).toFixed(2)}x baseline`);
  console.log(`    reviver with context.source      ${fmt(reviverBig)} rows/s  ${(reviverBig / bareBig).toFixed(2)}x baseline (fallback only)`);

  // Decode and build 1M rows, page by page, timing each stage apart.
  const decode = compileRowDecoder(COLUMNS);
  const builder = createBatchBuilder(COLUMNS, { meta: { executionId: '01BENCH' } });
  const BATCH_ROWS = 65_536;
  let parseMs = 0;
  let decodeMs = 0;
  let buildMs = 0;
  let batches = 0;
  let offset = 0;
  const rssBefore = process.memoryUsage().rss;
  while (offset < TOTAL_ROWS) {
    const text = bigPages[(offset / PAGE_ROWS) % bigPages.length]!;
    let t = performance.now();
    const raw = rowsOf(parseJsonLossless(text));
    parseMs += performance.now() - t;
    t = performance.now();
    const rows = raw.map((r, i) => decode(r, offset + i));
    decodeMs += performance.now() - t;
    t = performance.now();
    for (const row of rows) {
      builder.append(row);
      if (builder.length === BATCH_ROWS) {
        builder.flush();
        batches++;
      }
    }
    buildMs += performance.now() - t;
    offset += PAGE_ROWS;
  }
  const t = performance.now();
  if (builder.length > 0) {
    builder.flush();
    batches++;
  }
  buildMs += performance.now() - t;
  const perSec = (ms: number): string => fmt(TOTAL_ROWS / (ms / 1000));
  console.log(`  1M rows x 8 columns (ids > 2^53), ${batches} batches of <= ${BATCH_ROWS} rows:`);
  console.log(`    parse  ${perSec(parseMs)} rows/s`);
  console.log(`    decode ${perSec(decodeMs)} rows/s (compileRowDecoder)`);
  console.log(`    build  ${perSec(buildMs)} rows/s (createBatchBuilder append + flush)`);
  console.log(`    all    ${perSec(parseMs + decodeMs + buildMs)} rows/s`);
  console.log(
    `  peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (RSS before the 1M-row run ${(rssBefore / 1e6).toFixed(0)} MB)`,
  );
  runDecodeVsParse();
}

if (import.meta.main) await run();
