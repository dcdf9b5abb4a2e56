import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveOutput } from '../../src/export/index.ts';
import { BudgetExceededError } from '../../src/jobs/errors.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { RunStateStore, jobFingerprint, outputsFingerprint } from '../../src/jobs/run/runState.ts';
import { startLocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { builtins } from '../../connectors/index.ts';
import { client, dir, job, useJobHarness } from './jobHarness.ts';
import { journalsLeft, localJournal, otherCommits } from '../helpers/localOutput.ts';

useJobHarness({ sampleRows: 3000, limits: { page_rows: 500 } }, 'sluice-jobs-');

const signal = () => new AbortController().signal;

describe('runJob', () => {
  it('streams the result once into two outputs and commits both', async () => {
    const j = job(`  - name: two-outputs
    source: { sql: "select id, name, amount from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/two/parquet", max_rows_per_file: 1000 }
      - { format: csv, path: "\${DIR}/two/csv" }
`);
    const progress: number[] = [];
    const summary = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal(), events: { onProgress: (p) => progress.push(p.rows) } });
    expect(summary).toMatchObject({ job: 'two-outputs', rows: 3000, fetchedRows: 3000, files: 4, credits: 10, startedExecution: true, resumed: false, attempts: 1 });
    expect(summary.outputs.map((o) => o.resumedFiles)).toEqual([0, 0]);
    expect(summary.outputs.map((o) => [o.format, o.rows, o.files, o.skipped])).toEqual([
      ['parquet', 3000, 3, false],
      ['csv', 3000, 1, false],
    ]);
    expect(summary.bytes).toBe(summary.outputs[0]!.bytes + summary.outputs[1]!.bytes);
    // Pages of 500 rows: progress was reported per page, up to the total.
    expect(progress.at(-1)).toBe(3000);
    expect(progress.length).toBeGreaterThanOrEqual(6);
    const [pq] = await duck(`select count(*)::int as n, sum(id)::bigint as s from read_parquet('${dir}/two/parquet/*.parquet')`);
    expect(pq).toEqual({ n: 3000, s: String((2999 * 3000) / 2) });
    const [csv] = await duck(`select count(*)::int as n from read_csv('${dir}/two/csv/*.csv')`);
    expect(csv).toEqual({ n: 3000 });
    // The run is complete: no state left to resume.
    expect(await new RunStateStore(join(dir, 'state')).read('two-outputs')).toBeUndefined();
  });

  it('when one output fails the others are aborted too: the run fails, nothing is committed, nothing hangs', async () => {
    const j = job(`  - name: one-bad
    source: { sql: "select id, name from sample.events" }
    outputs:
      - { format: csv, path: "\${DIR}/one-bad/good" }
      - { format: parquet, path: "\${DIR}/one-bad/bad", partition_by: [no_such_column] }
`);
    const error = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal() }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/partition_by\[0\]: no such column in the result/);
    expect(existsSync(join(dir, 'one-bad', 'good', '_SUCCESS'))).toBe(false);
  });

  it('a run stopped midway leaves no empty output folder behind (nor the folders made for it)', async () => {
    const j = job(`  - name: stopped
    source: { sql: "select id, name, amount from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/stopped/nested/parquet", max_rows_per_file: 500 }
      - { format: csv, path: "\${DIR}/stopped/csv" }
`);
    const controller = new AbortController();
    const error = await runJob(j, { client, stateDir: join(dir, 'state'), signal: controller.signal, events: { onProgress: () => controller.abort() } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(existsSync(join(dir, 'stopped'))).toBe(false);
    // A folder that was there before the run stays, even empty.
    await mkdir(join(dir, 'kept'));
    const k = job(`  - name: failed-into-kept
    source: { sql: "select * from no_such_table" }
    outputs: [{ format: csv, path: "\${DIR}/kept/out" }]
`);
    await runJob(k, { client, stateDir: join(dir, 'state'), signal: signal() }).catch(() => undefined);
    expect(existsSync(join(dir, 'kept'))).toBe(true);
    expect(existsSync(join(dir, 'kept', 'out'))).toBe(false);
  });

  it('applies result shaping: columns, filters and sort', async () => {
    const j = job(`  - name: shaped
    source: { sql: "select id, name, quantity from sample.events" }
    result: { columns: [id, quantity], filters: "quantity < 3", sort_by: id desc }
    outputs:
      - { format: ndjson, path: "\${DIR}/shaped" }
`);
    const summary = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal() });
    const names = (await readdir(join(dir, 'shaped'))).filter((n) => n.endsWith('.ndjson'));
    const lines = (await readFile(join(dir, 'shaped', names[0]!), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, number>);
    expect(summary.rows).toBe(lines.length);
    expect(lines.length).toBe(9); // quantity = id % 1000 < 3 for ids 0..2999
    expect(Object.keys(lines[0]!)).toEqual(['id', 'quantity']);
    expect(lines.map((l) => l.id)).toEqual([2002, 2001, 2000, 1002, 1001, 1000, 2, 1, 0]);
  });

  it('refuses to start an execution that would exceed max_credits', async () => {
    const j = job(`  - name: too-dear
    source: { sql: "select 1 as x" }
    performance: large
    budget: { max_credits: 15 }
    outputs: [{ format: csv, path: "\${DIR}/too-dear" }]
`);
    const error = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect(String(error)).toMatch(/costs 20 credits \(large tier\).*max_credits 15; nothing was started/);
    expect(existsSync(join(dir, 'too-dear'))).toBe(false);
  });

  it('stops before fetching when the result is larger than max_bytes', async () => {
    const j = job(`  - name: too-big
    source: { sql: "select * from sample.events" }
    budget: { max_bytes: 10000 }
    outputs: [{ format: parquet, path: "\${DIR}/too-big" }]
`);
    const error = await runJob(j, { client, stateDir: join(dir, 'state'), signal: signal() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect((error as BudgetExceededError).limit).toBe('max_bytes');
    expect(String(error)).toMatch(/over max_bytes 10000; nothing was fetched or written/);
    expect(existsSync(join(dir, 'too-big'))).toBe(false);
  });

  it('retries a failed run with a growing delay, then gives up with the error', async () => {
    const j = job(`  - name: failing
    source: { sql: "select * from no_such_table" }
    retries: 2
    retry_delay_seconds: 3
    outputs: [{ format: csv, path: "\${DIR}/failing" }]
`);
    const delays: number[] = [];
    const error = await runJob(j, {
      client,
      stateDir: join(dir, 'state'),
      signal: signal(),
      sleep: async (ms) => void delays.push(ms),
    }).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('EXECUTION_FAILED');
    expect(delays).toEqual([3000, 6000]);
  });

  it('resumes the execution of a killed run: no new execution, committed outputs skipped', async () => {
    const j = job(`  - name: resumable
    source: { sql: "select id, amount from sample.events order by id" }
    outputs:
      - { format: parquet, path: "\${DIR}/resume/a" }
      - { format: csv, path: "\${DIR}/resume/b" }
`);
    const stateDir = join(dir, 'state-resume');
    // A first run that got as far as committing output a, then died: its state file remains.
    const first = await runJob({ ...j, outputs: [j.outputs[0]!] }, { client, stateDir, signal: signal() });
    await new RunStateStore(stateDir).write({
      version: 1,
      job: 'resumable',
      fingerprint: jobFingerprint(j),
      outputs: outputsFingerprint(j),
      execution_id: first.executionId,
      started: true,
      started_at: new Date().toISOString(),
    });
    const summary = await runJob(j, { client, stateDir, signal: signal() });
    // A killed run records nothing: the run resuming its execution counts its credits (once; a state marked `counted` would not).
    expect(summary).toMatchObject({ executionId: first.executionId, resumed: true, startedExecution: false, credits: 10, rows: 3000 });
    expect(summary.outputs.map((o) => o.skipped)).toEqual([true, false]);
    const [b] = await duck(`select count(*)::int as n from read_csv('${dir}/resume/b/*.csv')`);
    expect(b).toEqual({ n: 3000 });
  });

  it('skips an output committed for the same execution only when its result shaping and output options are unchanged', async () => {
    const stateDir = join(dir, 'state-reexport');
    const path = join(dir, 'reexport');
    const first = await runJob(
      job(`  - name: reexport
    source: { sql: "select id, name from sample.events order by id" }
    outputs: [{ format: csv, path: "\${DIR}/reexport" }]
`),
      { client, stateDir, signal: signal() },
    );
    // The same execution again (a stored `latest` result, or `sluice run --execution`), unchanged: nothing to write.
    const same = await runJob(
      job(`  - name: reexport
    source: { sql: "select id, name from sample.events order by id" }
    outputs: [{ format: csv, path: "\${DIR}/reexport" }]
`),
      { client, stateDir, signal: signal(), executionId: first.executionId },
    );
    expect(same.outputs.map((o) => o.skipped)).toEqual([true]);
    // Other columns and another format into the same directory: the old CSV must not stand for it.
    const changed = await runJob(
      job(`  - name: reexport
    source: { sql: "select id, name from sample.events order by id" }
    result: { columns: [id] }
    outputs: [{ format: parquet, path: "\${DIR}/reexport" }]
`),
      { client, stateDir, signal: signal(), executionId: first.executionId },
    );
    expect(changed.outputs.map((o) => o.skipped)).toEqual([false]);
    const names = await readdir(path);
    expect(names.filter((n) => n.endsWith('.csv'))).toEqual([]);
    expect(await duck(`select count(*)::int as n from read_parquet('${path}/*.parquet')`)).toEqual([{ n: 3000 }]);
    const [described] = await duck(`select list(column_name) as cols from (describe select * from read_parquet('${path}/*.parquet'))`);
    expect(described).toEqual({ cols: ['id'] });
  });

  it('does not resume when the source changed since the killed run', async () => {
    const stateDir = join(dir, 'state-changed');
    const old = await client.execute({ sql: 'select 1 as x' });
    await old.wait();
    const j = job(`  - name: changed
    source: { sql: "select 2 as x" }
    outputs: [{ format: ndjson, path: "\${DIR}/changed" }]
`);
    await new RunStateStore(stateDir).write({ version: 1, job: 'changed', fingerprint: 'something-else', execution_id: old.id, started: true, started_at: new Date().toISOString() });
    const summary = await runJob(j, { client, stateDir, signal: signal() });
    expect(summary.resumed).toBe(false);
    expect(summary.executionId).not.toBe(old.id);
  });

  it('a stop (SIGTERM) during the export keeps the finished parts: the next run resumes them, fetches the rest, identical output', async () => {
    const j = job(`  - name: stopped
    source: { sql: "select i as id, 'row ' || i as name from range(60000) t(i) order by i" }
    concurrency: 1
    outputs: [{ format: csv, path: "\${DIR}/stopped/out", max_rows_per_file: 5000 }]
`);
    const stateDir = join(dir, 'state-stopped');
    const parent = join(dir, 'stopped');
    const journal = (): Promise<{ path: string }[]> => localJournal(join(parent, 'out'));
    const controller = new AbortController();
    const poll = setInterval(() => void journal().then((parts) => parts.length >= 2 && controller.abort(new Error('SIGTERM'))), 2);
    const stopped = await runJob(j, { client, stateDir, signal: controller.signal }).catch((e: unknown) => e).finally(() => clearInterval(poll));
    expect(String(stopped)).toContain('SIGTERM');
    const journaled = await journal();
    expect(journaled.length).toBeGreaterThanOrEqual(2);
    expect(journaled.length).toBeLessThan(12);
    expect(existsSync(join(parent, 'out'))).toBe(false);
    const state = await new RunStateStore(stateDir).read('stopped');
    expect(state).toBeDefined();

    const resumed = await runJob(j, { client, stateDir, signal: signal() });
    expect(resumed).toMatchObject({ executionId: state!.execution_id, resumed: true, rows: 60000, files: 12 });
    expect(resumed.outputs[0]!.resumedFiles).toBe(journaled.length);
    expect(resumed.fetchedRows).toBe(60000 - journaled.length * 5000);
    // The same execution exported without a stop, elsewhere: byte for byte the same parts.
    const reference = await runJob({ ...j, name: 'stopped-ref', outputs: [resolveOutput({ format: 'csv', path: join(dir, 'stopped-ref'), max_rows_per_file: 5000 }, builtins)] }, { client, stateDir, signal: signal(), executionId: state!.execution_id });
    const files = async (root: string) => Object.fromEntries(await Promise.all((await readdir(root)).filter((n) => n !== '_manifest.json').sort().map(async (n) => [n, (await readFile(join(root, n))).toString('base64')])));
    expect(Object.keys(await files(join(parent, 'out')))).toHaveLength(13);
    expect(await files(join(parent, 'out'))).toEqual(await files(join(dir, 'stopped-ref')));
    expect(reference.rows).toBe(60000);
    expect([...otherCommits(join(parent, 'out')), ...journalsLeft(join(parent, 'out'))]).toEqual([]);
  });

  it('on S3 too: a stop keeps the uploaded parts and the journal; the next run resumes them', async () => {
    const s3 = await startLocalS3();
    try {
      await s3.createBucket('stop');
      const j = job(`  - name: stopped-s3
    source: { sql: "select i as id from range(60000) t(i) order by i" }
    concurrency: 1
    outputs:
      - format: csv
        path: s3://stop/out
        max_rows_per_file: 5000
        s3: { endpoint: "${s3.endpoint}", region: ${s3.region}, force_path_style: true }
`);
      const stateDir = join(dir, 'state-stopped-s3');
      const journal = async (): Promise<string[]> => {
        const key = (await s3.list('stop', 'out/')).find((k) => k.includes('.sluice-journal-'));
        return key === undefined ? [] : (JSON.parse(new TextDecoder().decode(await s3.get('stop', key))) as { parts: { path: string }[] }).parts.map((p) => p.path);
      };
      const controller = new AbortController();
      const poll = setInterval(() => void journal().then((parts) => parts.length >= 2 && controller.abort(new Error('SIGTERM'))), 5);
      await expect(runJob(j, { client, stateDir, signal: controller.signal }).finally(() => clearInterval(poll))).rejects.toThrow('SIGTERM');
      const journaled = await journal();
      expect(journaled.length).toBeGreaterThanOrEqual(2);
      const left = await s3.list('stop', 'out/');
      for (const path of journaled) expect(left).toContain(`out/${path}`);
      expect(left).not.toContain('out/_SUCCESS');

      const resumed = await runJob(j, { client, stateDir, signal: signal() });
      expect(resumed).toMatchObject({ resumed: true, rows: 60000, files: 12 });
      expect(resumed.outputs[0]!.resumedFiles).toBe(journaled.length);
      const keys = await s3.list('stop', 'out/');
      expect(keys.filter((k) => k.endsWith('.csv'))).toHaveLength(12);
      expect(keys.some((k) => k.includes('.sluice-journal-'))).toBe(false);
    } finally {
      await s3.stop();
    }
  });

  it('on abort while the execution runs, keeps it running and remembers it for the next run (a stop is not a cancel)', async () => {
    const j = job(`  - name: slow
    source: { sql: "select sum(a.i * b.i) as s from range(100000) a(i), range(100000) b(i)" }
    outputs: [{ format: csv, path: "\${DIR}/slow" }]
`);
    const controller = new AbortController();
    let executionId = '';
    const stateDir = join(dir, 'state-slow');
    const run = runJob(j, {
      client,
      stateDir,
      signal: controller.signal,
      events: { onExecution: (e) => ((executionId = e.executionId), setTimeout(() => controller.abort(new Error('stop')), 200)) },
    });
    await expect(run).rejects.toThrow();
    const status = await client.getStatus(executionId);
    expect(['QUERY_STATE_PENDING', 'QUERY_STATE_EXECUTING']).toContain(status.state);
    expect(await new RunStateStore(stateDir).read('slow')).toMatchObject({ execution_id: executionId, started: true });
    expect(existsSync(join(dir, 'slow'))).toBe(false);
    // Not wanted any more: cancelled by hand, as `sluice cancel` does (it would run for minutes).
    await client.cancel(executionId);
  });
});
