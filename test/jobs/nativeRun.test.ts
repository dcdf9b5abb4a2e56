// A job run against a service without Arrow pages (the real service: a proxy that speaks JSON only):
// its Parquet outputs are written natively (DuckDB, from the pages' text), with the default
// workers, and hold the rows a run over Arrow pages writes; a CSV output beside it goes the general way.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
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
});
