// Two jobs exporting at once under a result store bound their results together pass (15 MiB, two
// 200,000-row results): before, the one read least recently expired under its reader and its run
// failed with `result expired ...; execute the query again`. Now both runs complete, and the store
// is back under its bound once they have read their results.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { call } from '../service/api.ts';
import { duck } from './duck.ts';
import { ServiceClient } from '../../src/client/serviceClient.ts';
import { dir, job, svc, useJobHarness } from './jobHarness.ts';

const BOUND = 15 * 1024 * 1024;
useJobHarness({ sampleRows: 200_000, walledTeams: false, limits: { result_store_max_bytes: BOUND } }, 'sluice-store-bound-');

describe('two jobs exporting at once under a small result store', () => {
  it('both complete; the store is bounded again once they are done', async () => {
    // As the embedded service's client is: told the service serves Arrow pages, so no CSV pages are
    // asked for ahead (a service answers those by encoding CSV, which would count in the store).
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {}, servesArrowPages: true });
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
    await client.close();
  }, 120_000);
});
