import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { JobFileError, parseJobFile, type Job } from '../../src/config/index.ts';
import { AppendConflictError, SchemaDriftError } from '../../src/export/errors.ts';
import { CursorError } from '../../src/jobs/errors.ts';
import { RunHistory } from '../../src/jobs/run/runHistory.ts';
import { type JobSummary, runJob } from '../../src/jobs/run/runJob.ts';
import { duck } from './duck.ts';
import { client, dir, job, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 100 }, 'sluice-incremental-bad-');

function parseError(yaml: string): string {
  try {
    parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir } });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as Error).message;
  }
  throw new Error('parsed');
}

const run = (j: Job, state = 'state'): Promise<JobSummary> => runJob(j, { client, stateDir: join(dir, state), signal: new AbortController().signal });

async function failure(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(Error);
  return error as Error & { code?: string };
}

/** Executions the team has started so far in the cycle. */
async function executions(): Promise<number> {
  return (await client.getUsage()).executions;
}

describe('incremental jobs: bad input', () => {
  it('job file mistakes are found at load, with the place: no placeholder, not append, stdout, lookback without key, a latest source, a column shaped away', () => {
    expect(parseError(`  - name: a
    source: { sql: "select * from sample.events" }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01" }
    outputs: [{ format: csv, path: "\${DIR}/a", mode: append }]
`)).toMatch(/test\.yaml:\d+:\d+ jobs\[0\]\.incremental\.parameter: the sql has no \{\{since\}\} placeholder/);
    expect(parseError(`  - name: b
    source: { sql: "select * from sample.events where ts > {{since}}" }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01" }
    outputs: [{ format: csv, path: "\${DIR}/b" }]
`)).toMatch(/jobs\[0\]\.outputs\[0\]\.mode: an incremental job adds each run's new rows to the output: set mode: append/);
    expect(parseError(`  - name: c
    source: { sql: "select * from sample.events where ts > {{since}}" }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01" }
    outputs: [{ format: csv, path: "-" }]
`)).toMatch(/outputs\[0\]\.path: an incremental job keeps its cursor in each output's commit: stdout has none/);
    expect(parseError(`  - name: d
    source: { sql: "select * from sample.events where ts > {{since}}" }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01", lookback: "1h" }
    outputs: [{ format: csv, path: "\${DIR}/d", mode: append }]
`)).toMatch(/incremental\.lookback: rows read again are recognised by key: add key/);
    expect(parseError(`  - name: e
    source: { latest: { query_id: 1 } }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01" }
    outputs: [{ format: csv, path: "\${DIR}/e", mode: append }]
`)).toMatch(/jobs\[0\]\.incremental: needs a sql or query_id source \(latest reuses a stored result/);
    expect(parseError(`  - name: f
    source: { sql: "select * from sample.events where ts > {{since}}" }
    result: { columns: [id] }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01" }
    outputs: [{ format: csv, path: "\${DIR}/f", mode: append }]
`)).toMatch(/incremental\.cursor: "ts" is not among result\.columns \(id\)/);
    expect(parseError(`  - name: h
    source: { sql: "select * from sample.events where ts > {{since}}" }
    incremental: { cursor: ts, parameter: since, initial: "2026-01-01", key: [id] }
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/h", mode: append }]
`)).toMatch(/incremental\.key: outputs\[0\] is an Iceberg table, whose snapshot summary keeps the cursor but no window of keys/);
    expect(parseError(`  - name: g
    source: { sql: "select 1" }
    outputs: [{ format: csv, path: "-", mode: append }]
`)).toMatch(/outputs\[0\]\.mode: - \(standard output\) takes one stream and keeps no commit to append to/);
  });

  it('a cursor column missing from the result, holding NULLs, or of a type that cannot be ordered: named, nothing committed', async () => {
    const missing = await failure(run(job(`  - name: missing
    source: { sql: "select id from sample.events where id > {{after}}" }
    incremental: { cursor: seq, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: "\${DIR}/missing", mode: append }]
`)));
    expect(missing).toBeInstanceOf(CursorError);
    expect(missing.message).toMatch(/^job missing: incremental\.cursor "seq": no such column in the result \(columns: id\)/);

    const nulls = await failure(run(job(`  - name: nulls
    source: { sql: "select id, case when id = 7 then null else id end as seq from sample.events where id > {{after}} order by id" }
    incremental: { cursor: seq, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: "\${DIR}/nulls", mode: append }]
`)));
    expect(nulls).toBeInstanceOf(CursorError);
    expect(nulls.message).toMatch(/^job nulls: incremental\.cursor "seq": is NULL in row 6 of the result: a cursor must have a value in every row/);
    const [record] = await new RunHistory(join(dir, 'state')).list({ job: 'nulls' });
    expect(record).toMatchObject({ outcome: 'failed', error: { code: 'CURSOR_INVALID' }, cursor: { from: null, to: null } });
    expect(existsSync(join(dir, 'nulls', '_manifest.json'))).toBe(false);

    const unordered = await failure(run(job(`  - name: unordered
    source: { sql: "select id, id % 2 = 0 as flag from sample.events where {{after}} = 0" }
    incremental: { cursor: flag, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: "\${DIR}/unordered", mode: append }]
`)));
    expect(unordered).toBeInstanceOf(CursorError);
    expect(unordered.message).toMatch(/incremental\.cursor "flag": its type boolean cannot be ordered: use a number, decimal, date, timestamp or text column/);
    expect(existsSync(join(dir, 'unordered'))).toBe(false);
  });

  it('an initial value that does not parse as the cursor type', async () => {
    const bad = await failure(run(job(`  - name: badinitial
    source: { sql: "select id from sample.events where id > {{after}}" }
    incremental: { cursor: id, parameter: after, initial: "yesterday" }
    outputs: [{ format: parquet, path: "\${DIR}/badinitial", mode: append }]
`)));
    expect(bad).toBeInstanceOf(CursorError);
    expect(bad.code).toBe('CURSOR_INVALID');
    // Before a first commit the type is not known: the engine refuses the value, and the error says which.
    expect(bad.message).toMatch(/^job badinitial: incremental\.initial "yesterday": the query could not use it as a value of the cursor column id \(.*yesterday.*\); give a value of the column's type/);

    // Once a commit knows the type, a bad initial value is refused before any execution.
    const j = job(`  - name: typed
    source: { sql: "select id from sample.events where id > {{after}}" }
    incremental: { cursor: id, parameter: after, initial: 0 }
    outputs: [{ format: parquet, path: "\${DIR}/typed", mode: append }]
`);
    await run(j);
    const before = await executions();
    const typed = await failure(run({ ...j, incremental: { ...j.incremental!, initial: '1.5' } }));
    expect(typed.message).toBe(`job typed: incremental.initial "1.5": does not parse as the cursor column's type bigint: expected a whole number`);
    expect(await executions()).toBe(before);
  });

  it('a saved query without the parameter, or whose parameter type the initial value does not fit: refused before any execution', async () => {
    const { query_id } = await client.createQuery({
      name: 'since-query',
      query_sql: 'select id, ts from sample.events where ts > {{since}} order by ts',
      parameters: [{ key: 'since', type: 'datetime', value: '2000-01-01 00:00:00' }],
    });
    const before = await executions();
    const unknown = await failure(run(job(`  - name: unknownparam
    source: { query_id: ${query_id} }
    incremental: { cursor: ts, parameter: after, initial: "2000-01-01" }
    outputs: [{ format: parquet, path: "\${DIR}/unknownparam", mode: append }]
`)));
    expect(unknown).toBeInstanceOf(CursorError);
    expect(unknown.message).toBe(`job unknownparam: incremental.parameter "after": saved query ${query_id} has no such parameter (it has since)`);
    const typed = await failure(run(job(`  - name: badtype
    source: { query_id: ${query_id} }
    incremental: { cursor: ts, parameter: since, initial: "last tuesday" }
    outputs: [{ format: parquet, path: "\${DIR}/badtype", mode: append }]
`)));
    expect(typed.message).toMatch(/incremental\.initial "last tuesday": does not fit the datetime parameter "since" of saved query \d+: expected a timestamp/);
    expect(await executions()).toBe(before);

    // The good one: the parameter receives the initial value, then the committed one.
    const good = job(`  - name: saved
    source: { query_id: ${query_id} }
    incremental: { cursor: ts, parameter: since, initial: "2000-01-01" }
    outputs: [{ format: parquet, path: "\${DIR}/saved", mode: append }]
`);
    expect(await run(good)).toMatchObject({ rows: 100 });
    expect(await run(good)).toMatchObject({ rows: 0, fetchedRows: 0 });
  });
});

describe('append: bad input and schema drift', () => {
  const base = (name: string, path: string, sql: string, extra = '') => `  - name: ${name}
    source: { sql: "${sql}" }
    outputs: [{ format: parquet, path: "\${DIR}/${path}", mode: append${extra} }]
`;

  it('refuses an output written by another job or with another format or partitioning; nothing changes', async () => {
    await run(job(base('owner', 'owned', 'select id, name from sample.events where id <= 10')));
    const before = await readFile(join(dir, 'owned', '_manifest.json'), 'utf8');
    const other = await failure(run(job(base('intruder', 'owned', 'select id, name from sample.events where id <= 10'))));
    expect(other).toBeInstanceOf(AppendConflictError);
    expect(other.message).toMatch(/cannot append to file:\/\/.*owned: it was written by job "owner", not job "intruder"; give each job its own path/);
    const csv = await failure(run(job(`  - name: owner
    source: { sql: "select id, name from sample.events where id <= 10" }
    outputs: [{ format: csv, path: "\${DIR}/owned", mode: append }]
`)));
    expect(csv.message).toMatch(/it holds parquet files, not csv; append with format: parquet, or write to another path/);
    const partitioned = await failure(run(job(base('owner', 'owned', 'select id, name from sample.events where id <= 12', ', partition_by: [name]'))));
    expect(partitioned.message).toMatch(/it was written with no partition_by, this output has partition_by \[name\]/);
    expect(await readFile(join(dir, 'owned', '_manifest.json'), 'utf8')).toBe(before);
  });

  it('a changed column type fails naming the column and both types; a new column is added to parquet, refused for csv', async () => {
    await run(job(base('drift', 'drift', 'select id, amount from sample.events where id <= 10')));
    const changed = await failure(run(job(base('drift', 'drift', 'select id, amount::varchar as amount from sample.events where id > 10 and id <= 20'))));
    expect(changed).toBeInstanceOf(SchemaDriftError);
    expect(changed.message).toMatch(/column "amount" was decimal\(\d+, \d+\) in the committed output and is varchar in this result; cast it back to decimal\(\d+, \d+\) in the query, or use mode: replace/);

    const warnings: [string, Record<string, unknown>][] = [];
    const added = await runJob(job(base('drift', 'drift', 'select id, amount, name from sample.events where id > 10 and id <= 20')), {
      client,
      stateDir: join(dir, 'state'),
      signal: new AbortController().signal,
      events: { onWarning: (message, fields) => warnings.push([message, fields]) },
    });
    expect(added.rows).toBe(10);
    expect(warnings).toEqual([[expect.stringMatching(/^appended rows with new columns: the older files of the output lack them/), { output: added.outputs[0]!.url, columns: ['name'] }]]);
    const rows = await duck(`select count(*) as n, count(name) as names from read_parquet('${join(dir, 'drift')}/*.parquet', union_by_name = true)`);
    expect(rows).toEqual([{ n: '21', names: '10' }]);

    await run(job(`  - name: csvdrift
    source: { sql: "select id, amount from sample.events where id <= 10" }
    outputs: [{ format: csv, path: "\${DIR}/csvdrift", mode: append }]
`));
    const csvAdded = await failure(run(job(`  - name: csvdrift
    source: { sql: "select id, amount, name from sample.events where id > 10 and id <= 20" }
    outputs: [{ format: csv, path: "\${DIR}/csvdrift", mode: append }]
`)));
    expect(csvAdded).toBeInstanceOf(SchemaDriftError);
    expect(csvAdded.message).toMatch(/column "name" \(varchar\) is new, and csv files of one output must all have the same columns/);
  });

  it('re-running a run that committed is a no-op', async () => {
    const j = job(base('again', 'again', 'select id from sample.events where id <= 5'));
    const first = await run(j);
    const manifest = await readFile(join(dir, 'again', '_manifest.json'), 'utf8');
    const second = await runJob(j, { client, stateDir: join(dir, 'state'), signal: new AbortController().signal, executionId: first.executionId });
    expect(second.outputs[0]).toMatchObject({ skipped: true, rows: first.rows });
    expect(await readFile(join(dir, 'again', '_manifest.json'), 'utf8')).toBe(manifest);
  });
});
