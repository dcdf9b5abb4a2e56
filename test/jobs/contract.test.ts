import { existsSync, readdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSummary, summaryFields } from '../../src/cli/output/summary.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { ContractViolationError } from '../../src/jobs/errors.ts';
import type { RunRecord } from '../../src/jobs/run/runHistory.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { runShard } from '../../src/jobs/shards/runShard.ts';
import { journalsLeft, otherCommits } from '../helpers/localOutput.ts';
import { startProxy } from '../helpers/proxy.ts';
import { duck } from './duck.ts';
import { dir, job, svc, useJobHarness } from './jobHarness.ts';

// 3000 rows in pages of 500: a run that reads the whole result asks for 6 pages.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 500 } }, 'sluice-contract-');

const signal = () => new AbortController().signal;

/** The client goes through a proxy that counts the requests for result pages and executions. */
let proxy: Awaited<ReturnType<typeof startProxy>>;
let counted: ServiceClient;
const requests = { pages: 0, executes: 0 };

beforeAll(async () => {
  proxy = await startProxy(svc.url, (url) => {
    if (url.includes('/results')) requests.pages++;
    if (url.includes('/execute')) requests.executes++;
    return undefined;
  });
  counted = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.admin, env: {} });
});
afterAll(async () => {
  await counted?.close();
  await proxy?.close();
});

/** Runs a job through the counting proxy: its outcome, its run record, what it asked the service for and what the team was charged. */
async function run(yaml: string) {
  const j = job(yaml);
  requests.pages = 0;
  requests.executes = 0;
  const before = await counted.getUsage();
  let record: RunRecord | undefined;
  const warnings: string[] = [];
  const outcome = await runJob(j, { client: counted, stateDir: join(dir, 'state'), signal: signal(), events: { onRecorded: (r) => (record = r), onWarning: (m) => warnings.push(m) } }).then(
    (summary) => ({ summary, error: undefined }),
    (error: unknown) => ({ summary: undefined, error }),
  );
  const after = await counted.getUsage();
  return { ...outcome, record: record!, warnings, pages: requests.pages, executes: requests.executes, executions: after.executions - before.executions, charged: after.credits_used - before.credits_used };
}

/** No output, no journal, and no file staged in the output's area. (A failed export leaves its empty commit folder: any failed read does, not only a contract's.) */
function unpublished(path: string, published = false): void {
  if (!published) expect(existsSync(path)).toBe(false);
  expect(journalsLeft(path)).toEqual([]);
  const area = join(dirname(path), `.${basename(path)}.sluice`, 'v');
  const staged = otherCommits(path).flatMap((folder) => readdirSync(join(area, folder)));
  expect(staged).toEqual([]);
}

describe('expect: the columns, before any page is fetched', () => {
  it('a type that differs stops the run after the execution: no page requested, nothing written, nothing charged but the execution', async () => {
    const r = await run(`  - name: wrong-type
    source: { sql: "select id, name, amount from sample.events order by id" }
    expect:
      columns: { id: bigint, name: varchar, amount: double }
    outputs: [{ format: parquet, path: "\${DIR}/wrong-type" }]
`);
    expect(r.error).toBeInstanceOf(ContractViolationError);
    const error = r.error as ContractViolationError;
    expect(error).toMatchObject({ code: 'CONTRACT_VIOLATED', check: 'expect.columns.amount', column: 'amount', value: 'decimal(18, 4)' });
    expect(error.message).toBe('job wrong-type: expect.columns.amount: column amount is decimal(18, 4), expected double; nothing was published');
    expect({ pages: r.pages, executes: r.executes, executions: r.executions, charged: r.charged }).toEqual({ pages: 0, executes: 1, executions: 1, charged: 10 });
    expect(r.record).toMatchObject({ outcome: 'failed', credits: 10, fetched_rows: 0, files: 0, error: { code: 'CONTRACT_VIOLATED' } });
    unpublished(join(dir, 'wrong-type'));
  });

  it('a missing column is named with the columns the result has', async () => {
    const r = await run(`  - name: missing
    source: { sql: "select id, name from sample.events" }
    expect: { columns: { id: BIGINT, customer: varchar } }
    outputs: [{ format: csv, path: "\${DIR}/missing" }]
`);
    expect((r.error as ContractViolationError).message).toMatch(/expect\.columns\.customer: no column customer in the result \(columns: id bigint, name varchar\); nothing was published$/);
    expect(r.pages).toBe(0);
    unpublished(join(dir, 'missing'));
  });

  it('a row count the service reports out of range stops the run before any page', async () => {
    const r = await run(`  - name: too-many
    source: { sql: "select id from sample.events" }
    expect: { rows: { min: 1, max: 2999 } }
    outputs: [{ format: csv, path: "\${DIR}/too-many" }]
`);
    expect(r.error).toMatchObject({ check: 'expect.rows.max', value: 3000 });
    expect((r.error as Error).message).toMatch(/the service reports 3000 rows, more than max 2999/);
    expect({ pages: r.pages, executions: r.executions, charged: r.charged }).toEqual({ pages: 0, executions: 1, charged: 10 });
    unpublished(join(dir, 'too-many'));
  });

  it('a result that meets the contract is exported whole (case and spaces of types aside)', async () => {
    const r = await run(`  - name: meets
    source: { sql: "select id, name, amount, ts from sample.events order by id" }
    expect:
      columns: { id: BIGINT, amount: "DECIMAL(18,4)", ts: timestamp(6) with time zone }
      rows: { min: 3000, max: 3000 }
      checks:
        id: { not_null: true, unique: true, min: 0, max: 2999 }
        name: { not_null: true, accepted_values: [event_0, event_1, event_2, event_3, event_4, event_5, event_6, event_7, event_8, event_9], on_violation: warn }
    outputs: [{ format: parquet, path: "\${DIR}/meets" }]
`);
    expect(r.error).toBeUndefined();
    expect(r.summary).toMatchObject({ rows: 3000, fetchedRows: 3000 });
    expect(r.pages).toBe(6);
    // name takes 1000 values; 10 accepted, each held by 3 rows of 3000: the other 2970 are counted, one logged.
    expect(r.summary!.contract).toEqual({ warnings: [{ check: 'expect.checks.name.accepted_values', column: 'name', count: 2970, first: expect.stringMatching(/^row 11 of the result: name is "event_10", not one of accepted_values/) }] });
    expect(r.warnings.filter((w) => w.startsWith('contract broken'))).toHaveLength(1);
    expect(formatSummary(r.summary!)).toMatch(/\n {2}contract broken \(warn\): expect\.checks\.name\.accepted_values: 2970 violations, first: row 11 /);
    expect(summaryFields(r.summary!).contract).toEqual({ warnings: [expect.objectContaining({ check: 'expect.checks.name.accepted_values', count: 2970 })] });
    const files = await readdir(join(dir, 'meets'));
    const parquet = files.filter((f) => f.endsWith('.parquet')).map((f) => `'${join(dir, 'meets', f)}'`);
    expect(await duck(`select count(*)::INT as n, count(distinct id)::INT as ids from read_parquet([${parquet.join(',')}])`)).toEqual([{ n: 3000, ids: 3000 }]);
  });
});

describe('expect: column checks as the rows stream', () => {
  it('not_null: fails the read at the first NULL, naming the check, column, row and value; both outputs publish nothing and an earlier export stays as it was', async () => {
    const outputs = `    outputs:
      - { format: parquet, path: "\${DIR}/nulls/parquet" }
      - { format: csv, path: "\${DIR}/nulls/csv" }
`;
    const good = await run(`  - name: nulls
    source: { sql: "select id, name from sample.events order by id limit 10" }
${outputs}`);
    expect(good.error).toBeUndefined();
    const csvBefore = await readFile(join(dir, 'nulls', 'csv', (await readdir(join(dir, 'nulls', 'csv'))).find((f) => f.endsWith('.csv'))!), 'utf8');
    const r = await run(`  - name: nulls
    source: { sql: "select id, case when id = 1234 then null else name end as name from sample.events order by id" }
    expect:
      checks: { name: { not_null: true } }
${outputs}`);
    expect(r.error).toBeInstanceOf(ContractViolationError);
    expect(r.error).toMatchObject({ check: 'expect.checks.name.not_null', column: 'name', row: 1235, value: null });
    expect((r.error as Error).message).toBe('job nulls: expect.checks.name.not_null: row 1235 of the result: name is NULL, expected a value (not_null); nothing was published');
    // The NULL is on the third page of 500: the read stopped there or soon after, not at the end.
    expect(r.pages).toBeGreaterThanOrEqual(3);
    expect(r.record).toMatchObject({ outcome: 'failed', error: { code: 'CONTRACT_VIOLATED' } });
    const csvFiles = (await readdir(join(dir, 'nulls', 'csv'))).filter((f) => f.endsWith('.csv'));
    expect(csvFiles).toHaveLength(1);
    expect(await readFile(join(dir, 'nulls', 'csv', csvFiles[0]!), 'utf8')).toBe(csvBefore);
    for (const out of ['parquet', 'csv']) unpublished(join(dir, 'nulls', out), true);
  });

  it('unique: the second occurrence of a value fails, with its row', async () => {
    const r = await run(`  - name: dup
    source: { sql: "select case when id = 2500 then 7 else id end as k from sample.events order by id" }
    expect: { checks: { k: { unique: true } } }
    outputs: [{ format: ndjson, path: "\${DIR}/dup" }]
`);
    expect(r.error).toMatchObject({ check: 'expect.checks.k.unique', column: 'k', row: 2501, value: '7' });
    expect((r.error as Error).message).toMatch(/row 2501 of the result: k "7" appeared before in this run/);
    unpublished(join(dir, 'dup'));
  });

  it('min and max compare in the column\'s order (decimals, dates), accepted_values numbers numerically', async () => {
    const r = await run(`  - name: bounds
    source: { sql: "select amount, day, quantity from sample.events order by id" }
    expect:
      on_violation: warn
      checks:
        amount: { min: "0.0000", max: 9000 }
        day: { min: "2025-12-31", max: "2025-12-31" }
        quantity: { accepted_values: [0, 1.0, 2] }
    outputs: [{ format: csv, path: "\${DIR}/bounds" }]
`);
    expect(r.error).toBeUndefined();
    const counts = await duck(`select
      count(*) filter (where amount > 9000)::INT as amount,
      count(*) filter (where day > DATE '2025-12-31')::INT as day,
      count(*) filter (where quantity not in (0, 1, 2))::INT as quantity
      from (select (((i * 104729) % 100000000) / 10000.0)::DECIMAL(18, 4) as amount, (TIMESTAMP '2026-01-01' + to_microseconds(i * 1234567))::DATE as day, (i % 1000)::INTEGER as quantity from range(3000) t(i))`);
    const byCheck = Object.fromEntries(r.summary!.contract!.warnings.map((w) => [w.check, w.count]));
    expect(byCheck).toEqual({ 'expect.checks.amount.max': counts[0]!.amount, 'expect.checks.day.max': counts[0]!.day, 'expect.checks.quantity.accepted_values': counts[0]!.quantity });
    expect(counts[0]!.amount).toBeGreaterThan(0);
    expect(counts[0]!.day).toBe(3000); // every day of the sample is after the bound
    expect(r.summary!.rows).toBe(3000);
  });

  it('a row count checked at the end (result.filters: the service does not count the rows kept) fails before the commit', async () => {
    const r = await run(`  - name: few
    source: { sql: "select id, quantity from sample.events" }
    result: { filters: "quantity < 2" }
    expect: { rows: { min: 10 } }
    outputs: [{ format: parquet, path: "\${DIR}/few" }]
`);
    expect(r.error).toMatchObject({ check: 'expect.rows.min', value: 6 });
    expect((r.error as Error).message).toMatch(/the run read 6 rows, fewer than min 10/);
    expect(r.pages).toBeGreaterThan(0);
    unpublished(join(dir, 'few'));
  });

  it('min on a column without an order is a mistake in the job, said before any page', async () => {
    const r = await run(`  - name: unordered
    source: { sql: "select flag from sample.events" }
    expect: { checks: { flag: { min: 1 } } }
    outputs: [{ format: csv, path: "\${DIR}/unordered" }]
`);
    expect(r.error).toBeInstanceOf(ConfigError);
    expect((r.error as Error).message).toMatch(/expect\.checks\.flag\.min: column flag is boolean, which has no order/);
    expect(r.pages).toBe(0);
    unpublished(join(dir, 'unordered'));
  });
});

describe('expect on a sharded run', () => {
  it('shard 0 checks the columns from the metadata before it plans: no page, no plan, nothing written', async () => {
    const j = job(`  - name: sharded-wrong
    source: { sql: "select id, amount from sample.events order by id" }
    expect: { columns: { amount: double } }
    outputs: [{ format: parquet, path: "\${DIR}/sharded-wrong", max_rows_per_file: 500 }]
`);
    requests.pages = 0;
    const error = await runShard(j, { client: counted, signal: signal(), shard: { index: 0, count: 2, runId: 'r1', from: '--shard 0/2' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONTRACT_VIOLATED', check: 'expect.columns.amount' });
    expect(requests.pages).toBe(0);
    expect(existsSync(join(dir, 'sharded-wrong'))).toBe(false);
    // The shared area holds the execution's record (so a restarted shard 0 would not pay again), no plan and no part.
    const area = readdirSync(join(dir, '.sharded-wrong.sluice'), { recursive: true, encoding: 'utf8' }).map((f) => basename(f));
    expect(area).toContain('execution.json');
    expect(area.filter((f) => f.endsWith('.json'))).not.toContain('plan.json');
    expect(area.filter((f) => f.endsWith('.parquet'))).toEqual([]);
  });

  it('refuses column checks, which a shard could not make over rows it does not read', async () => {
    const j = job(`  - name: sharded-checks
    source: { sql: "select id from sample.events" }
    expect: { checks: { id: { unique: true } } }
    outputs: [{ format: parquet, path: "\${DIR}/sharded-checks", max_rows_per_file: 500 }]
`);
    const error = await runShard(j, { client: counted, signal: signal(), shard: { index: 0, count: 2, runId: 'r2', from: '--shard 0/2' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/expect\.checks: not supported on sharded runs yet/);
  });
});
