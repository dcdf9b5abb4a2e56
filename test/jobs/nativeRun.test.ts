// A job run against a service without Arrow pages (the real service: a proxy that speaks JSON only):
// its Parquet outputs are written natively (DuckDB, from the pages' text), with the default
// workers, and hold the rows a run over Arrow pages writes; a CSV output beside it goes the general way.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
import { startProxy } from '../helpers/proxy.ts';
import { duck } from './duck.ts';
import { client, dir, job, svc, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 3000, limits: { page_rows: 400 } }, 'sluice-native-run-');
let jsonOnly: ArrowProxy;
let jsonClient: ServiceClient;
beforeAll(async () => {
  jsonOnly = await startArrowProxy(svc.url, 'json');
  jsonClient = new ServiceClient({ baseUrl: jsonOnly.url, apiKey: svc.keys.demo.admin, env: {} });
});
afterAll(async () => {
  await jsonClient?.close();
  await jsonOnly?.close();
});

const signal = () => new AbortController().signal;
const createdBy = async (folder: string) => (await duck(`select distinct created_by from parquet_file_metadata('${folder}/*.parquet')`)).map((r) => String(r['created_by']));

describe('runJob over a JSON-only service', () => {
  it('writes Parquet outputs natively, the rows a run over Arrow pages writes; CSV the general way', async () => {
    const yaml = (suffix: string) =>
      job(`  - name: native${suffix}
    source: { sql: "select * from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/native/pq${suffix}", max_rows_per_file: 700 }
      - { format: parquet, path: "\${DIR}/native/one${suffix}" }
      - { format: csv, path: "\${DIR}/native/csv${suffix}" }
`);
    const arrow = await runJob(yaml('-arrow'), { client, stateDir: join(dir, 'state'), signal: signal() });
    const summary = await runJob(yaml(''), { client: jsonClient, stateDir: join(dir, 'state'), signal: signal(), executionId: arrow.executionId });
    expect(summary).toMatchObject({ rows: 3000, files: 7 });
    // The run's own record of the path each output took.
    expect(summary.outputs.map((o) => o.decode)).toEqual(['native', 'native', 'general']);
    expect(arrow.outputs.map((o) => o.decode)).toEqual(['general', 'general', 'general']);
    expect(await createdBy(join(dir, 'native', 'pq'))).toEqual([expect.stringMatching(/DuckDB/i)]);
    expect(await createdBy(join(dir, 'native', 'one'))).toEqual([expect.stringMatching(/DuckDB/i)]);
    expect(await createdBy(join(dir, 'native', 'pq-arrow'))).not.toEqual([expect.stringMatching(/DuckDB/i)]);
    for (const name of ['pq', 'one']) {
      const [same] = await duck(
        `select count(*)::int as n from ((select * from read_parquet('${dir}/native/${name}/*.parquet') except all select * from read_parquet('${dir}/native/${name}-arrow/*.parquet')) union all (select * from read_parquet('${dir}/native/${name}-arrow/*.parquet') except all select * from read_parquet('${dir}/native/${name}/*.parquet')))`,
      );
      expect(same).toEqual({ n: 0 });
      const [count] = await duck(`select count(*)::int as n, bool_and(id = rn - 1) as ordered from (select id, row_number() over () as rn from read_parquet('${dir}/native/${name}/*.parquet'))`);
      expect(count).toEqual({ n: 3000, ordered: true });
    }
  });

  it('asks for the first CSV pages while the first JSON page (the columns) is still on its way, and writes the files the old order writes', async () => {
    // The first JSON results page is held at a proxy until 4 CSV pages are asked for (or 3 s pass):
    // a run asking for its CSV pages only once it knows the columns waits the 3 s and asks after.
    let csvBeforeColumns = 0;
    let release: (() => void) | undefined;
    let jsonPages = 0;
    const csvAt: number[] = [];
    const isCsv = (url: string) => url.includes('/results/csv');
    const gate = await startProxy(
      jsonOnly.url,
      (url) => {
        if (isCsv(url)) {
          csvAt.push(Number(new URL(url, 'http://x').searchParams.get('offset')));
          if (csvAt.length >= 4) release?.();
        }
        return undefined;
      },
      async (url) => {
        if (!url.includes('/results') || isCsv(url) || jsonPages++ > 0) return;
        if (csvAt.length < 4) await new Promise<void>((resolve) => ((release = resolve), setTimeout(resolve, 3000).unref()));
        // The first JSON page's answer goes out now: how many CSV pages were asked for before it?
        csvBeforeColumns = csvAt.length;
      },
    );
    const gated = new ServiceClient({ baseUrl: gate.url, apiKey: svc.keys.demo.admin, env: {} });
    try {
      const first = await runJob(
        job(`  - name: head-ref
    source: { sql: "select * from sample.events order by id" }
    outputs: [{ format: csv, path: "\${DIR}/head/ref" }]
`),
        { client, stateDir: join(dir, 'state'), signal: signal() },
      );
      const summary = await runJob(
        job(`  - name: head
    source: { sql: "select * from sample.events order by id" }
    outputs: [{ format: parquet, path: "\${DIR}/head/new", max_rows_per_file: 700 }]
`),
        { client: gated, stateDir: join(dir, 'state'), signal: signal(), executionId: first.executionId },
      );
      expect(summary).toMatchObject({ rows: 3000, files: 5 });
      // The first page, and once it told the page size, the pages after it up to the 4 requests in flight.
      expect(csvBeforeColumns).toBe(4);
      // The page asked for early is the range read's first: no page is asked for twice.
      expect(csvAt.toSorted((a, b) => a - b)).toEqual(Array.from({ length: 8 }, (_, i) => i * 400));
      expect(await createdBy(join(dir, 'head', 'new'))).toEqual([expect.stringMatching(/DuckDB/i)]);
      // The old order: the columns first, then the CSV pages (a stream not told to start early).
      const s = stream(jsonClient, { executionId: first.executionId }, { pageSize: 400 });
      const info = await s.info();
      const output = resolveOutput({ format: 'parquet', path: join(dir, 'head', 'old'), max_rows_per_file: 700 }, builtins);
      await writeExport({ schema: await s.schema(), batches: s.batches(), meta: { executionId: info.executionId, totalRowCount: info.totalRows }, parts: await s.rangeReader() }, output, { native: 'csv' });
      expect(await digests(join(dir, 'head', 'new'))).toEqual(await digests(join(dir, 'head', 'old')));
    } finally {
      await gated.close();
      await gate.close();
    }
  });
});

/** Each Parquet file of a folder (name: sha-256), in name order. */
async function digests(folder: string): Promise<Record<string, string>> {
  const names = (await readdir(folder)).filter((n) => n.endsWith('.parquet')).sort();
  const out: Record<string, string> = {};
  for (const name of names) out[name] = createHash('sha256').update(await readFile(join(folder, name))).digest('hex');
  return out;
}
