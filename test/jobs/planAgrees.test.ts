// `--plan` walks the first phases of the run it describes: for every output kind, what the plan
// says (execute, reuse or resume; the credits; skip or write; the parts; the cursor) is what the
// run then does, against the real local service and real outputs. Each case plans, runs, and
// plans and runs again, so both the first run (everything written) and the next (outputs that
// hold the execution skipped, or written again where the run writes again) are compared.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Job } from '../../src/config/index.ts';
import { BudgetExceededError } from '../../src/jobs/errors.ts';
import { type JobPlan, planRun } from '../../src/jobs/plan/planRun.ts';
import { type JobSummary, runJob } from '../../src/jobs/run/runJob.ts';
import { RunStateStore, jobFingerprint, outputsFingerprint } from '../../src/jobs/run/runState.ts';
import { runShard, type ShardSummary } from '../../src/jobs/shards/runShard.ts';
import { duck } from './duck.ts';
import { client, dir, job, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 2500, limits: { page_rows: 500 } }, 'sluice-agree-');

const signal = () => new AbortController().signal;

/** A saved query with a stored result: a `latest` source reuses it, so the plan knows its rows. */
async function storedQuery(name: string, sql: string): Promise<{ queryId: number; executionId: string }> {
  const { query_id: queryId } = await client.createQuery({ name, query_sql: sql });
  const stored = await client.execute({ queryId });
  await stored.wait();
  return { queryId, executionId: stored.id };
}

function plan(j: Job, stateDir: string, more: { shards?: number; executionId?: string } = {}): Promise<JobPlan> {
  return planRun(j, { client, stateDir, signal: signal(), resume: true, ...more });
}

/** What the run did agrees with what the plan said it would do. */
function expectAgrees(p: JobPlan, s: JobSummary): void {
  expect({ execute: s.startedExecution, resume: s.resumed, credits: s.credits }).toEqual({ execute: p.action === 'execute', resume: p.action === 'resume', credits: p.credits });
  if (p.executionId !== undefined) expect(s.executionId).toBe(p.executionId);
  if (p.rows !== undefined && s.outputs.some((o) => !o.skipped)) expect(s.fetchedRows).toBe(p.rows);
  expect(s.outputs.map((o) => o.url)).toEqual(p.outputs.map((o) => o.url));
  expect(s.outputs.map((o) => (o.skipped ? 'skip' : 'write'))).toEqual(p.outputs.map((o) => o.action));
  p.outputs.forEach((o, i) => {
    if (o.action === 'write' && o.parts !== undefined) expect(s.outputs[i]!.files).toBe(o.parts);
  });
  if (p.cursor !== undefined) expect(s.cursor?.from).toBe(p.cursor.from);
}

async function planThenRun(j: Job, stateDir: string, more: { executionId?: string } = {}): Promise<{ plan: JobPlan; summary: JobSummary }> {
  const p = await plan(j, stateDir, more);
  const summary = await runJob(j, { client, stateDir, signal: signal(), ...more });
  expectAgrees(p, summary);
  return { plan: p, summary };
}

describe('the plan agrees with the run it describes', () => {
  it('manifest outputs: a new execution, then a stored result reused and written, then skipped', async () => {
    const adhoc = job(`  - name: adhoc
    source: { sql: "select id, amount from sample.events order by id" }
    outputs: [{ format: parquet, path: "\${DIR}/adhoc", max_rows_per_file: 1000 }]
`);
    const first = await planThenRun(adhoc, join(dir, 'state-adhoc'));
    expect(first.plan).toMatchObject({ action: 'execute', credits: 10 });
    // SQL executes anew every run: the next plan writes again, as the next run does.
    expect((await planThenRun(adhoc, join(dir, 'state-adhoc'))).plan.outputs[0]!.action).toBe('write');

    const { queryId, executionId } = await storedQuery('agree-manifest', 'select id, amount from sample.events order by id');
    const saved = job(`  - name: saved
    source: { latest: { query_id: ${queryId} } }
    outputs:
      - { format: parquet, path: "\${DIR}/saved/parquet", max_rows_per_file: 1000 }
      - { format: csv, path: "\${DIR}/saved/csv" }
`);
    const reuse = await planThenRun(saved, join(dir, 'state-saved'));
    expect(reuse.plan).toMatchObject({ action: 'reuse', credits: 0, executionId, rows: 2500 });
    expect(reuse.plan.outputs.map((o) => [o.action, o.parts])).toEqual([
      ['write', 3],
      ['write', 1],
    ]);
    const again = await planThenRun(saved, join(dir, 'state-saved'));
    expect(again.plan.outputs.map((o) => o.action)).toEqual(['skip', 'skip']);
  });

  it('an Iceberg table: the plan says skip where the run skips (the table still holds the execution)', async () => {
    const { queryId } = await storedQuery('agree-iceberg', 'select id, amount, name from sample.events order by id');
    const ice = job(`  - name: ice
    source: { latest: { query_id: ${queryId} } }
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/ice" }]
`);
    const first = await planThenRun(ice, join(dir, 'state-ice'));
    expect(first.plan.outputs[0]!.action).toBe('write');
    expect(first.summary.outputs[0]!.snapshot).toBeDefined();
    const again = await planThenRun(ice, join(dir, 'state-ice'));
    expect(again.plan.outputs[0]!.action).toBe('skip');
    expect(again.summary.outputs[0]).toMatchObject({ skipped: true, snapshot: first.summary.outputs[0]!.snapshot });
  });

  it('an appending Iceberg table: an execution appended before a later one is still in the table, and both plan and run skip it', async () => {
    const { queryId, executionId: older } = await storedQuery('agree-iceberg-append', 'select id, amount from sample.events order by id');
    const ice = job(`  - name: ice-append
    source: { latest: { query_id: ${queryId} } }
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/ice-append", mode: append }]
`);
    const stateDir = join(dir, 'state-ice-append');
    expect((await planThenRun(ice, stateDir)).plan.outputs[0]!.action).toBe('write');
    const newer = await client.execute({ queryId });
    await newer.wait();
    expect((await planThenRun(ice, stateDir)).plan).toMatchObject({ executionId: newer.id, outputs: [{ action: 'write' }] });
    // The table's current snapshot holds the newer execution; the older one is in an earlier snapshot.
    const again = await planThenRun(ice, stateDir, { executionId: older });
    expect(again.plan).toMatchObject({ action: 'reuse', executionId: older, outputs: [{ action: 'skip' }] });
  });

  it('an appending output: written once per execution, skipped for the execution it appended already', async () => {
    const { queryId } = await storedQuery('agree-append', 'select id, amount from sample.events order by id');
    const append = job(`  - name: appended
    source: { latest: { query_id: ${queryId} } }
    outputs: [{ format: parquet, path: "\${DIR}/append", mode: append }]
`);
    expect((await planThenRun(append, join(dir, 'state-append'))).plan.outputs[0]!.action).toBe('write');
    expect((await planThenRun(append, join(dir, 'state-append'))).plan.outputs[0]!.action).toBe('skip');
    const [n] = await duck(`select count(*)::int as n from read_parquet('${dir}/append/*.parquet')`);
    expect(n).toEqual({ n: 2500 });
  });

  it('an incremental job: the cursor the plan reads from is the one the run starts after', async () => {
    const table = (await client.uploadCsv({ table_name: 'agree_ticks', data: `id,label\n${Array.from({ length: 40 }, (_, i) => `${i + 1},t${i + 1}`).join('\n')}\n` })).table_name;
    const inc = job(`  - name: inc
    source: { sql: "select id, label from ${table} where id > {{after}} order by id" }
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: "\${DIR}/inc", mode: append }]
`);
    const first = await planThenRun(inc, join(dir, 'state-inc'));
    expect(first.plan.cursor).toMatchObject({ from: null, value: 0 });
    const again = await planThenRun(inc, join(dir, 'state-inc'));
    expect(again.plan.cursor).toMatchObject({ from: '40' });
    expect(again.summary.cursor).toEqual({ from: '40', to: '40' });
  });

  it('an interrupted run: the plan says resume, and the run resumes that execution at no new charge, counting the credits the killed run could not record', async () => {
    const j = job(`  - name: resumed
    source: { sql: "select id, amount from sample.events order by id" }
    outputs: [{ format: csv, path: "\${DIR}/resumed" }]
`);
    const old = await client.execute({ sql: 'select id, amount from sample.events order by id' });
    await old.wait();
    const stateDir = join(dir, 'state-resumed');
    await new RunStateStore(stateDir).write({ version: 1, job: 'resumed', fingerprint: jobFingerprint(j), outputs: outputsFingerprint(j), execution_id: old.id, started: true, started_at: new Date().toISOString() });
    const { plan: p } = await planThenRun(j, stateDir);
    expect(p).toMatchObject({ action: 'resume', executionId: old.id, credits: 10, rows: 2500, budget: { withinBudget: true } });
  });

  it('a latest source whose stored result is too old executes, and is held to max_credits as the plan says', async () => {
    const { queryId } = await storedQuery('agree-stale', 'select id from sample.events');
    const stale = job(`  - name: stale
    source: { latest: { query_id: ${queryId}, max_age_hours: 0.000001 } }
    budget: { max_credits: 5 }
    outputs: [{ format: csv, path: "\${DIR}/stale" }]
`);
    const stateDir = join(dir, 'state-stale');
    await new Promise((r) => setTimeout(r, 20)); // older than 3.6 ms
    const p = await plan(stale, stateDir);
    expect(p).toMatchObject({ action: 'execute', credits: 10, budget: { maxCredits: 5, withinBudget: false } });
    expect(p.reason).toMatch(/older than max_age_hours/);
    const before = (await client.getUsage()).credits_used;
    const error = await runJob(stale, { client, stateDir, signal: signal() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(String(error)).toMatch(/costs 10 credits \(medium tier\).*max_credits 5; nothing was started/);
    expect((await client.getUsage()).credits_used).toBe(before);
  });

  it('a sharded run: the parts each shard writes are the ones the plan gives it; a new run id writes again', async () => {
    const { queryId, executionId } = await storedQuery('agree-shards', 'select id, amount from sample.events order by id');
    const sharded = job(`  - name: sharded
    source: { latest: { query_id: ${queryId} } }
    outputs: [{ format: parquet, path: "\${DIR}/sharded", max_rows_per_file: 400 }]
`);
    for (const runId of ['run-a', 'run-b']) {
      const p = await plan(sharded, join(dir, 'state-sharded'), { shards: 3 });
      expect(p).toMatchObject({ action: 'reuse', credits: 0, executionId, rows: 2500, shards: 3 });
      // A sharded run replaces its output with a new plan: it never skips.
      expect(p.outputs[0]).toMatchObject({ action: 'write', parts: 7, rowsPerPart: 400, partsPerShard: [2, 2, 3] });
      const done: ShardSummary[] = [];
      for (let index = 0; index < 3; index++) done.push(await runShard(sharded, { client, signal: signal(), shard: { index, count: 3, runId, from: `--shard ${index}/3` } }));
      expect(done.map((s) => s.executionId)).toEqual([executionId, executionId, executionId]);
      expect(done.reduce((n, s) => n + s.credits, 0)).toBe(p.credits);
      expect(done.map((s) => s.outputs[0]!.parts)).toEqual(p.outputs[0]!.partsPerShard);
      expect(done.at(-1)!.outputs[0]!.commit).toBe('committed');
    }
    const [n] = await duck(`select count(*)::int as n from read_parquet('${dir}/sharded/*.parquet')`);
    expect(n).toEqual({ n: 2500 });
  });
});
