// `sluice schedule` on a service whose credits are spent: every run fails with PAYMENT_REQUIRED.
// /healthz stays 200 (the process is alive), /readyz says 503 and why, and the log says it once.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { logLines, startSluice, terminate } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 1000, creditsPerCycle: 0 });
  dir = await mkdtemp(join(tmpdir(), 'sluice-schedule-health-'));
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

describe('sluice schedule: readiness', () => {
  it('a job whose runs fail is failing on /readyz (503, PAYMENT_REQUIRED) while /healthz stays 200; said once in the log', async () => {
    const file = join(dir, 'jobs.yaml');
    await writeFile(file, `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: ${join(dir, 'state')}\njobs:\n  - name: broke\n    source: { sql: "select 1 as x" }\n    outputs: [{ format: csv, path: "${join(dir, 'out')}" }]\n    schedule: "0 0 1 1 *"\n`);
    const proc = startSluice(['schedule', file, '--health-port', '0', '--run-now', '--failing-after', '1'], { env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } });
    const [, url] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
    await proc.waitFor(/job failing/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'failing', failing_after: 1, failing: [{ job: 'broke', consecutive_failures: 1, last_error: { code: 'PAYMENT_REQUIRED' } }] });
    const status = (await (await fetch(`${url}/status`)).json()) as { jobs: { job: string; next_run_at: string }[] };
    expect(status.jobs.map((j) => [j.job, j.next_run_at])).toEqual([['broke', expect.stringMatching(/-01-01T00:00:00\.000Z$/)]]);
    const { result } = await terminate(proc);
    expect(result.code).toBe(0);
    const failing = logLines(result.stderr).filter((l) => /job failing/.test(String(l.msg)));
    expect(failing).toHaveLength(1);
    expect(failing[0]).toMatchObject({ job: 'broke', code: 'PAYMENT_REQUIRED' });
    expect(String(failing[0]!.msg)).toMatch(/credits for this billing cycle are spent: runs fail until the cycle ends \(`sluice usage` says when\)/);
  }, 60_000);

  it('refuses --failing-after 0', async () => {
    const result = await startSluice(['schedule', join(dir, 'jobs.yaml'), '--failing-after', '0'], { env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin } }).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--failing-after must be a whole number of runs, at least 1; got "0"/);
  });
});
