// A stopped run keeps its execution (a stop is not a cancel) and the next run resumes it, as after
// a kill; and whatever the outcome (completed, failed, stopped, killed, resumed), the credits the
// run history records add up to what the service charged (GET /v1/usage).
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { executionState, logLines, startedExecutionId, startSluice, terminate } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;
let env: Record<string, string>;

// Runs for a second or two on the test service: long enough to stop it while it runs.
const SLOW = 'select sum(a.i * b.i) as s from range(20000) a(i), range(20000) b(i)';

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 1000 });
  dir = await mkdtemp(join(tmpdir(), 'sluice-stop-keeps-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

async function jobFile(name: string, sql: string): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(path, `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: ${join(dir, 'state')}\njobs:\n  - name: ${name}\n    source: { sql: "${sql}" }\n    outputs: [{ format: csv, path: "${join(dir, 'out', name)}" }]\n`);
  return path;
}

async function usedCredits(): Promise<number> {
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  try {
    return (await client.getUsage()).credits_used;
  } finally {
    await client.close();
  }
}

async function history(): Promise<{ job: string; outcome: string; credits: number; resumed: boolean; execution_id?: string }[]> {
  const text = await readFile(join(dir, 'state', 'history.jsonl'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { job: string; outcome: string; credits: number; resumed: boolean });
}

async function waitEnded(id: string): Promise<string> {
  for (;;) {
    const state = await executionState(svc.url, svc.keys.demo.admin, id);
    if (state !== 'QUERY_STATE_PENDING' && state !== 'QUERY_STATE_EXECUTING') return state;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a stopped run keeps its execution; every credit is counted', () => {
  it('SIGTERM while the execution runs: exit 130, the execution is not cancelled, the log says what was kept; the next run resumes it and pays nothing more', async () => {
    const file = await jobFile('slow', SLOW);
    const proc = startSluice(['run', file], { env });
    const id = await startedExecutionId(proc);
    const { result } = await terminate(proc);
    expect(result.code, result.stderr).toBe(130);
    expect(await executionState(svc.url, svc.keys.demo.admin, id)).toMatch(/^QUERY_STATE_(PENDING|EXECUTING|COMPLETED)$/);
    const kept = logLines(result.stderr).find((l) => /^stopped: kept execution/.test(String(l.msg)));
    expect(kept, result.stderr).toMatchObject({ execution_id: id });
    expect(String(kept?.msg)).toMatch(/the next run of this job resumes it/);
    const state = JSON.parse(await readFile(join(dir, 'state', 'slow.json'), 'utf8')) as { execution_id: string };
    expect(state.execution_id).toBe(id);

    const next = await startSluice(['run', file], { env }).done;
    expect(next.code, next.stderr).toBe(0);
    expect(logLines(next.stderr).find((l) => l.msg === 'resuming the execution of an interrupted run')).toMatchObject({ execution_id: id });
    expect(await executionState(svc.url, svc.keys.demo.admin, id)).toBe('QUERY_STATE_COMPLETED');
    const runs = (await history()).filter((r) => r.job === 'slow');
    expect(runs.map((r) => [r.outcome, r.resumed])).toEqual([['stopped', false], ['succeeded', true]]);
  }, 120_000);

  it('credits in the run history equal the service usage for completed, failed, stopped (before and after the execution ended), killed and resumed runs', async () => {
    // Whatever the test before charged is in both: compare the whole history with the whole usage.
    const completed = await startSluice(['run', await jobFile('done', 'select 1 as x')], { env }).done;
    expect(completed.code, completed.stderr).toBe(0);

    const failed = await startSluice(['run', await jobFile('fails', "select cast('not a number' as integer) as x")], { env }).done;
    expect(failed.code).not.toBe(0);

    // Stopped just after its execution finished (the SQL takes no time): the service charged it.
    const quick = await jobFile('quick', 'select 2 as x');
    const stoppedLate = startSluice(['run', quick], { env });
    await startedExecutionId(stoppedLate);
    stoppedLate.child.kill('SIGTERM');
    await stoppedLate.done;

    // Stopped while it runs, then the execution ends on its own before the next run.
    const slow = await jobFile('slow2', SLOW);
    const stopped = startSluice(['run', slow], { env });
    const slowId = await startedExecutionId(stopped);
    await terminate(stopped);
    await waitEnded(slowId);
    const resumed = await startSluice(['run', slow], { env }).done;
    expect(resumed.code, resumed.stderr).toBe(0);

    // Killed while it runs: no history record; the run resuming it counts its credits.
    const killedFile = await jobFile('killed', SLOW);
    const killed = startSluice(['run', killedFile], { env });
    await startedExecutionId(killed);
    // The run state is written as the execution is logged; a kill in between leaves nothing to resume.
    await new Promise((r) => setTimeout(r, 300));
    killed.child.kill('SIGKILL');
    await killed.done;
    const afterKill = await startSluice(['run', killedFile], { env }).done;
    expect(afterKill.code, afterKill.stderr).toBe(0);
    // A stopped run whose execution the next run finds finished is resumed too.
    const again = await startSluice(['run', quick], { env }).done;
    expect(again.code, again.stderr).toBe(0);

    const runs = await history();
    const recorded = runs.reduce((sum, r) => sum + r.credits, 0);
    expect(new Set(runs.map((r) => r.outcome))).toEqual(new Set(['succeeded', 'failed', 'stopped']));
    expect(runs.some((r) => r.resumed)).toBe(true);
    expect(recorded, JSON.stringify(runs.map((r) => [r.job, r.outcome, r.resumed, r.credits]))).toBe(await usedCredits());
  }, 240_000);
});
