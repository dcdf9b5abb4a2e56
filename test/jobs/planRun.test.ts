import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sluice } from '../cli/sluiceProcess.ts';
import { client, dir, svc, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 2000 }, 'sluice-plan-');

async function executionCount(): Promise<number> {
  return (await readdir(join(svc.dataDir, 'catalog', 'executions'))).filter((n) => n.endsWith('.json')).length;
}

describe('sluice run --plan', () => {
  it('says per job whether it would execute (and the credits) or reuse a stored result, with rows, bytes, parts and shards; executes nothing', async () => {
    const { query_id: queryId } = await client.createQuery({ name: 'events', query_sql: 'select id, quantity from sample.events' });
    const stored = await client.execute({ queryId });
    await stored.wait();
    const file = join(dir, 'jobs.yaml');
    await writeFile(
      file,
      [
        'connection:\n  base_url: ${SERVICE_BASE_URL}',
        `state_dir: ${join(dir, 'state')}`,
        'jobs:',
        '  - name: adhoc',
        '    source: { sql: "select 1 as x" }',
        '    budget: { max_credits: 5 }',
        `    outputs: [{ format: csv, path: ${join(dir, 'adhoc')} }]`,
        '  - name: saved',
        `    source: { latest: { query_id: ${queryId}, max_age_hours: 24 } }`,
        '    budget: { max_credits: 5 }',
        `    outputs: [{ format: parquet, path: ${join(dir, 'saved')}, max_rows_per_file: 300 }]`,
        '',
      ].join('\n'),
    );
    const env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
    const before = { executions: await executionCount(), credits: (await client.getUsage()).credits_used };

    const json = await sluice(['run', file, '--plan', '--json', '--shards', '2'], { env });
    expect(json.code, json.stderr).toBe(0);
    const [adhoc, saved] = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(adhoc).toMatchObject({ job: 'adhoc', action: 'execute', credits: 10, execution_id: null, rows: null, bytes: null, max_credits: 5, within_budget: false, shards: 2 });
    expect((adhoc!.outputs as Record<string, unknown>[])[0]).toMatchObject({ format: 'csv', action: 'write', parts: null, committed_execution: null });
    expect(saved).toMatchObject({ job: 'saved', action: 'reuse', credits: 0, execution_id: stored.id, rows: 2000, max_credits: 5, within_budget: true, shards: 2 });
    expect(saved!.bytes).toBeGreaterThan(0);
    expect((saved!.outputs as Record<string, unknown>[])[0]).toMatchObject({ format: 'parquet', action: 'write', parts: 7, rows_per_part: 300, parts_per_shard: [3, 4] });
    // Which decode path each output takes, as the service answers the result's first page: it serves Arrow pages, so Parquet the general way; CSV the general way whatever the service (and why).
    expect((saved!.outputs as Record<string, unknown>[])[0]!['decode']).toEqual({ path: 'general', why: expect.stringContaining('the service serves Arrow pages') });
    expect((adhoc!.outputs as Record<string, unknown>[])[0]!['decode']).toEqual({ path: 'general', why: expect.stringContaining('csv format') });

    const text = await sluice(['run', file, '--plan', '--job', 'adhoc'], { env });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('adhoc: would execute (10 credits): SQL runs anew on every run (medium tier)');
    expect(text.stdout).toContain('OVER max_credits 5');
    expect(text.stdout).toContain('decode: general (the csv format is written by its own encoder');

    // Nothing ran, nothing was charged, nothing was written.
    expect(await executionCount()).toBe(before.executions);
    expect((await client.getUsage()).credits_used).toBe(before.credits);
    expect((await readdir(dir)).sort()).toEqual(['jobs.yaml']);
  });
});
