import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sluice, startSluice } from '../cli/sluiceProcess.ts';
import { journalsLeft, otherCommits } from '../helpers/localOutput.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from './duck.ts';

// A quarantining export killed (SIGKILL) halfway, then run again: the run resumes the execution
// (no second one is paid for) and every row of the result ends up once, on one side.

let svc: TestService;
let dir: string;

beforeAll(async () => {
  // Small pages and some latency so that the export takes long enough to be killed halfway.
  svc = await startTestService({ sampleRows: 20_000, limits: { page_rows: 500 }, faults: { latency_ms: 40 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-quarantine-kill-'));
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

const BROKEN = '(amount > 9000 or not (quantity between 10 and 990))';

describe('quarantine across a kill', () => {
  it('a run killed mid-export and run again: same execution, each row once, on one side, nothing staged left', { timeout: 120_000 }, async () => {
    const out = join(dir, 'orders');
    const file = join(dir, 'jobs.yaml');
    await writeFile(
      file,
      `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: ${join(dir, 'state')}\njobs:\n  - name: killed\n    source: { sql: "select id, amount, quantity from sample.events order by id" }\n    concurrency: 1\n    expect:\n      on_violation: quarantine\n      checks:\n        amount: { max: 9000 }\n        quantity: { predicate: "quantity between 10 and 990" }\n    outputs:\n      - { format: parquet, path: ${out}, max_rows_per_file: 2000 }\n`,
    );
    const env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
    const first = startSluice(['run', file], { env });
    const [, executionId] = (await first.waitFor(/"execution started".*"execution_id":"(01[0-9A-Z]{24})"/)) as unknown as [string, string];
    // Killed once two parts of the output are staged: the middle of the export.
    const staged = () => otherCommits(out).flatMap((f) => readdirSync(join(dir, '.orders.sluice', 'v', f))).filter((n) => n.endsWith('.parquet')).length;
    const deadline = Date.now() + 60_000;
    while (staged() < 2 && first.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    expect((await first.done).signal).toBe('SIGKILL');
    expect(staged()).toBeGreaterThanOrEqual(2);

    const again = await sluice(['run', file, '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    const summary = JSON.parse(again.stdout) as { execution_id: string; started_execution: boolean; resumed: boolean; rows: number; contract: { quarantine: { rows: number }[] } };
    expect(summary).toMatchObject({ execution_id: executionId, started_execution: false, resumed: true });
    const bad = summary.contract.quarantine[0]!.rows;
    const [m] = await duck(`select count(*)::INT as rows, count(distinct id)::INT as ids, count(*) filter (where ${BROKEN})::INT as broken from read_parquet('${out}/*.parquet')`);
    const [q] = await duck(`select count(*)::INT as rows, count(distinct id)::INT as ids, count(*) filter (where not ${BROKEN})::INT as fine from read_parquet('${out}_quarantine/*.parquet')`);
    const [both] = await duck(`select count(*)::INT as n from read_parquet('${out}/*.parquet') m join read_parquet('${out}_quarantine/*.parquet') q using (id)`);
    expect(bad).toBeGreaterThan(0);
    expect({ m, q, overlap: both!.n }).toEqual({ m: { rows: 20_000 - bad, ids: 20_000 - bad, broken: 0 }, q: { rows: bad, ids: bad, fine: 0 }, overlap: 0 });
    expect(summary.rows).toBe(20_000 - bad);
    // No file the killed run staged is left, nor a journal. (A writer killed before its first file
    // leaves its empty commit folder, which no listing or sweep sees: the export's, not the contract's.)
    const left = (target: string) => [...otherCommits(target).flatMap((f) => readdirSync(join(dir, `.${target.split('/').at(-1)}.sluice`, 'v', f))), ...journalsLeft(target)];
    expect({ out: left(out), quarantine: left(`${out}_quarantine`) }).toEqual({ out: [], quarantine: [] });
  });
});
