import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { logLines, sluice, startSluice } from '../cli/sluiceProcess.ts';
import { duck } from './duck.ts';

let svc: TestService;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  // Small pages and some latency so that the export takes long enough to be killed halfway.
  svc = await startTestService({ sampleRows: 20_000, limits: { page_rows: 500 }, faults: { latency_ms: 40 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-resume-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

const jobYaml = (out: string) => `connection:
  base_url: \${SERVICE_BASE_URL}
state_dir: ${join(dir, 'state')}
jobs:
  - name: resumable
    source: { sql: "select * from sample.events order by id" }
    concurrency: 1
    outputs:
      - format: parquet
        path: ${out}
        max_rows_per_file: 2000
`;

/** Every file of a directory with its sha256, manifest aside (it carries the time it was written). */
async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(root, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(root, name);
    if (name === '_manifest.json' || !statSync(path).isFile()) continue;
    out[name] = createHash('sha256').update(await readFile(path)).digest('hex');
  }
  return out;
}

function stagingFiles(target: string): number {
  const parent = dirname(target);
  if (!existsSync(parent)) return 0;
  return readdirSync(parent)
    .filter((n) => n.includes('sluice-staging'))
    .reduce((n, d) => n + readdirSync(join(parent, d), { recursive: true }).length, 0);
}

describe('resume after a kill', () => {
  it('the next run resumes the same execution and its output is identical to an uninterrupted run', async () => {
    const out = join(dir, 'out', 'events');
    const file = join(dir, 'jobs.yaml');
    await writeFile(file, jobYaml(out));

    const first = startSluice(['run', file], { env });
    const [, executionId] = (await first.waitFor(/"execution started".*"execution_id":"(01[0-9A-Z]{24})"/)) as unknown as [string, string];
    // Kill -9 once some part files are staged: the middle of the export, nothing committed yet.
    const deadline = Date.now() + 30_000;
    while (stagingFiles(out) < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(stagingFiles(out)).toBeGreaterThanOrEqual(2);
    first.child.kill('SIGKILL');
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    expect(existsSync(join(out, '_SUCCESS'))).toBe(false);
    expect(JSON.parse(await readFile(join(dir, 'state', 'resumable.json'), 'utf8'))).toMatchObject({ execution_id: executionId });

    const second = await sluice(['run', file, '--json'], { env });
    expect(second.code).toBe(0);
    const summary = JSON.parse(second.stdout) as { execution_id: string; resumed: boolean; credits: number; rows: number; files: number };
    expect(summary).toMatchObject({ execution_id: executionId, resumed: true, credits: 0, rows: 20_000, files: 10 });
    expect(logLines(second.stderr).some((l) => l.msg === 'resuming the execution of an interrupted run' && l.execution_id === executionId)).toBe(true);
    expect(existsSync(join(dir, 'state', 'resumable.json'))).toBe(false);

    // The reference: the same execution exported without interruption, into another directory.
    const refOut = join(dir, 'ref', 'events');
    const refFile = join(dir, 'ref.yaml');
    await writeFile(refFile, jobYaml(refOut));
    const ref = await sluice(['run', refFile, '--execution', executionId], { env });
    expect(ref.code).toBe(0);

    const resumed = await snapshot(out);
    expect(Object.keys(resumed)).toHaveLength(11); // 10 parts and _SUCCESS
    expect(resumed).toEqual(await snapshot(refOut));
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as { files: unknown[]; total_rows: number };
    const refManifest = JSON.parse(await readFile(join(refOut, '_manifest.json'), 'utf8')) as { files: unknown[]; total_rows: number };
    expect(manifest.files).toEqual(refManifest.files);
    expect(manifest.total_rows).toBe(20_000);
    const [check] = await duck(`select count(*)::int as n, count(distinct id)::int as ids, min(id)::int as lo, max(id)::int as hi from read_parquet('${out}/*.parquet')`);
    expect(check).toEqual({ n: 20_000, ids: 20_000, lo: 0, hi: 19_999 });
  });
});
