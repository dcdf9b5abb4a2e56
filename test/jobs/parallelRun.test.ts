import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NotFoundError, ServiceClient } from '../../src/client/index.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { RunStateStore } from '../../src/jobs/run/runState.ts';
import { duck } from './duck.ts';
import { client, dir, job, svc, useJobHarness } from './jobHarness.ts';
import { journalsLeft, localJournal, otherCommits } from '../helpers/localOutput.ts';
import { startProxy } from '../helpers/proxy.ts';

// Jobs whose outputs are written by part threads (workers), against the real local service.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 400 } }, 'sluice-workers-');
const signal = () => new AbortController().signal;

/** Every file of a directory with its bytes, the manifest aside (it carries the time it was written). */
async function files(root: string): Promise<Record<string, string>> {
  const names = (await readdir(root)).filter((n) => n !== '_manifest.json').sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, (await readFile(join(root, n))).toString('base64')])));
}

describe('runJob with workers', () => {
  it('workers 1, 2 and 4: the same files byte for byte, every row once and in order', async () => {
    const split = (suffix: string) =>
      job(`  - name: split${suffix}
    source: { sql: "select id, name, amount, ts from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/split/pq${suffix}", max_rows_per_file: 700 }
      - { format: csv, path: "\${DIR}/split/csv${suffix}", max_rows_per_file: 1000 }
`);
    const first = await runJob(split(''), { client, stateDir: join(dir, 'state'), signal: signal(), workers: 1 });
    const pq = await files(join(dir, 'split', 'pq'));
    const csv = await files(join(dir, 'split', 'csv'));
    expect(Object.keys(pq)).toHaveLength(6); // 5 parts and _SUCCESS
    expect(Object.keys(csv)).toHaveLength(4);
    for (const workers of [2, 4]) {
      const progress: number[] = [];
      // The same execution, written again elsewhere by part threads.
      const summary = await runJob(split(`-${workers}`), {
        client,
        stateDir: join(dir, 'state'),
        signal: signal(),
        workers,
        executionId: first.executionId,
        events: { onProgress: (p) => progress.push(p.rows) },
      });
      expect(summary).toMatchObject({ rows: 3000, fetchedRows: 6000, files: 8 });
      expect(await files(join(dir, 'split', `pq-${workers}`))).toEqual(pq);
      expect(await files(join(dir, 'split', `csv-${workers}`))).toEqual(csv);
      // Progress from the part threads reaches the job's listener.
      expect(Math.max(...progress)).toBeGreaterThanOrEqual(3000);
    }
    const [check] = await duck(`select count(*)::int as n, count(distinct id)::int as ids, bool_and(id = rn - 1) as ordered from (select id, row_number() over () as rn from read_parquet('${dir}/split/pq-4/*.parquet'))`);
    expect(check).toEqual({ n: 3000, ids: 3000, ordered: true });
  });

  it('outputs without fixed part boundaries are written by one thread, with a warning that says why', async () => {
    const j = job(`  - name: mixed
    source: { sql: "select id, flag, amount from sample.events order by id" }
    workers: 4
    outputs:
      - { format: parquet, path: "\${DIR}/mixed/rolled", max_rows_per_file: 1000 }
      - { format: parquet, path: "\${DIR}/mixed/byflag", partition_by: [flag] }
      - { format: ndjson, path: "\${DIR}/mixed/whole" }
`);
    const warnings: string[] = [];
    const summary = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal(), events: { onWarning: (m) => warnings.push(m) } });
    expect(summary.outputs.map((o) => o.rows)).toEqual([3000, 3000, 3000]);
    expect(warnings).toEqual([
      expect.stringMatching(/mixed\/byflag: written by one thread \(partition_by decides files by values/),
      expect.stringMatching(/mixed\/whole: written by one thread \(without max_rows_per_file the output is one file/),
    ]);
    // The rolled output was read by the part threads, the others once on this thread: two reads.
    expect(summary.fetchedRows).toBe(6000);
    const [n] = await duck(`select count(*)::int as n from read_parquet('${dir}/mixed/byflag/**/*.parquet')`);
    expect(n).toEqual({ n: 3000 });
  });

  it('a stop keeps the parts the threads finished; the next run (other workers) writes only the rest, identical to one thread', async () => {
    const j = job(`  - name: stopped
    source: { sql: "select i as id, 'row ' || i as name from range(40000) t(i) order by i" }
    concurrency: 1
    outputs: [{ format: csv, path: "\${DIR}/stopped/out", max_rows_per_file: 2000 }]
`);
    const stateDir = join(dir, 'state-stopped');
    const parent = join(dir, 'stopped');
    const journal = (): Promise<{ path: string; first_row: number }[]> => localJournal(join(parent, 'out'));
    const controller = new AbortController();
    const poll = setInterval(() => void journal().then((parts) => parts.length >= 3 && controller.abort(new Error('SIGTERM'))), 2);
    const stopped = await runJob(j, { client, stateDir, signal: controller.signal, workers: 2 }).catch((e: unknown) => e).finally(() => clearInterval(poll));
    expect(String(stopped)).toContain('SIGTERM');
    const journaled = await journal();
    expect(journaled.length).toBeGreaterThanOrEqual(3);
    expect(journaled.length).toBeLessThan(20);
    expect(existsSync(join(parent, 'out'))).toBe(false);
    const state = await new RunStateStore(stateDir).read('stopped');
    expect(state).toBeDefined();

    const resumed = await runJob(j, { client, stateDir, signal: signal(), workers: 4 });
    expect(resumed).toMatchObject({ executionId: state!.execution_id, resumed: true, rows: 40000, files: 20 });
    expect(resumed.outputs[0]!.resumedFiles).toBe(journaled.length);
    expect(resumed.fetchedRows).toBe(40000 - journaled.length * 2000);
    const ref = job(`  - name: stopped-ref
    source: { sql: "select 1" }
    outputs: [{ format: csv, path: "\${DIR}/stopped-ref", max_rows_per_file: 2000 }]
`);
    const reference = await runJob(ref, { client, stateDir, signal: signal(), executionId: state!.execution_id, workers: 1 });
    expect(reference.rows).toBe(40000);
    const out = await files(join(parent, 'out'));
    expect(Object.keys(out)).toHaveLength(21);
    expect(out).toEqual(await files(join(dir, 'stopped-ref')));
    expect([...otherCommits(join(parent, 'out')), ...journalsLeft(join(parent, 'out'))]).toEqual([]);
  });

  it('a part that fails fails the export: the typed error of the thread, no output, no staging left', async () => {
    // A proxy that answers the page at row 1200 with a 404, as if the result were gone.
    const proxy = await startProxy(svc.url, (url) => (url.includes('/results') && /[?&]offset=1200(&|$)/.test(url) ? 404 : undefined));
    const proxied = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.admin, env: {} });
    try {
      const j = job(`  - name: broken
    source: { sql: "select id, name from sample.events order by id" }
    outputs: [{ format: parquet, path: "\${DIR}/broken/out", max_rows_per_file: 400 }]
`);
      const error = await runJob(j, { client: proxied, stateDir: join(dir, 'state'), signal: signal(), workers: 2 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).code).toBe('NOT_FOUND');
      expect(existsSync(join(dir, 'broken', 'out'))).toBe(false);
      expect([...otherCommits(join(dir, 'broken', 'out')), ...journalsLeft(join(dir, 'broken', 'out'))]).toEqual([]);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });
});
