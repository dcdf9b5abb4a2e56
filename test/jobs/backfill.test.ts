import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { formatPlan, planFields } from '../../src/cli/output/shardSummary.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { planRun } from '../../src/jobs/plan/planRun.ts';
import { type JobSummary, runJob } from '../../src/jobs/run/runJob.ts';
import { icebirdRead } from '../helpers/icebird.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { client, dir, useJobHarness } from './jobHarness.ts';

// Results over 20,000 bytes come back truncated (COMPLETED_PARTIAL): a week of 35 rows of ~120
// bytes fits, the busy week (235 rows) does not, and each of its halves (101 and 134 rows) does.
useJobHarness({ limits: { max_result_bytes: 20_000, page_rows: 50 } }, 'sluice-backfill-');
let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('backfill');
});
afterAll(async () => {
  await s3?.stop();
});

/**
 * Five rows a day for `days` days from 2026-01-05 (ids 0..), and 200 more (ids 1000..) spread over
 * the week of 2026-02-09 (the sixth week), each with a note of 100 characters.
 */
export function eventsSql(days: number, where: string): string {
  return (
    "select id, day, repeat('x', 100) as note from (" +
    `select i as id, date '2026-01-05' + cast(i // 5 as integer) as day from range(0, ${days * 5}) t(i) ` +
    "union all select 1000 + i, date '2026-02-09' + cast(i % 7 as integer) from range(0, 200) t(i)" +
    `) where ${where} order by day, id`
  );
}

function job(yaml: string): Job {
  return parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir, S3_ENDPOINT: s3.endpoint, AWS_REGION: s3.region } }).jobs[0]!;
}

const backfillYaml = (name: string, outputs: string) => `  - name: ${name}
    source: { sql: "${eventsSql(91, 'day >= {{start}} and day < {{end}}')}" }
    backfill: { parameters: { from: start, to: end }, from: "2026-01-05", to: "2026-03-30", chunk: 7d, concurrency: 3 }
    incremental: { cursor: day, parameter: start, initial: "2026-01-05" }
    outputs:
${outputs}`;

async function usage(): Promise<{ executions: number; credits: number }> {
  const u = await client.getUsage();
  return { executions: u.executions, credits: u.credits_used };
}

describe('backfill', () => {
  it('12 weekly chunks, one truncated and halved: every row once, committed once to disk, S3 and Iceberg; the next run is incremental from its cursor', async () => {
    const s3Options = `s3: { endpoint: "\${S3_ENDPOINT}", region: "\${AWS_REGION}", force_path_style: true }`;
    const j = job(
      backfillYaml(
        'weeks',
        `      - { format: parquet, path: "\${DIR}/weeks", mode: append, max_rows_per_file: 200 }
      - { format: parquet, path: "s3://backfill/weeks", mode: append, ${s3Options} }
      - { format: parquet, table: iceberg, path: "\${DIR}/weeks-ice", mode: append }
`,
      ),
    );
    const before = await usage();
    const warnings: string[] = [];
    const executions: string[] = [];
    const summary: JobSummary = await runJob(j, {
      client,
      stateDir: join(dir, 'state'),
      signal: new AbortController().signal,
      events: { onWarning: (m) => warnings.push(m), onExecution: (e) => executions.push(e.executionId) },
    });
    const after = await usage();
    // 12 chunks, the sixth executed, truncated, halved: 13 chunks read, 14 executions, each charged.
    expect(summary.backfill).toEqual({ chunks: 13, executed: 14, reused: 0, splits: 1 });
    expect(after.executions - before.executions).toBe(14);
    expect(after.credits - before.credits).toBe(140);
    expect(summary.credits).toBe(140);
    expect(new Set(executions).size).toBe(14);
    expect(warnings.filter((w) => w.includes('halved'))).toEqual(['backfill chunk [2026-02-09, 2026-02-16) came back truncated (COMPLETED_PARTIAL): halved and run again']);
    expect(summary.rows).toBe(620);
    expect(summary.executionId).toMatch(/^backfill-/);
    expect(summary.cursor).toEqual({ from: null, to: '2026-03-29' });

    // Disk: one manifest naming the backfill, every row once, in range order across the parts.
    const manifest = JSON.parse(await readFile(join(dir, 'weeks', '_manifest.json'), 'utf8')) as { execution_id: string; total_rows: number; incremental: { value: string } };
    expect(manifest).toMatchObject({ execution_id: summary.executionId, total_rows: 620, incremental: { value: '2026-03-29' } });
    const counted = await duck(`select count(*) as n, count(distinct id) as ids, min(day)::varchar as lo, max(day)::varchar as hi from read_parquet('${dir}/weeks/*.parquet')`);
    expect(counted).toEqual([{ n: '620', ids: '620', lo: '2026-01-05', hi: '2026-03-29' }]);
    const ordered = await duck(`select bool_and(day >= prev) as ordered from (select day, lag(day, 1, day) over (order by filename, file_row_number) as prev from read_parquet('${dir}/weeks/*.parquet', filename = true, file_row_number = true))`);
    expect(ordered).toEqual([{ ordered: true }]);
    // S3: the same rows under one manifest.
    const s3Manifest = JSON.parse(new TextDecoder().decode(await s3.get('backfill', 'weeks/_manifest.json'))) as { execution_id: string; total_rows: number };
    expect(s3Manifest).toMatchObject({ execution_id: summary.executionId, total_rows: 620 });
    // Iceberg: one snapshot holding all 620 rows.
    const ice = await icebirdRead(`file://${join(dir, 'weeks-ice')}`);
    expect(ice).toHaveLength(620);
    const metadata = (await readdir(join(dir, 'weeks-ice', 'metadata'))).filter((n) => n.endsWith('.metadata.json')).sort();
    const last = JSON.parse(await readFile(join(dir, 'weeks-ice', 'metadata', metadata.at(-1)!), 'utf8')) as { snapshots: unknown[] };
    expect(last.snapshots).toHaveLength(1);
    // The chunk records end with the run.
    expect(existsSync(join(dir, 'state', 'weeks.backfill.json'))).toBe(false);

    // The next run of the job is incremental: from the backfill's last day on, with no upper bound
    // (the day it ends on is read again and its rows dropped: no key, rows at the cursor are held).
    const incremental = await runJob(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal });
    expect(incremental).toMatchObject({ rows: 35, fetchedRows: 40, cursor: { from: '2026-03-29', to: '2026-04-05' } });
    expect(incremental.backfill).toBeUndefined();
    expect(await duck(`select count(*) as n, count(distinct id) as ids from read_parquet('${dir}/weeks/*.parquet')`)).toEqual([{ n: '655', ids: '655' }]);
  });

  it('--plan lists the chunks and their credits, reading only', async () => {
    const j = job(backfillYaml('planned', `      - { format: parquet, path: "\${DIR}/planned", mode: append }\n`));
    const before = await usage();
    const plan = await planRun(j, { client, stateDir: join(dir, 'state-plan'), signal: new AbortController().signal, resume: true });
    expect(await usage()).toEqual(before);
    expect(plan).toMatchObject({ action: 'execute', credits: 120, backfill: { execute: 12, skip: 0, credits: 120, concurrency: 3 } });
    expect(plan.backfill!.chunks[0]).toEqual({ from: '2026-01-05', to: '2026-01-12', action: 'execute' });
    expect(plan.backfill!.chunks.at(-1)).toEqual({ from: '2026-03-23', to: '2026-03-30', action: 'execute' });
    const text = formatPlan(plan);
    expect(text).toContain('  backfill: 12 chunks of 7d, 3 at once: 12 to execute (120 credits)\n');
    expect(text).toContain('    [2026-02-09, 2026-02-16)  execute\n');
    expect(planFields(plan)).toMatchObject({ credits: 120, backfill: { execute: 12, skip: 0 } });
  });

  it('a chunk still truncated at min_chunk fails the run, naming its range; nothing is published', async () => {
    const j = job(`  - name: tight
    source: { sql: "${eventsSql(84, 'day >= {{start}} and day < {{end}}')}" }
    backfill: { parameters: { from: start, to: end }, from: "2026-02-09", to: "2026-02-16", chunk: 7d, min_chunk: 7d }
    outputs: [{ format: parquet, path: "\${DIR}/tight" }]
`);
    const error = await runJob(j, { client, stateDir: join(dir, 'state-tight'), signal: new AbortController().signal }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BACKFILL_CHUNK_TOO_LARGE' });
    expect((error as Error).message).toMatch(/^job tight: backfill chunk \[2026-02-09, 2026-02-16\) came back truncated \(COMPLETED_PARTIAL\) \(execution [^)]+\) and cannot be halved above min_chunk "7d"/);
    expect(existsSync(join(dir, 'tight'))).toBe(false);
  });

  it('a saved query with number parameters: chunks of ids; a parameter the query lacks is refused before any execution', async () => {
    const { query_id } = await client.createQuery({
      name: 'ids-between',
      query_sql: 'select i as id from range(0, 5000) t(i) where i >= {{lo}} and i < {{hi}} order by i',
      parameters: [
        { key: 'lo', type: 'number', value: '0' },
        { key: 'hi', type: 'number', value: '0' },
      ],
    });
    const before = await usage();
    const missing = await runJob(
      job(`  - name: missing
    source: { query_id: ${query_id} }
    backfill: { parameters: { from: lo, to: upto }, from: 0, to: 4500, chunk: 1000 }
    outputs: [{ format: csv, path: "\${DIR}/missing" }]
`),
      { client, stateDir: join(dir, 'state-missing'), signal: new AbortController().signal },
    ).catch((e: unknown) => e);
    expect((missing as Error).message).toBe(`job missing: backfill.parameters.to "upto": saved query ${query_id} has no such parameter (it has lo, hi)`);
    expect(await usage()).toEqual(before);

    const summary = await runJob(
      job(`  - name: ids
    source: { query_id: ${query_id} }
    backfill: { parameters: { from: lo, to: hi }, from: 0, to: 4500, chunk: 1000 }
    outputs: [{ format: csv, path: "\${DIR}/ids" }]
`),
      { client, stateDir: join(dir, 'state-ids'), signal: new AbortController().signal },
    );
    // Five chunks, the last one short: [4000, 4500).
    expect(summary).toMatchObject({ rows: 4500, credits: 50, backfill: { chunks: 5, executed: 5, reused: 0, splits: 0 } });
    expect(await duck(`select count(*) as n, min(id) as lo, max(id) as hi, count(distinct id) as ids from read_csv('${dir}/ids/*.csv')`)).toEqual([{ n: '4500', lo: '0', hi: '4499', ids: '4500' }]);
  });
});
