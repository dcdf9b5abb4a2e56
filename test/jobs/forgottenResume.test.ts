// A run whose interrupted predecessor left an execution the service has since forgotten (its record
// was deleted after limits.execution_record_retention_days) starts a fresh execution and says why.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { NotFoundError } from '../../src/client/errors.ts';
import { ManualClock } from '../../src/service/clock.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import type { ResumeDecision } from '../../src/jobs/run/runState.ts';
import { jobFingerprint, outputsFingerprint, RunStateStore } from '../../src/jobs/run/runState.ts';
import { duck } from './duck.ts';
import { client, dir, useJobHarness } from './jobHarness.ts';

const DAY = 86_400_000;
const clock = new ManualClock();
useJobHarness({ sampleRows: 100, clock, limits: { retention_days: 1, execution_record_retention_days: 1, sweep_interval_ms: 20 } }, 'sluice-forgotten-resume-');

function job(path: string): Job {
  const yaml = `jobs:\n  - name: forgotten\n    source: { sql: "select range::int as v from range(5) order by v" }\n    outputs:\n      - { format: csv, path: "${path}" }\n`;
  return parseJobFile(yaml, { file: 'test.yaml', registry: builtins, env: {} }).jobs[0]!;
}

describe('resuming a forgotten execution', () => {
  it('starts a fresh execution, says why, and exports every row', async () => {
    const out = join(dir, 'out');
    const stateDir = join(dir, 'state');
    const j = job(out);
    const execution = await client.execute({ sql: 'select range::int as v from range(5) order by v' });
    await execution.wait();
    // An interrupted run of this very job left that execution.
    await new RunStateStore(stateDir).write({
      version: 1,
      job: 'forgotten',
      fingerprint: jobFingerprint(j),
      outputs: outputsFingerprint(j),
      execution_id: execution.id,
      started: true,
      started_at: '2026-01-01T00:00:00.000Z',
    });
    // Its result expires after a day, its record a day after that.
    clock.advance(2 * DAY + 1000);
    for (let i = 0; i < 500; i++) {
      const gone = await client.getStatus(execution.id).then(() => false, (e: unknown) => e instanceof NotFoundError);
      if (gone) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await expect(client.getStatus(execution.id)).rejects.toBeInstanceOf(NotFoundError);

    const decisions: ResumeDecision[] = [];
    const summary = await runJob(j, { client, stateDir, signal: new AbortController().signal, events: { onResume: (d) => decisions.push(d) } });
    expect(summary).toMatchObject({ resumed: false, startedExecution: true, rows: 5 });
    expect(summary.executionId).not.toBe(execution.id);
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ resume: false, executionId: execution.id });
    expect(decisions[0]!.resume === false && decisions[0]!.reason).toMatch(
      /^the service no longer knows its execution \(.*404 Object not found: the service keeps an execution's record 1 day after its result expires .*\); a fresh execution starts$/,
    );
    const rows = await duck(`select v::int as v from read_csv('${out}/*.csv') order by v`);
    expect(rows.map((r) => r.v)).toEqual([0, 1, 2, 3, 4]);
    // Nothing is left to resume.
    expect(await new RunStateStore(stateDir).read('forgotten')).toBeUndefined();
  });
});
