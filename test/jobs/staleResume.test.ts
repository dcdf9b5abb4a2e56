import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { formatSummary, summaryFields } from '../../src/cli/output/summary.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { DestinationError } from '../../src/kit/index.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { jobFingerprint, outputsFingerprint, RunStateStore } from '../../src/jobs/run/runState.ts';
import { duck } from './duck.ts';
import { client, dir, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 100 }, 'sluice-stale-resume-');

function job(name: string, table: string, path: string): Job {
  const yaml = `jobs:\n  - name: ${name}\n    source: { sql: "select v from ${table} order by v" }\n    outputs:\n      - { format: csv, path: "${path}" }\n`;
  return parseJobFile(yaml, { file: 'test.yaml', registry: builtins, env: {} }).jobs[0]!;
}

const signal = () => new AbortController().signal;
const values = async (path: string) => (await duck(`select v::int as v from read_csv('${path}/*.csv') order by v`)).map((r) => r.v);

describe('resume never exports stale data', () => {
  it('a run that failed in a way that would fail again leaves nothing to resume: the next run reads the changed upload', async () => {
    const { table_name: table } = await client.uploadCsv({ table_name: 'changing_a', data: 'v\n1\n2\n' });
    const out = join(dir, 'a');
    await mkdir(out, { recursive: true });
    await writeFile(join(out, 'precious.txt'), 'not ours');
    const stateDir = join(dir, 'state-a');
    const j = job('changing-a', table, out);
    // The destination refuses for good (a foreign file): after the execution ran, at commit.
    await expect(runJob(j, { client, stateDir, signal: signal() })).rejects.toBeInstanceOf(DestinationError);
    expect(await new RunStateStore(stateDir).read('changing-a')).toBeUndefined();

    await client.uploadCsv({ table_name: 'changing_a', data: 'v\n3\n4\n5\n' });
    await rm(join(out, 'precious.txt'));
    const summary = await runJob(j, { client, stateDir, signal: signal() });
    expect(summary).toMatchObject({ resumed: false, startedExecution: true, rows: 3 });
    expect(summary.resume).toBeUndefined();
    expect(await values(out)).toEqual([3, 4, 5]);
  });

  it('an interrupted run is resumed only by a run with the same outputs; a run to a new path reads the changed upload and says why', async () => {
    const { table_name: table } = await client.uploadCsv({ table_name: 'changing_b', data: 'v\n1\n2\n' });
    const oldPath = join(dir, 'b-old');
    const newPath = join(dir, 'b-new');
    const stateDir = join(dir, 'state-b');
    const interrupted = job('changing-b', table, oldPath);
    // An interrupted run (killed, or failed on the network) of the job with its old output left its execution.
    const execution = await client.execute({ sql: `select v from ${table} order by v` });
    await execution.wait();
    await new RunStateStore(stateDir).write({
      version: 1,
      job: 'changing-b',
      fingerprint: jobFingerprint(interrupted),
      outputs: outputsFingerprint(interrupted),
      execution_id: execution.id,
      started: true,
      started_at: '2026-01-01T00:00:00.000Z',
    });
    await client.uploadCsv({ table_name: 'changing_b', data: 'v\n7\n8\n9\n' });

    const decisions: unknown[] = [];
    const moved = job('changing-b', table, newPath);
    const summary = await runJob(moved, { client, stateDir, signal: signal(), events: { onResume: (d) => decisions.push(d) } });
    expect(summary).toMatchObject({ resumed: false, startedExecution: true, rows: 3 });
    expect(summary.executionId).not.toBe(execution.id);
    expect(decisions).toEqual([{ resume: false, executionId: execution.id, reason: "the job's outputs changed since", uncounted: true }]);
    expect(summaryFields(summary)).toMatchObject({ resume: { execution_id: execution.id, not_resumed: "the job's outputs changed since" } });
    expect(await values(newPath)).toEqual([7, 8, 9]);

    // The same job and outputs do resume it (that is what resume is for), and the summary says so.
    await new RunStateStore(stateDir).write({
      version: 1,
      job: 'changing-b',
      fingerprint: jobFingerprint(interrupted),
      outputs: outputsFingerprint(interrupted),
      execution_id: execution.id,
      started: true,
      started_at: '2026-01-01T00:00:00.000Z',
    });
    const resumed = await runJob(interrupted, { client, stateDir, signal: signal() });
    expect(resumed).toMatchObject({ resumed: true, executionId: execution.id, rows: 2 });
    expect(formatSummary(resumed)).toContain('(resumed from the interrupted run of 2026-01-01T00:00:00.000Z)');
    expect(await values(oldPath)).toEqual([1, 2]);
  });
});
