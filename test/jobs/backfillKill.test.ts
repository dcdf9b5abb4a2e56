import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sluice, startSluice } from '../cli/sluiceProcess.ts';
import { duck } from './duck.ts';
import { client, dir, svc, useJobHarness } from './jobHarness.ts';
import { journalsLeft, localJournal, otherCommits } from '../helpers/localOutput.ts';

// Results over 20,000 bytes are truncated (the sixth week's is, its halves are not); some latency
// on every request keeps the backfill running long enough to be killed halfway.
useJobHarness({ limits: { max_result_bytes: 20_000, page_rows: 50 }, faults: { latency_ms: 40 } }, 'sluice-backfill-kill-');
let env: Record<string, string>;
beforeAll(() => {
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});

const SQL =
  "select id, day, repeat('x', 100) as note from (" +
  "select i as id, date '2026-01-05' + cast(i // 5 as integer) as day from range(0, 420) t(i) " +
  "union all select 1000 + i, date '2026-02-09' + cast(i % 7 as integer) from range(0, 200) t(i)" +
  ') where day >= {{start}} and day < {{end}} order by day, id';

interface ChunkRecord {
  from: string;
  to: string;
  state: 'running' | 'done' | 'split';
  execution_id: string;
}

function chunkRecords(file: string): ChunkRecord[] {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { chunks: ChunkRecord[] }).chunks;
  } catch {
    return []; // not written yet
  }
}

async function usage(): Promise<{ executions: number; credits: number }> {
  const u = await client.getUsage();
  return { executions: u.executions, credits: u.credits_used };
}

describe('a backfill killed halfway', () => {
  it('the next run reads or waits for every chunk the killed run executed, executes only the others, and commits every row once', async () => {
    const out = join(dir, 'out');
    const file = join(dir, 'jobs.yaml');
    const state = join(dir, 'state');
    await writeFile(
      file,
      `connection: { base_url: "\${SERVICE_BASE_URL}" }
state_dir: ${state}
jobs:
  - name: weeks
    source: { sql: "${SQL}" }
    backfill: { parameters: { from: start, to: end }, from: "2026-01-05", to: "2026-03-30", chunk: 7d, concurrency: 2 }
    outputs: [{ format: parquet, path: ${out}, max_rows_per_file: 100 }]
`,
    );
    const records = join(state, 'weeks.backfill.json');
    const start = await usage();
    const killed = startSluice(['run', file, '--log-format', 'json'], { env });
    // Killed once five chunks are done: others are running, the rest not started.
    const deadline = Date.now() + 60_000;
    while (chunkRecords(records).filter((c) => c.state === 'done').length < 5 && killed.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    killed.child.kill('SIGKILL');
    const result = await killed.done;
    expect(result.signal, result.stderr).toBe('SIGKILL');
    expect(existsSync(join(out, '_manifest.json'))).toBe(false);
    const left = chunkRecords(records);
    const recorded = left.length;
    expect(recorded).toBeGreaterThanOrEqual(5);
    // The killed run's executions go on without it: waited for until the service has settled
    // (charged) every one it recorded, so what the resumed run is charged can be told apart.
    for (const c of left) await client.execution(c.execution_id).wait({ allowPartialResults: true }).catch(() => undefined);
    const afterKill = await usage();

    // Planned before resuming: the chunks done are skipped, the rest to execute.
    const planned = await sluice(['run', file, '--plan', '--json'], { env });
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as { backfill: { execute: number; skip: number; chunks: { action: string; execution_id: string | null }[] } };
    // Every chunk done is read; a chunk still running at the kill may have finished since.
    const done = left.filter((c) => c.state === 'done').map((c) => c.execution_id);
    const skipped = plan.backfill.chunks.filter((c) => c.action !== 'execute').map((c) => c.execution_id!);
    expect(skipped.filter((id) => done.includes(id)).sort()).toEqual([...done].sort());
    expect(skipped.every((id) => left.some((c) => c.execution_id === id))).toBe(true);
    expect(plan.backfill.skip).toBe(skipped.length);

    const next = await sluice(['run', file, '--json'], { env });
    expect(next.code, next.stderr).toBe(0);
    const summary = JSON.parse(next.stdout) as { rows: number; credits: number; backfill: { chunks: number; executed: number; reused: number; splits: number } };
    const end = await usage();
    // What the resumed run reads or waits for: each recorded chunk not halved, except the one a
    // kill caught between its truncated result and its record of the split (halved now).
    const states = await Promise.all(left.filter((c) => c.state !== 'split').map((c) => client.getStatus(c.execution_id).then((s) => s.state)));
    const live = states.filter((s) => s !== 'QUERY_STATE_COMPLETED_PARTIAL').length;
    // Nothing the killed run recorded ran again: the killed run's recorded executions plus the
    // resumed run's new ones are exactly the 14 the backfill needs (12 chunks, one halved). The
    // service counted at most one more: one the killed run started but had not yet recorded (a
    // kill between the service's answer and the record), the only kind it can pay for in vain.
    expect(summary.backfill.reused).toBe(live);
    expect(recorded + summary.backfill.executed).toBe(14);
    const unrecorded = end.executions - start.executions - 14;
    expect(unrecorded).toBeGreaterThanOrEqual(0);
    expect(unrecorded).toBeLessThanOrEqual(1);
    expect(summary.credits).toBe(10 * summary.backfill.executed);
    // Charged since the kill: the resumed run's executions (and the unrecorded one, if any, settling late).
    expect(end.credits - afterKill.credits - 10 * summary.backfill.executed).toBeGreaterThanOrEqual(0);
    expect(end.credits - afterKill.credits - 10 * summary.backfill.executed).toBeLessThanOrEqual(10 * unrecorded);
    expect(summary.backfill.chunks).toBe(13);
    expect(summary.rows).toBe(620);
    console.log(`backfill kill: killed run ${recorded + unrecorded} executions (${recorded} recorded, ${done.length} done), resumed run ${summary.backfill.executed} executed, ${summary.backfill.reused} reused, credits ${afterKill.credits - start.credits} + ${end.credits - afterKill.credits}`);

    const counted = await duck(`select count(*) as n, count(distinct id) as ids from read_parquet('${out}/*.parquet')`);
    expect(counted).toEqual([{ n: '620', ids: '620' }]);
    expect(JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'))).toMatchObject({ total_rows: 620 });
    expect([...otherCommits(out), ...journalsLeft(out)]).toEqual([]);
    expect(existsSync(records)).toBe(false);
  });

  it('killed while writing: the next run keeps the parts written, reads on from their end, and executes nothing', async () => {
    const out = join(dir, 'parts');
    const file = join(dir, 'parts.yaml');
    const state = join(dir, 'state-parts');
    await writeFile(
      file,
      `connection: { base_url: "\${SERVICE_BASE_URL}" }
state_dir: ${state}
jobs:
  - name: parts
    source: { sql: "select i as id, repeat('y', 5) as note from range(0, 3000) t(i) where i >= {{lo}} and i < {{hi}} order by i" }
    backfill: { parameters: { from: lo, to: hi }, from: 0, to: 3000, chunk: 500, concurrency: 3 }
    concurrency: 1
    outputs: [{ format: parquet, path: ${out}, max_rows_per_file: 300 }]
`,
    );
    const start = await usage();
    const killed = startSluice(['run', file], { env });
    const deadline = Date.now() + 60_000;
    // Killed once the resume journal lists two finished parts (chunks 0 and 1 are being read).
    while ((await localJournal(out)).length < 2 && killed.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    killed.child.kill('SIGKILL');
    const killedResult = await killed.done;
    expect(killedResult.signal).toBe('SIGKILL');
    const afterKill = await usage();
    expect(afterKill.executions - start.executions).toBe(6);

    const next = await sluice(['run', file, '--json'], { env });
    expect(next.code, next.stderr).toBe(0);
    const summary = JSON.parse(next.stdout) as { rows: number; fetched_rows: number; credits: number; backfill: { executed: number; reused: number }; outputs: { resumed_files: number }[] };
    expect(summary.backfill).toMatchObject({ executed: 0, reused: 6 });
    expect(summary.credits).toBe(0);
    expect((await usage()).executions).toBe(afterKill.executions);
    expect(summary.rows).toBe(3000);
    expect(summary.outputs[0]!.resumed_files).toBeGreaterThan(0);
    expect(summary.fetched_rows).toBe(3000 - 300 * summary.outputs[0]!.resumed_files);
    console.log(`backfill kill while writing: ${summary.outputs[0]!.resumed_files} parts kept, ${summary.fetched_rows} rows fetched again, 0 executions`);
    expect(await duck(`select count(*) as n, count(distinct id) as ids, min(id) as lo, max(id) as hi from read_parquet('${out}/*.parquet')`)).toEqual([{ n: '3000', ids: '3000', lo: '0', hi: '2999' }]);
    expect([...otherCommits(out), ...journalsLeft(out)]).toEqual([]);
  });
});
