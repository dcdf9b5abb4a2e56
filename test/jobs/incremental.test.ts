import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { RunHistory } from '../../src/jobs/run/runHistory.ts';
import { type JobSummary, runJob } from '../../src/jobs/run/runJob.ts';
import { planRun } from '../../src/jobs/plan/planRun.ts';
import { formatPlan, planFields } from '../../src/cli/output/shardSummary.ts';
import { ManualClock } from '../../src/scheduler/manualClock.ts';
import { Scheduler } from '../../src/scheduler/scheduler.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { icebirdRead } from '../helpers/icebird.ts';
import { client, dir, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 100 }, 'sluice-incremental-');
let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('sync');
});
afterAll(async () => {
  await s3?.stop();
});

/** CSV of rows 1..n: id, a timestamp one minute apart, a label. */
function ticks(n: number, from = 1): string {
  const lines = ['id,ts,label'];
  for (let i = from; i <= n; i++) lines.push(`${i},${new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().replace('T', ' ').replace('Z', '')},tick ${i}`);
  return `${lines.join('\n')}\n`;
}

async function upload(table: string, csv: string): Promise<string> {
  return (await client.uploadCsv({ table_name: table, data: csv })).table_name;
}

function job(yaml: string): Job {
  return parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir, S3_ENDPOINT: s3.endpoint, AWS_REGION: s3.region } }).jobs[0]!;
}

const run = (j: Job, stateDir: string): Promise<JobSummary> => runJob(j, { client, stateDir, signal: new AbortController().signal });

async function parquetIds(out: string): Promise<number[]> {
  const rows = await duck(`select id from read_parquet('${out}/*.parquet', union_by_name = true) order by id`);
  return rows.map((r) => Number(r.id));
}

async function manifest(out: string): Promise<{ files: { path: string; rows: number }[]; total_rows: number; mode: string; job: string; incremental: { column: string; type: string; value: string; window?: unknown[] } }> {
  return JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
}

describe('incremental jobs', () => {
  it('a scheduled job over a growing upload fetches only the new rows each run; the output holds each row once', async () => {
    const table = await upload('ticks_sched', ticks(50));
    const out = join(dir, 'sched');
    const stateDir = join(dir, 'state-sched');
    const j = job(`  - name: ticks
    source: { sql: "select id, ts, label from ${table} where ts > {{since}} order by ts" }
    schedule: "*/15 * * * *"
    incremental: { cursor: ts, parameter: since, initial: "2000-01-01 00:00:00" }
    outputs: [{ format: parquet, path: "\${DIR}/sched", mode: append }]
`);
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const summaries: JobSummary[] = [];
    let finished: () => void = () => undefined;
    const scheduler = new Scheduler({
      jobs: [{ name: j.name, schedule: j.schedule! }],
      clock,
      run: async (_name, signal) => {
        try {
          const s = await runJob(j, { client, stateDir, signal });
          summaries.push(s);
          return { rows: s.rows, bytes: s.bytes, credits: s.credits };
        } finally {
          finished();
        }
      },
    });
    const tick = async (at: string): Promise<JobSummary> => {
      const done = new Promise<void>((resolve) => (finished = resolve));
      await clock.advanceTo(at);
      await done;
      return summaries.at(-1)!;
    };
    scheduler.start();
    try {
      const first = await tick('2026-01-01T00:15:00Z');
      expect(first).toMatchObject({ rows: 50, fetchedRows: 50, cursor: { from: null, to: '2026-01-01 00:50:00.000000' } });
      expect(await parquetIds(out)).toEqual(range(1, 50));

      await upload('ticks_sched', ticks(80));
      const second = await tick('2026-01-01T00:30:00Z');
      // Only the 30 new rows were fetched from the service, and appended under the new execution's names.
      expect(second).toMatchObject({ rows: 30, fetchedRows: 30, cursor: { from: '2026-01-01 00:50:00.000000', to: '2026-01-01 01:20:00.000000' } });
      expect(await parquetIds(out)).toEqual(range(1, 80));
      const m = await manifest(out);
      expect(m).toMatchObject({ mode: 'append', job: 'ticks', total_rows: 80, incremental: { column: 'ts', value: '2026-01-01 01:20:00.000000' } });
      expect(m.files.map((f) => f.rows)).toEqual([50, 30]);
      expect(m.files.map((f) => f.path)).toEqual([`part-00000-${first.executionId}.parquet`, `part-00000-${second.executionId}.parquet`]);

      // Nothing new: nothing fetched, nothing committed (the manifest is the same file).
      const before = await readFile(join(out, '_manifest.json'), 'utf8');
      const third = await tick('2026-01-01T00:45:00Z');
      expect(third).toMatchObject({ rows: 0, fetchedRows: 0, files: 0 });
      expect(await readFile(join(out, '_manifest.json'), 'utf8')).toBe(before);

      await upload('ticks_sched', ticks(100));
      const fourth = await tick('2026-01-01T01:00:00Z');
      expect(fourth).toMatchObject({ rows: 20, fetchedRows: 20 });
      expect(await parquetIds(out)).toEqual(range(1, 100));
      const names = (await readdir(out)).sort();
      expect(names).toEqual([...(await manifest(out)).files.map((f) => f.path), '_SUCCESS', '_manifest.json'].sort());
      // The history records each run's cursor range.
      const history = await new RunHistory(stateDir).list({ job: 'ticks' });
      expect(history.map((r) => [r.rows, r.cursor?.to])).toEqual([
        [50, '2026-01-01 00:50:00.000000'],
        [30, '2026-01-01 01:20:00.000000'],
        [0, '2026-01-01 01:20:00.000000'],
        [20, '2026-01-01 01:40:00.000000'],
      ]);
    } finally {
      await scheduler.stop(5000);
    }
  });

  it('--plan shows the cursor value the next run would read from: the initial one, then past the committed one less the lookback', async () => {
    const table = await upload('ticks_plan', ticks(20));
    const j = job(`  - name: planned
    source: { sql: "select id, ts, label from ${table} where ts > {{since}} order by ts" }
    incremental: { cursor: ts, parameter: since, initial: "2000-01-01 00:00:00", lookback: 5m, key: [id] }
    outputs: [{ format: parquet, path: "\${DIR}/planned", mode: append }]
`);
    const stateDir = join(dir, 'state-plan');
    const plan = () => planRun(j, { client, stateDir, signal: new AbortController().signal, resume: true });
    const first = await plan();
    expect(first.cursor).toEqual({ column: 'ts', from: null, value: '2000-01-01 00:00:00' });
    expect(formatPlan(first)).toContain('  cursor ts: from 2000-01-01 00:00:00 (the initial value: no output holds a cursor yet)');
    await run(j, stateDir);
    const next = await plan();
    expect(next.cursor).toEqual({ column: 'ts', from: '2026-01-01 00:20:00.000000', value: '2026-01-01 00:15:00.000000', lookback: '5m' });
    expect(formatPlan(next)).toContain('  cursor ts: from 2026-01-01 00:15:00.000000 (committed 2026-01-01 00:20:00.000000, less the lookback 5m)');
    expect(planFields(next)).toMatchObject({ cursor: { column: 'ts', from: '2026-01-01 00:20:00.000000', value: '2026-01-01 00:15:00.000000' } });
  });

  it('a lost state directory neither re-exports nor skips: the cursor is in the output', async () => {
    const table = await upload('ticks_lost', ticks(10));
    const j = job(`  - name: lost
    source: { sql: "select id, ts from ${table} where id > {{after}} order by id" }
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs: [{ format: ndjson, path: "\${DIR}/lost", mode: append }]
`);
    expect(await run(j, join(dir, 'state-lost-1'))).toMatchObject({ rows: 10 });
    await upload('ticks_lost', ticks(15));
    // Another state directory: nothing of the first run is known there.
    expect(await run(j, join(dir, 'state-lost-2'))).toMatchObject({ rows: 5, fetchedRows: 5, cursor: { from: '10', to: '15' } });
    const ids = await duck(`select id from read_ndjson_auto('${join(dir, 'lost')}/*.ndjson') order by id`);
    expect(ids.map((r) => Number(r.id))).toEqual(range(1, 15));
  });

  it('an output added later starts from the initial value; the others drop what they hold', async () => {
    const table = await upload('ticks_two', ticks(10));
    const one = `    source: { sql: "select id, ts from ${table} where id > {{after}} order by id" }
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs:
      - { format: parquet, path: "\${DIR}/two-a", mode: append }
`;
    await run(job(`  - name: two
${one}`), join(dir, 'state-two'));
    await upload('ticks_two', ticks(12));
    const both = await run(job(`  - name: two
${one}      - { format: csv, path: "\${DIR}/two-b", mode: append }
`), join(dir, 'state-two'));
    // Read from the initial value for the new output: 12 rows fetched, 2 of them new to the first output.
    expect(both.fetchedRows).toBe(12);
    expect(both.outputs.map((o) => o.rows)).toEqual([2, 12]);
    expect(both.cursor).toEqual({ from: null, to: '12' });
    expect(await parquetIds(join(dir, 'two-a'))).toEqual(range(1, 12));
    const csv = await duck(`select id from read_csv('${join(dir, 'two-b')}/*.csv') order by id`);
    expect(csv.map((r) => Number(r.id))).toEqual(range(1, 12));
  });

  it('on S3, with key and >= and no lookback: the rows sharing the last value are read again and written once', async () => {
    const table = await upload('ticks_s3', 'id,day\n1,2026-01-01\n2,2026-01-01\n3,2026-01-02\n');
    const j = job(`  - name: bydate
    source: { sql: "select id, day from ${table} where day >= {{since}} order by day, id" }
    incremental: { cursor: day, parameter: since, initial: "2026-01-01", key: [id] }
    outputs: [{ format: parquet, path: "s3://sync/bydate", mode: append, s3: { endpoint: "\${S3_ENDPOINT}", region: "\${AWS_REGION}", force_path_style: true } }]
`);
    expect(await run(j, join(dir, 'state-s3'))).toMatchObject({ rows: 3, cursor: { from: null, to: '2026-01-02' } });
    // Another row on the last day arrives: the run reads that day again and keeps only the new row.
    await upload('ticks_s3', 'id,day\n1,2026-01-01\n2,2026-01-01\n3,2026-01-02\n4,2026-01-02\n5,2026-01-03\n');
    const second = await run(j, join(dir, 'state-s3'));
    expect(second).toMatchObject({ fetchedRows: 3, rows: 2, cursor: { from: '2026-01-02', to: '2026-01-03' } });
    const manifest = JSON.parse(new TextDecoder().decode(await s3.get('sync', 'bydate/_manifest.json'))) as { total_rows: number; incremental: unknown };
    expect(manifest).toMatchObject({ total_rows: 5, incremental: { column: 'day', type: 'date', value: '2026-01-03', window: [['2026-01-03', '["5"]']] } });
    const local = join(dir, 'bydate-copy');
    await s3.download('sync', 'bydate/', local);
    expect(await parquetIds(local)).toEqual([1, 2, 3, 4, 5]);
  });

  it('into an Iceberg table: the cursor is in the snapshot summary; each run appends a snapshot of the new rows only', async () => {
    const table = await upload('ticks_ice', ticks(20));
    const j = job(`  - name: ice
    source: { sql: "select id, label from ${table} where id > {{after}} order by id" }
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/ice", mode: append }]
`);
    expect(await run(j, join(dir, 'state-ice-1'))).toMatchObject({ rows: 20, cursor: { from: null, to: '20' } });
    await upload('ticks_ice', ticks(25));
    // A fresh state directory: the cursor comes from the table.
    expect(await run(j, join(dir, 'state-ice-2'))).toMatchObject({ rows: 5, fetchedRows: 5, cursor: { from: '20', to: '25' } });
    expect(await run(j, join(dir, 'state-ice-3'))).toMatchObject({ rows: 0, fetchedRows: 0 });
    const rows = await icebirdRead(`file://${join(dir, 'ice')}`);
    expect(rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(range(1, 25));
    const metadata = (await readdir(join(dir, 'ice', 'metadata'))).filter((n) => n.endsWith('.metadata.json')).sort();
    const last = JSON.parse(await readFile(join(dir, 'ice', 'metadata', metadata.at(-1)!), 'utf8')) as { snapshots: { summary: Record<string, string> }[] };
    expect(last.snapshots).toHaveLength(2);
    expect(JSON.parse(last.snapshots[1]!.summary['sluice.cursor']!)).toEqual({ column: 'id', type: 'bigint', value: '25' });
  });

  it('lookback with a key reads late rows again and writes each row once', async () => {
    // Rows 1..10; then row 11 plus a late row 0.5 (id 100) whose timestamp falls behind the committed one.
    const table = await upload('ticks_late', ticks(10));
    const j = job(`  - name: late
    source: { sql: "select id, ts from ${table} where ts >= {{since}} order by ts" }
    incremental: { cursor: ts, parameter: since, initial: "2000-01-01", lookback: "5m", key: [id] }
    outputs: [{ format: parquet, path: "\${DIR}/late", mode: append }]
`);
    expect(await run(j, join(dir, 'state-late'))).toMatchObject({ rows: 10 });
    const late = `${ticks(11).trimEnd()}\n100,2026-01-01 00:07:30,late\n`;
    await upload('ticks_late', late);
    const second = await run(j, join(dir, 'state-late'));
    // The window (00:05..00:10 and on) came back: rows 5..11 and the late one; 5..10 were dropped.
    expect(second.fetchedRows).toBe(8);
    expect(second.rows).toBe(2);
    expect(await parquetIds(join(dir, 'late'))).toEqual([...range(1, 11), 100]);
    const m = await manifest(join(dir, 'late'));
    // The window keys of the commit: rows within 5 minutes of 00:11.
    expect(m.incremental.window).toEqual([
      ['2026-01-01 00:06:00.000000', '["6"]'],
      ['2026-01-01 00:07:00.000000', '["7"]'],
      ['2026-01-01 00:08:00.000000', '["8"]'],
      ['2026-01-01 00:09:00.000000', '["9"]'],
      ['2026-01-01 00:10:00.000000', '["10"]'],
      ['2026-01-01 00:07:30.000000', '["100"]'],
      ['2026-01-01 00:11:00.000000', '["11"]'],
    ]);
    // Run again with nothing new: the window is read again and all of it dropped.
    const third = await run(j, join(dir, 'state-late'));
    expect(third).toMatchObject({ rows: 0, files: 0 });
    expect(await parquetIds(join(dir, 'late'))).toEqual([...range(1, 11), 100]);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
