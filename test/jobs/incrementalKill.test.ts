import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sluice, startSluice } from '../cli/sluiceProcess.ts';
import { duck } from './duck.ts';
import { client, dir, svc, useJobHarness } from './jobHarness.ts';
import { hasStagedPart, journalsLeft, otherCommits } from '../helpers/localOutput.ts';

// Small pages and some latency: the export of the new rows takes long enough to be killed halfway.
useJobHarness({ sampleRows: 10, limits: { page_rows: 250 }, faults: { latency_ms: 30 } }, 'sluice-incremental-kill-');
let env: Record<string, string>;
beforeAll(() => {
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});

function rows(n: number): string {
  const lines = ['id,note'];
  for (let i = 1; i <= n; i++) lines.push(`${i},row ${i}`);
  return `${lines.join('\n')}\n`;
}

async function manifest(out: string): Promise<{ total_rows: number; incremental: { value: string } }> {
  return JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
}

describe('incremental job killed between fetch and commit', () => {
  it('the next run neither skips nor duplicates rows', async () => {
    const { table_name: table } = await client.uploadCsv({ table_name: 'killed', data: rows(1000) });
    const out = join(dir, 'out');
    const file = join(dir, 'jobs.yaml');
    await writeFile(
      file,
      `connection: { base_url: "\${SERVICE_BASE_URL}" }
state_dir: ${join(dir, 'state')}
jobs:
  - name: killed
    source: { sql: "select id, note from ${table} where id > {{after}} order by id" }
    concurrency: 1
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: ${out}, mode: append, max_rows_per_file: 1000 }]
`,
    );
    const first = await sluice(['run', file], { env });
    expect(first.code, first.stderr).toBe(0);
    // The summary says what the run cost, what is left in the cycle, and where the cursor went.
    expect(first.stdout).toMatch(/^killed: 1,000 rows, 1 file, .*, 10 credits \([\d,]+ left in the cycle\) in /);
    expect(first.stdout).toMatch(/\n {2}cursor \(initial\) -> 1000\n/);

    await client.uploadCsv({ table_name: 'killed', data: rows(6000) });
    const killed = startSluice(['run', file], { env });
    await killed.waitFor(/"execution started"/);
    // Fetching: the run's first part is being written in its staging directory; nothing committed.
    const deadline = Date.now() + 30_000;
    const staged = () => hasStagedPart(out, '.parquet');
    while (!staged() && killed.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    killed.child.kill('SIGKILL');
    const result = await killed.done;
    expect(result.signal, result.stderr).toBe('SIGKILL');
    // The commit still says 1000 rows, up to id 1000.
    expect(await manifest(out)).toMatchObject({ total_rows: 1000, incremental: { value: '1000' } });

    const next = await sluice(['run', file, '--json'], { env });
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ rows: 5000 });
    expect(await manifest(out)).toMatchObject({ total_rows: 6000, incremental: { value: '6000' } });
    const counted = await duck(`select count(*) as n, count(distinct id) as ids, min(id) as lo, max(id) as hi from read_parquet('${out}/*.parquet')`);
    expect(counted).toEqual([{ n: '6000', ids: '6000', lo: '1', hi: '6000' }]);
    // What the killed run staged is gone.
    expect([...otherCommits(out), ...journalsLeft(out)]).toEqual([]);
    expect(existsSync(join(dir, 'state', 'killed.json'))).toBe(false);

    // The history (through the CLI): the two runs that finished, with their cursor ranges; a killed
    // process records nothing.
    const listed = await sluice(['runs', 'killed', '--file', file, '--json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    const runs = JSON.parse(listed.stdout) as { outcome: string; rows: number; cursor: { from: string | null; to: string } }[];
    expect(runs.map((r) => [r.outcome, r.rows, r.cursor])).toEqual([
      ['succeeded', 1000, { from: null, to: '1000' }],
      ['succeeded', 5000, { from: '1000', to: '6000' }],
    ]);
    const shown = await sluice(['runs', 'killed', '--file', file], { env });
    expect(shown.stdout).toMatch(/cursor/);
    expect(shown.stdout).toMatch(/1000 -> 6000/);
    expect(shown.stdout).toMatch(/start -> 1000/);
  });
});
