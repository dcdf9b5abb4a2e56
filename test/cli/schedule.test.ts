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
    // No --health-host: loopback, and the log says so.
    const proc = startSluice(['schedule', file, '--health-port', '0', '--run-now'], { env });
    const [, url] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
    expect(logLines(proc.stderr()).find((l) => l.msg === 'health server listening')?.host).toBe('127.0.0.1');
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

    // The run history agrees with the metrics: one record per counted run, the same rows and credits.
    const listed = await startSluice(['runs', 'counted', '--file', file, '--json'], { env }).done;
    expect(listed.code).toBe(0);
    const runs = JSON.parse(listed.stdout) as { job: string; outcome: string; rows: number; credits: number }[];
    expect(runs.map((r) => [r.job, r.outcome, r.rows])).toEqual([['counted', 'succeeded', 1000]]);
    const credits = /sluice_job_credits_total\{job="counted"\} (\d+)/.exec(metrics)?.[1];
    expect(Number(credits)).toBe(runs[0]!.credits);
  });

  it('a scheduled run that fails is in the history and the metrics with the same credits', async () => {
    const file = await scheduleFile('failing', "select error('boom') from sample.events");
    const proc = startSluice(['schedule', file, '--health-port', '0', '--health-host', '127.0.0.1', '--run-now'], { env });
    const [, url] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
    await proc.waitFor(/boom/);
    let metrics = '';
    for (let i = 0; i < 50 && !metrics.includes('sluice_job_failures_total{job="failing"} 1'); i++) {
      metrics = await (await fetch(`${url}/metrics`)).text();
      if (!metrics.includes('sluice_job_failures_total{job="failing"} 1')) await new Promise((r) => setTimeout(r, 100));
    }
    expect(metrics).toContain('sluice_job_failures_total{job="failing"} 1');
    expect((await terminate(proc)).result.code).toBe(0);
    const listed = await startSluice(['runs', '--file', file, '--json'], { env }).done;
    // The state folder also holds the other file's job (counted): --file lists this file's jobs only.
    const runs = JSON.parse(listed.stdout) as { job: string; outcome: string; credits: number; error?: { code: string } }[];
    expect(runs.map((r) => [r.job, r.outcome, r.error?.code])).toEqual([['failing', 'failed', 'EXECUTION_FAILED']]);
    const all = await startSluice(['runs', '--state-dir', join(dir, 'state'), '--json'], { env }).done;
    expect(new Set((JSON.parse(all.stdout) as { job: string }[]).map((r) => r.job))).toEqual(new Set(['counted', 'failing']));
    const notThere = await startSluice(['runs', 'counted', '--file', file], { env }).done;
    expect(notThere.code).toBe(2);
    expect(notThere.stderr).toContain(`job "counted" is not in ${file} (its jobs: failing, manual)`);
    const credits = /sluice_job_credits_total\{job="failing"\} (\d+)/.exec(metrics)?.[1];
    expect(Number(credits)).toBe(runs[0]!.credits);
    // The text listing names the job, the outcome and the error.
    const text = await startSluice(['runs', 'failing', '--file', file], { env }).done;
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/failing\s+\|\s+failed\s+\|[^\n]*EXECUTION_FAILED: [^\n]*boom/);
  });

  it('sluice usage prints the cycle: credits used and left, executions, storage', async () => {
    const before = await (await fetch(`${svc.url}/v1/usage`, { headers: { 'X-Service-Api-Key': svc.keys.demo.admin } })).json() as { credits_used: number; credits_limit: number; executions: number };
    const text = await startSluice(['usage', '--base-url', svc.url], { env }).done;
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^team demo, billing cycle \S+ to \S+\n/);
    expect(text.stdout).toContain(`${before.credits_used.toLocaleString('en-US')} used of ${before.credits_limit.toLocaleString('en-US')}, ${(before.credits_limit - before.credits_used).toLocaleString('en-US')} left`);
    const json = await startSluice(['usage', '--base-url', svc.url, '--json'], { env }).done;
    expect(JSON.parse(json.stdout)).toMatchObject({ team: 'demo', executions: before.executions, credits_left: before.credits_limit - before.credits_used });
    // A key without the Admin scope is told so.
    const denied = await startSluice(['usage', '--base-url', svc.url], { env: { ...env, SERVICE_API_KEY: svc.keys.demo.read } }).done;
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/Admin/);
  });

  it('sluice runs with no history says so, and refuses a bad --last', async () => {
    const empty = await startSluice(['runs', '--state-dir', join(dir, 'nothing-here')], { env }).done;
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toMatch(/no runs recorded/);
    const bad = await startSluice(['runs', '--last', 'ten'], { env }).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--last must be a whole number of runs, got "ten"/);
  });

  it('on SIGTERM keeps the remote execution of a run in flight for the next run, and exits within the bound', async () => {
    const file = await scheduleFile('busy', 'select sum(a.i * b.i) as s from range(100000) a(i), range(100000) b(i)');
    const proc = startSluice(['schedule', file, '--run-now', '--grace-seconds', '5'], { env });
    const id = await startedExecutionId(proc);
    const { result, ms } = await terminate(proc);
    expect(result.code).toBe(0);
    expect(ms).toBeLessThan(10_000);
    expect(await executionState(svc.url, svc.keys.demo.admin, id)).toMatch(/^QUERY_STATE_(PENDING|EXECUTING)$/);
    expect(logLines(result.stderr).find((l) => /^stopped: kept execution/.test(String(l.msg)))).toMatchObject({ job: 'busy', execution_id: id });
    // It would run for minutes: cancelled by hand, as `sluice cancel` does.
    expect((await startSluice(['cancel', id], { env }).done).code).toBe(0);
  });

  it('a file without any scheduled job is a configuration error', async () => {
    const path = join(dir, 'none.yaml');
    await writeFile(path, 'jobs:\n  - name: a\n    source: { sql: "select 1" }\n    outputs: [{ format: csv, path: ./o }]\n');
    const result = await startSluice(['schedule', path], { env }).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no job has a schedule/);
  });
});
