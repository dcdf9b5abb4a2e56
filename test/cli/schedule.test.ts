import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { executionState, logLines, startedExecutionId, startSluice, terminate } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 1000 });
  dir = await mkdtemp(join(tmpdir(), 'sluice-schedule-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, OUT: dir };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

async function scheduleFile(name: string, sql: string): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(
    path,
    `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: \${OUT}/state\njobs:\n  - name: ${name}\n    source: { sql: "${sql}" }\n    outputs: [{ format: csv, path: "\${OUT}/${name}" }]\n    schedule: "*/15 * * * *"\n  - name: manual\n    source: { sql: "select 1" }\n    outputs: [{ format: csv, path: "\${OUT}/manual" }]\n`,
  );
  return path;
}

describe('sluice schedule (spawned)', () => {
  it('serves /healthz and /metrics, runs jobs, and exits 0 promptly on SIGTERM', async () => {
    const file = await scheduleFile('counted', 'select * from sample.events');
    const proc = startSluice(['schedule', file, '--health-port', '0', '--health-host', '127.0.0.1', '--run-now'], { env });
    const [, url] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
    await proc.waitFor(/"job finished"/);
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('sluice_job_runs_total{job="counted"} 1');
    expect(metrics).toContain('sluice_job_rows_total{job="counted"} 1000');
    expect(metrics).toContain('sluice_job_failures_total{job="counted"} 0');
    // The unscheduled job is not run by the scheduler, and says so.
    expect(metrics).not.toContain('job="manual"');
    expect(logLines(proc.stderr()).find((l) => l.job === 'manual')?.msg).toMatch(/no schedule/);
    const next = logLines(proc.stderr()).find((l) => l.msg === 'scheduled');
    expect(String(next?.next)).toMatch(/T\d\d:(00|15|30|45):00\.000Z$/);

    const { result, ms } = await terminate(proc);
    expect(result.code).toBe(0);
    expect(ms).toBeLessThan(10_000);
    expect(logLines(result.stderr).some((l) => l.msg === 'stopped')).toBe(true);
  });

  it('on SIGTERM cancels the remote execution of a run in flight and still exits within the bound', async () => {
    const file = await scheduleFile('busy', 'select sum(a.i * b.i) as s from range(100000) a(i), range(100000) b(i)');
    const proc = startSluice(['schedule', file, '--run-now', '--grace-seconds', '5'], { env });
    const id = await startedExecutionId(proc);
    const { result, ms } = await terminate(proc);
    expect(result.code).toBe(0);
    expect(ms).toBeLessThan(10_000);
    expect(await executionState(svc.url, svc.keys.demo.admin, id)).toBe('QUERY_STATE_CANCELED');
  });

  it('a file without any scheduled job is a configuration error', async () => {
    const path = join(dir, 'none.yaml');
    await writeFile(path, 'jobs:\n  - name: a\n    source: { sql: "select 1" }\n    outputs: [{ format: csv, path: ./o }]\n');
    const result = await startSluice(['schedule', path], { env }).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no job has a schedule/);
  });
});
