/**
 * The JSON page decode against bare `JSON.parse` of the same page text: 1M rows of sample.events
 * (8 columns: bigint, timestamp(6) with time zone, varchar, double, decimal(18, 4), integer,
 * boolean, date) in pages of 31,250 rows, written as the local service writes them. Three paths,
 * each timed from the page text:
 * - rows: the page parsed (parseResultPage) and every row decoded (compileRowDecoder), as stream();
 * - batches: the same, into Arrow batches of one page each, the general path of batches();
 * - rows and batches read straight from the page text (parseResultPageText with compileTextRows or
 *   compileTextBatchReader), as stream() reads every page after the first;
 * and the baseline, bare `JSON.parse`, and the page parse alone (lossless parse and envelope check). Part of `npm run bench -- types`.
 */
import { performance } from 'node:perf_hooks';
import { parseResultPage, parseResultPageText } from '../src/client/result-page.ts';
import { arrowSchema } from '../src/types/arrow.ts';
import { compileJsonRowAppender, compileTextBatchReader } from '../src/types/batch.ts';
import { compileTextRows } from '../src/types/textRows.ts';
import { SAMPLE_EVENTS_COLUMNS } from '../src/service/engine/tables/sampleEvents.ts';
import { compileRowDecoder, createBatchBuilder, type ColumnSpec } from '../src/types/index.ts';

export const EVENT_COLUMNS: readonly ColumnSpec[] = SAMPLE_EVENTS_COLUMNS;

const PAGE_ROWS = 31_250;
const TOTAL_ROWS = 1_000_000;
const DISTINCT_PAGES = 4;

const two = (n: number): string => String(n).padStart(2, '0');

/** sample.events' row `i` as the service's JSON (see src/service/engine/tables/sampleEvents.ts). */
function eventRow(i: number): string {
  const us = i * 1_234_567;
  const t = new Date(Date.UTC(2026, 0, 1) + Math.floor(us / 1000));
  const ts =
    `${t.getUTCFullYear()}-${two(t.getUTCMonth() + 1)}-${two(t.getUTCDate())} ${two(t.getUTCHours())}:${two(t.getUTCMinutes())}:${two(t.getUTCSeconds())}` +
    `.${String(us % 1_000_000).padStart(6, '0')} UTC`;
  const value = ((i * 7919) % 100_000) / 100;
  const amount = (i * 104_729) % 100_000_000;
  const d = new Date(Date.UTC(2026, 0, 1 + (i % 365)));
  const day = `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  return (
    `{"id":${i},"ts":"${ts}","name":"event_${i % 1000}","value":${Number.isInteger(value) ? `${value}.0` : value},` +
    `"amount":"${Math.floor(amount / 10_000)}.${String(amount % 10_000).padStart(4, '0')}","quantity":${i % 1000},"flag":${i % 3 === 0},"day":"${day}"}`
  );
}

export function eventPage(offset: number): string {
  const rows: string[] = [];
  for (let i = offset; i < offset + PAGE_ROWS; i++) rows.push(eventRow(i));
  return (
    `{"execution_id":"01BENCH","query_id":0,"state":"QUERY_STATE_COMPLETED","is_execution_finished":true,"result":{"rows":[${rows.join(',')}],` +
    `"metadata":{"column_names":${JSON.stringify(EVENT_COLUMNS.map((c) => c.name))},"column_types":${JSON.stringify(EVENT_COLUMNS.map((c) => c.type))},` +
    `"row_count":${PAGE_ROWS},"result_set_bytes":0,"total_row_count":${TOTAL_ROWS},"total_result_set_bytes":0,"datapoint_count":${PAGE_ROWS * 8}}},"next_offset":${offset + PAGE_ROWS}}`
  );
}

/** Milliseconds of each function over 1M rows' worth of pages, best of `rounds`, taking turns. */
function times(pages: string[], fns: Array<(text: string, offset: number) => unknown>, rounds: number): number[] {
  const best = fns.map(() => Number.POSITIVE_INFINITY);
  const pageCount = Math.ceil(TOTAL_ROWS / PAGE_ROWS);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((fn, k) => {
      globalThis.gc?.();
      const start = performance.now();
      for (let p = 0; p < pageCount; p++) fn(pages[p % pages.length]!, p * PAGE_ROWS);
      best[k] = Math.min(best[k]!, performance.now() - start);
    });
  }
  return best;
}

export function runDecodeVsParse(rounds = 3): void {
  // Flat strings, as a page decoded from its HTTP body is (a string built by concatenation reads slower).
  const pages = Array.from({ length: DISTINCT_PAGES }, (_, p) => Buffer.from(eventPage(p * PAGE_ROWS)).toString());
  const pageCount = Math.ceil(TOTAL_ROWS / PAGE_ROWS);
  const mb = (pages.reduce((n, t) => n + Buffer.byteLength(t), 0) / pages.length) * pageCount / 2 ** 20;
  console.log(`\n  JSON page decode vs bare JSON.parse: ${pageCount} pages of ${PAGE_ROWS} rows of sample.events (${mb.toFixed(0)} MB), best of ${rounds}:`);

  const bare = (text: string): unknown => JSON.parse(text);
  const rowDecode = compileRowDecoder(EVENT_COLUMNS);
  const rows = (text: string, offset: number): unknown => {
    const page = parseResultPage({ text }, {});
    const raw = page.result!.rows;
    let last: unknown;
    for (let i = 0; i < raw.length; i++) last = rowDecode(raw[i], offset + i);
    return last;
  };
  const builder = createBatchBuilder(EVENT_COLUMNS, { meta: { executionId: '01BENCH' } });
  const append = compileJsonRowAppender(builder, EVENT_COLUMNS);
  const batches = (text: string, offset: number): unknown => {
    const page = parseResultPage({ text }, {});
    append(page.result!.rows, 0, PAGE_ROWS, offset);
    return builder.flush();
  };
  const parseOnly = (text: string): unknown => parseResultPage({ text }, {});
  const textRows = compileTextRows(EVENT_COLUMNS)!;
  const rowsFromText = (text: string): unknown => {
    const read = parseResultPageText({ text }, {}, (t) => textRows(t, 0, PAGE_ROWS));
    if (read === undefined) throw new Error('the text scanner gave up on a page of sample.events');
    return read.value.at(-1);
  };
  const textBatch = compileTextBatchReader(arrowSchema(EVENT_COLUMNS, { executionId: '01BENCH' }), EVENT_COLUMNS)!;
  const batchesFromText = (text: string, offset: number): unknown => {
    const read = parseResultPageText({ text }, {}, (t) => textBatch(t, 0, PAGE_ROWS, offset));
    if (read === undefined) throw new Error('the text scanner gave up on a page of sample.events');
    return read.value;
  };
  const [bareMs, parseMs, rowsMs, batchesMs, textRowsMs, textBatchesMs] = times(pages, [bare, parseOnly, rows, batches, rowsFromText, batchesFromText], rounds) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const line = (label: string, ms: number): void =>
    console.log(`    ${label.padEnd(44)} ${(ms / 1000).toFixed(2)} s per 1M rows  ${(ms / bareMs).toFixed(2)}x JSON.parse`);
  line('JSON.parse (baseline)', bareMs);
  line('page parse alone (parseResultPage)', parseMs);
  line('rows: page parse + compileRowDecoder', rowsMs);
  line('batches: page parse + decode + Arrow build', batchesMs);
  line('rows read from the page text', textRowsMs);
  line('batches read from the page text', textBatchesMs);
}
