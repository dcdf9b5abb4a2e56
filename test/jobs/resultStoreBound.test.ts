// Two jobs exporting at once under a result store bound their results together pass (15 MiB, two
// 200,000-row results): before, the one read least recently expired under its reader and its run
// failed with `result expired ...; execute the query again`. Now both runs complete, and the store
// is back under its bound once they have read their results.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { call } from '../service/api.ts';
import { duck } from './duck.ts';
import { client, dir, job, svc, useJobHarness } from './jobHarness.ts';

const BOUND = 15 * 1024 * 1024;
useJobHarness({ sampleRows: 200_000, walledTeams: false, limits: { result_store_max_bytes: BOUND } }, 'sluice-store-bound-');

describe('two jobs exporting at once under a small result store', () => {
  it('both complete; the store is bounded again once they are done', async () => {
    const runs = ['first', 'second'].map((name) =>
      runJob(
        job(`  - name: ${name}
    source: { sql: "select * from sample.events" }
    outputs:
      - { format: parquet, path: "\${DIR}/${name}" }
`),
        { client, stateDir: join(dir, 'state'), signal: new AbortController().signal },
      ),
    );
    const summaries = await Promise.all(runs);
    expect(summaries.map((s) => s.rows)).toEqual([200_000, 200_000]);
    for (const name of ['first', 'second']) {
      const [row] = await duck(`select count(*)::int as n from read_parquet('${dir}/${name}/*.parquet')`);
      expect(row).toEqual({ n: 200_000 });
    }
    const deadline = Date.now() + 20_000;
    let bytes = (await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json.result_store_bytes;
    while (bytes > BOUND && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      bytes = (await call(svc, 'GET', '/v1/usage', { key: svc.keys.demo.admin })).json.result_store_bytes;
    }
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(BOUND);
  }, 120_000);
});
