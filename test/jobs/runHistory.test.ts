import { appendFile, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { RunHistory, type RunRecord } from '../../src/jobs/run/runHistory.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { client, dir, job, svc, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 1000 }, 'sluice-history-');

function record(over: Partial<RunRecord> = {}): RunRecord {
  return {
    version: 1,
    job: 'j',
    started_at: '2026-11-20T10:00:00.000Z',
    ended_at: '2026-11-20T10:00:01.000Z',
    outcome: 'succeeded',
    resumed: false,
    rows: 1,
    fetched_rows: 1,
    files: 1,
    bytes: 10,
    credits: 10,
    attempts: 1,
    outputs: [],
    ...over,
  };
}

describe('run history', () => {
  it('records every run, succeeded or failed, with the credits the service charged for it', async () => {
    const stateDir = join(dir, 'state-runs');
    const before = await client.getUsage();
    const good = job(`  - name: good
    source: { sql: "select id, name from sample.events" }
    outputs: [{ format: csv, path: "\${DIR}/good" }]
`);
    const summary = await runJob(good, { client, stateDir, signal: new AbortController().signal });
    const bad = job(`  - name: bad
    source: { sql: "select error('boom') from sample.events" }
    outputs: [{ format: csv, path: "\${DIR}/bad" }]
`);
    const failure = await runJob(bad, { client, stateDir, signal: new AbortController().signal }).catch((e: unknown) => e);
    expect((failure as { code?: string }).code).toBe('EXECUTION_FAILED');

    const runs = await new RunHistory(stateDir).list();
    expect(runs.map((r) => [r.job, r.outcome])).toEqual([
      ['good', 'succeeded'],
      ['bad', 'failed'],
    ]);
    const [ok, failed] = runs as [RunRecord, RunRecord];
    expect(ok).toMatchObject({ execution_id: summary.executionId, rows: 1000, files: summary.files, bytes: summary.bytes, credits: 10, attempts: 1 });
    expect(ok.outputs).toEqual([{ url: summary.outputs[0]!.url, format: 'csv', rows: 1000, files: summary.files, bytes: summary.bytes, skipped: false }]);
    expect(Date.parse(ok.ended_at)).toBeGreaterThanOrEqual(Date.parse(ok.started_at));
    expect(failed.error?.code).toBe('EXECUTION_FAILED');
    expect(failed.error?.message).toMatch(/boom/);
    expect(failed.execution_id).toMatch(/^01/);
    const status = await client.getStatus(failed.execution_id!);
    expect(failed.credits).toBe(status.execution_cost_credits ?? 0);

    // Where the credits went: the cycle's usage grew by exactly what the history records.
    const after = await client.getUsage();
    expect(after.credits_used - before.credits_used).toBe(ok.credits + failed.credits);
    // The summary (and the record) say what is left in the cycle.
    expect(summary.creditsLeft).toBe(ok.credits_left);
    expect(ok.credits_left).toBe(before.credits_limit - before.credits_used - ok.credits);
  });

  it('counts the result pages read both ways: as they crossed the wire and decoded, equal when uncompressed', async () => {
    const stateDir = join(dir, 'state-page-bytes');
    const spec = (name: string) =>
      job(`  - name: ${name}
    source: { sql: "select id, name from sample.events" }
    outputs: [{ format: csv, path: "\${DIR}/${name}" }]
`);
    const plain = await runJob(spec('plain'), { client, stateDir, signal: new AbortController().signal });
    const compressing = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {}, compression: 'on' });
    let packed;
    try {
      packed = await runJob(spec('packed'), { client: compressing, stateDir, signal: new AbortController().signal });
    } finally {
      await compressing.close();
    }
    expect(plain.pageBytes.wire).toBe(plain.pageBytes.decoded);
    expect(plain.pageBytes.decoded).toBeGreaterThan(0);
    expect(packed.pageBytes.decoded).toBe(plain.pageBytes.decoded);
    expect(packed.pageBytes.wire).toBeLessThan(packed.pageBytes.decoded / 2);
    const runs = await new RunHistory(stateDir).list();
    expect(runs.map((r) => r.page_bytes)).toEqual([plain.pageBytes, packed.pageBytes]);
  });

  it('a key that may not read usage still runs; the summary just does not say what is left', async () => {
    const writer = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write, env: {} });
    try {
      const j = job(`  - name: writer
    source: { sql: "select 1 as x" }
    outputs: [{ format: csv, path: "\${DIR}/writer" }]
`);
      const summary = await runJob(j, { client: writer, stateDir: join(dir, 'state-writer'), signal: new AbortController().signal });
      expect(summary.rows).toBe(1);
      expect(summary.creditsLeft).toBeUndefined();
      const [run] = await new RunHistory(join(dir, 'state-writer')).list({ job: 'writer' });
      expect(run?.credits_left).toBeUndefined();
      expect(run?.outcome).toBe('succeeded');
    } finally {
      await writer.close();
    }
  });

  it('is bounded: past maxBytes the file rotates, one old generation is kept, and listing reads both in order', async () => {
    const historyDir = join(dir, 'rotate');
    const history = new RunHistory(historyDir, { maxBytes: 2000 });
    for (let i = 0; i < 40; i++) await history.append(record({ job: i % 2 === 0 ? 'even' : 'odd', rows: i }));
    const live = await stat(join(historyDir, 'history.jsonl'));
    const old = await stat(join(historyDir, 'history.1.jsonl'));
    expect(live.size).toBeLessThanOrEqual(2000);
    expect(old.size).toBeLessThanOrEqual(2000);
    const all = await history.list();
    expect(all.length).toBeLessThan(40);
    const rows = all.map((r) => r.rows);
    expect(rows).toEqual([...rows].sort((a, b) => a - b));
    expect(rows.at(-1)).toBe(39);
    expect((await history.list({ job: 'odd', last: 2 })).map((r) => r.rows)).toEqual([37, 39]);
  });

  it('passes over a torn or foreign line instead of failing', async () => {
    const historyDir = join(dir, 'torn');
    const history = new RunHistory(historyDir);
    await history.append(record({ rows: 1 }));
    await appendFile(join(historyDir, 'history.jsonl'), '{"version":1,"job":"j","sta\n{"version":99}\n');
    await history.append(record({ rows: 2 }));
    expect((await history.list()).map((r) => r.rows)).toEqual([1, 2]);
    expect((await readFile(join(historyDir, 'history.jsonl'), 'utf8')).split('\n').filter(Boolean)).toHaveLength(4);
  });
});
