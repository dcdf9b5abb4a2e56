import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSummary, summaryFields } from '../../src/cli/output/summary.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { ContractViolationError } from '../../src/jobs/errors.ts';
import { planRun } from '../../src/jobs/plan/planRun.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { formatPlan, planFields } from '../../src/cli/output/shardSummary.ts';
import { startProxy } from '../helpers/proxy.ts';
import { type LocalS3, startLocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { dir, job, svc, useJobHarness } from './jobHarness.ts';

// 3000 rows in pages of 500. The contract sets aside rows whose amount is above 9000 and those
// whose quantity breaks a predicate; DuckDB reads the outputs back and checks each side on its own.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 500 } }, 'sluice-quarantine-');

let proxy: Awaited<ReturnType<typeof startProxy>>;
let counted: ServiceClient;
const requests = { pages: 0, executes: 0 };
/** Aborts the run in progress when the proxy sees this many page requests (0: never). */
let stopAtPage = 0;
let stopper: AbortController | undefined;

beforeAll(async () => {
  proxy = await startProxy(svc.url, (url) => {
    if (url.includes('/results')) {
      requests.pages++;
      if (stopAtPage > 0 && requests.pages === stopAtPage) stopper?.abort(new Error('stopped by the test'));
    }
    if (url.includes('/execute')) requests.executes++;
    return undefined;
  });
  counted = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.admin, env: {} });
});
afterAll(async () => {
  await counted?.close();
  await proxy?.close();
});

async function run(yaml: string, options: { stopAt?: number; stateDir?: string; executionId?: string } = {}) {
  const j = job(yaml);
  requests.pages = 0;
  requests.executes = 0;
  stopAtPage = options.stopAt ?? 0;
  stopper = new AbortController();
  const warnings: string[] = [];
  const outcome = await runJob(j, {
    client: counted,
    stateDir: options.stateDir ?? join(dir, 'state'),
    signal: stopper.signal,
    ...(options.executionId === undefined ? {} : { executionId: options.executionId }),
    events: { onWarning: (m) => warnings.push(m) },
  }).then(
    (summary) => ({ summary, error: undefined }),
    (error: unknown) => ({ summary: undefined, error }),
  );
  stopAtPage = 0;
  return { ...outcome, warnings, pages: requests.pages, executes: requests.executes };
}

const CONTRACT = `    expect:
      on_violation: quarantine
      checks:
        amount: { max: 9000 }
        quantity: { predicate: "quantity between 10 and 990 or id % 100 = 0" }
`;
/** Rows that break the contract above, as SQL over the exported columns. */
const BROKEN = `(amount > 9000 or not (quantity between 10 and 990 or id % 100 = 0))`;

function quarantineJob(name: string, outputs: string): string {
  return `  - name: ${name}
    source: { sql: "select id, amount, quantity, day from sample.events order by id" }
${CONTRACT}    outputs:
${outputs}`;
}

/** What DuckDB reads: rows, distinct ids, rows that break the contract, of a parquet or csv glob. */
async function sides(main: string, quarantine: string) {
  const [m] = await duck(`select count(*)::INT as rows, count(distinct id)::INT as ids, count(*) filter (where ${BROKEN})::INT as broken from ${main}`);
  const [q] = await duck(`select count(*)::INT as rows, count(distinct id)::INT as ids, count(*) filter (where not ${BROKEN})::INT as fine,
      count(*) filter (where _check = 'expect.checks.amount.max' and amount <= 9000)::INT as wrong_amount,
      count(*) filter (where _check = 'expect.checks.quantity.predicate' and (amount > 9000 or quantity between 10 and 990 or id % 100 = 0))::INT as wrong_predicate,
      count(*) filter (where _row <> id + 1)::INT as wrong_row from ${quarantine}`);
  const [both] = await duck(`select count(*)::INT as overlap from ${main} m join ${quarantine} q using (id)`);
  return { main: m!, quarantine: q!, overlap: both!.overlap };
}

describe('on_violation: quarantine', () => {
  it('good rows to each output, bad rows with the check, column, reason and row beside each, both committed', async () => {
    const r = await run(quarantineJob('split', `      - { format: parquet, path: "\${DIR}/split" }\n      - { format: csv, path: "\${DIR}/split-csv" }\n`));
    expect(r.error).toBeUndefined();
    const parquet = await sides(`read_parquet('${dir}/split/*.parquet')`, `read_parquet('${dir}/split_quarantine/*.parquet')`);
    const [expected] = await duck(`select count(*) filter (where ${BROKEN})::INT as broken from read_parquet('${dir}/split/*.parquet', union_by_name = true)`);
    expect(expected!.broken).toBe(0);
    const bad = parquet.quarantine.rows as number;
    expect(bad).toBeGreaterThan(100);
    // Every result row is on exactly one side; the main side has no broken row, the quarantine no good one.
    expect(parquet).toEqual({ main: { rows: 3000 - bad, ids: 3000 - bad, broken: 0 }, quarantine: { rows: bad, ids: bad, fine: 0, wrong_amount: 0, wrong_predicate: 0, wrong_row: 0 }, overlap: 0 });
    // The CSV output and its quarantine hold the same split.
    const csv = await sides(`read_csv('${dir}/split-csv/*.csv')`, `read_csv('${dir}/split-csv_quarantine/*.csv')`);
    expect(csv).toEqual(parquet);
    const [reason] = await duck(`select _check, _column, _reason from read_parquet('${dir}/split_quarantine/*.parquet') where _check like '%amount%' order by _row limit 1`);
    expect(reason).toMatchObject({ _check: 'expect.checks.amount.max', _column: 'amount' });
    expect(reason!._reason).toMatch(/^row \d+ of the result: amount is "\d+\.\d{4}", above max 9000$/);

    const s = r.summary!;
    expect(s.outputs.map((o) => o.rows)).toEqual([3000 - bad, 3000 - bad]);
    expect(s.contract!.quarantine!.map((q) => ({ url: q.url.replace(/^file:\/\//, ''), rows: q.rows, skipped: q.skipped }))).toEqual([
      { url: join(dir, 'split_quarantine'), rows: bad, skipped: false },
      { url: join(dir, 'split-csv_quarantine'), rows: bad, skipped: false },
    ]);
    expect(s.contract!.quarantined!.map((q) => q.check).sort()).toEqual(['expect.checks.amount.max', 'expect.checks.quantity.predicate']);
    expect(formatSummary(s)).toMatch(/contract broken \(quarantine\): expect\.checks\.amount\.max: \d+ rows set aside, first: row \d+ of the result: amount is/);
    expect(summaryFields(s)).toMatchObject({ contract: { quarantine: [{ rows: bad }, { rows: bad }] } });

    // The same execution again: both outputs and both quarantines hold it already, nothing is written twice.
    const again = await run(quarantineJob('split', `      - { format: parquet, path: "\${DIR}/split" }\n      - { format: csv, path: "\${DIR}/split-csv" }\n`), { executionId: s.executionId });
    expect(again.error).toBeUndefined();
    expect(again.summary!.outputs.every((o) => o.skipped)).toBe(true);
    expect(again.summary!.contract!.quarantine!.map((q) => [q.skipped, q.rows])).toEqual([[true, bad], [true, bad]]);
    expect(again.pages).toBe(0);
  });

  it('a run without a bad row still commits an empty quarantine, so it never shows an older run\'s rows', async () => {
    const first = await run(quarantineJob('clean', `      - { format: parquet, path: "\${DIR}/clean" }\n`));
    expect(first.summary!.contract!.quarantine![0]!.rows).toBeGreaterThan(0);
    const r = await run(`  - name: clean
    source: { sql: "select id, amount, quantity, day from sample.events where amount <= 9000 and quantity between 10 and 990 order by id" }
${CONTRACT}    outputs:
      - { format: parquet, path: "\${DIR}/clean" }
`);
    expect(r.error).toBeUndefined();
    expect(r.summary!.contract!.quarantine![0]!.rows).toBe(0);
    expect(r.summary!.contract!.quarantined).toEqual([]);
    const [q] = await duck(`select count(*)::INT as n from read_parquet('${dir}/clean_quarantine/*.parquet')`).catch(() => [{ n: 0 }]);
    expect(q!.n).toBe(0);
  });

  it('a fail check beside quarantine ones still stops the run: the quarantine is not published either', async () => {
    const r = await run(`  - name: mixed
    source: { sql: "select id, amount, quantity, case when id = 1700 then null else id end as k from sample.events order by id" }
${CONTRACT}        k: { not_null: true, on_violation: fail }
    outputs:
      - { format: parquet, path: "\${DIR}/mixed" }
`);
    expect(r.error).toBeInstanceOf(ContractViolationError);
    expect(r.error).toMatchObject({ check: 'expect.checks.k.not_null', row: 1701 });
    expect(existsSync(join(dir, 'mixed'))).toBe(false);
    expect(existsSync(join(dir, 'mixed_quarantine', '_manifest.json'))).toBe(false);
  });

  it('a run stopped mid-read and resumed: same execution, every row once, on one side', async () => {
    const stateDir = join(dir, 'state-stop');
    const yaml = quarantineJob('stopped', `      - { format: parquet, path: "\${DIR}/stopped", max_rows_per_file: 400 }\n`);
    const stopped = await run(yaml, { stopAt: 4, stateDir });
    expect(stopped.error).toBeDefined();
    expect(existsSync(join(dir, 'stopped', '_manifest.json'))).toBe(false);
    const resumed = await run(yaml, { stateDir });
    expect(resumed.error).toBeUndefined();
    expect(resumed.summary!.resumed).toBe(true);
    expect(resumed.executes).toBe(0);
    const got = await sides(`read_parquet('${dir}/stopped/*.parquet')`, `read_parquet('${dir}/stopped_quarantine/*.parquet')`);
    const bad = got.quarantine.rows as number;
    expect(got.main).toEqual({ rows: 3000 - bad, ids: 3000 - bad, broken: 0 });
    expect(got.quarantine).toMatchObject({ ids: bad, fine: 0 });
    expect(got.overlap).toBe(0);
  });

  it('an output committed and its quarantine not (a kill between the two commits): the rerun writes the quarantine alone, once', async () => {
    const yaml = quarantineJob('between', `      - { format: csv, path: "\${DIR}/between" }\n`);
    const first = await run(yaml);
    const bad = first.summary!.contract!.quarantine![0]!.rows;
    await rm(join(dir, 'between_quarantine'), { recursive: true });
    const again = await run(yaml, { executionId: first.summary!.executionId });
    expect(again.error).toBeUndefined();
    expect(again.summary!.outputs[0]!.skipped).toBe(true);
    expect(again.summary!.contract!.quarantine![0]).toMatchObject({ skipped: false, rows: bad });
    const got = await sides(`read_csv('${dir}/between/*.csv')`, `read_csv('${dir}/between_quarantine/*.csv')`);
    expect(got.main.rows).toBe(3000 - bad);
    expect(got.quarantine).toMatchObject({ rows: bad, ids: bad, fine: 0 });
  });
});

describe('on_violation: quarantine on S3', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
    await s3.createBucket('lake');
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('writes the quarantine beside the output prefix, with the output\'s sink options', async () => {
    const r = await run(quarantineJob('s3split', `      - { format: parquet, path: "s3://lake/orders", s3: { endpoint: "${s3.endpoint}", force_path_style: true } }\n`));
    expect(r.error).toBeUndefined();
    const keys = await s3.list('lake');
    expect(keys).toContain('orders/_manifest.json');
    expect(keys).toContain('orders_quarantine/_manifest.json');
    const local = join(dir, 's3-copy');
    await s3.download('lake', 'orders/', join(local, 'orders'));
    await s3.download('lake', 'orders_quarantine/', join(local, 'orders_quarantine'));
    const got = await sides(`read_parquet('${local}/orders/*.parquet')`, `read_parquet('${local}/orders_quarantine/*.parquet')`);
    const bad = r.summary!.contract!.quarantine![0]!.rows;
    expect(bad).toBeGreaterThan(0);
    expect(got).toEqual({ main: { rows: 3000 - bad, ids: 3000 - bad, broken: 0 }, quarantine: { rows: bad, ids: bad, fine: 0, wrong_amount: 0, wrong_predicate: 0, wrong_row: 0 }, overlap: 0 });
    expect((await readdir(join(local, 'orders_quarantine'))).some((f) => f.endsWith('.parquet'))).toBe(true);
  });
});

describe('predicate checks', () => {
  it('fail: the first row that breaks it stops the run, naming the check, column, row and value', async () => {
    const r = await run(`  - name: pred
    source: { sql: "select id, amount from sample.events order by id" }
    expect:
      checks:
        amount: { predicate: "amount >= 0 and amount < 9990 or id < 0" }
    outputs: [{ format: csv, path: "\${DIR}/pred" }]
`);
    expect(r.error).toBeInstanceOf(ContractViolationError);
    expect(r.error).toMatchObject({ check: 'expect.checks.amount.predicate', column: 'amount' });
    expect((r.error as Error).message).toMatch(/^job pred: expect\.checks\.amount\.predicate: row \d+ of the result: amount is "99\d\d\.\d{4}", breaks predicate "amount >= 0 and amount < 9990 or id < 0"; nothing was published$/);
    expect(existsSync(join(dir, 'pred'))).toBe(false);
  });

  it('a predicate that does not fit the result\'s columns is a mistake in the job, said before any page', async () => {
    const r = await run(`  - name: pred-types
    source: { sql: "select id, amount, day from sample.events" }
    expect:
      checks:
        day: { predicate: "day > 20260101" }
    outputs: [{ format: csv, path: "\${DIR}/pred-types" }]
`);
    expect(r.error).toBeInstanceOf(ConfigError);
    expect((r.error as Error).message).toBe(
      "job pred-types: expect.checks.day.predicate: character 7 of \"day > 20260101\": a date compares with a date column or a '2024-01-31' literal, not a number",
    );
    expect(r.pages).toBe(0);
  });

  it('warn counts exactly the rows DuckDB finds breaking it (three-valued: NULL passes)', async () => {
    const r = await run(`  - name: pred-warn
    source: { sql: "select id, case when id % 10 = 0 then null else quantity end as quantity, day from sample.events order by id" }
    expect:
      on_violation: warn
      checks:
        quantity: { predicate: "quantity * 2 + 1 < 1500 and day between '2026-01-01' and '2026-10-31'" }
    outputs: [{ format: parquet, path: "\${DIR}/pred-warn" }]
`);
    expect(r.error).toBeUndefined();
    const [n] = await duck(`select count(*)::INT as n from read_parquet('${dir}/pred-warn/*.parquet') where not (quantity * 2 + 1 < 1500 and day between DATE '2026-01-01' and DATE '2026-10-31')`);
    expect(n!.n).toBeGreaterThan(0);
    expect(r.summary!.contract!.warnings).toEqual([expect.objectContaining({ check: 'expect.checks.quantity.predicate', count: n!.n })]);
  });
});

describe("an output's own expect", () => {
  it('its checks see only that output: its quarantine holds the rows it set aside, the other output gets every row', async () => {
    const r = await run(`  - name: own
    source: { sql: "select id, amount, quantity from sample.events order by id" }
    expect: { checks: { id: { not_null: true } } }
    outputs:
      - format: parquet
        path: "\${DIR}/own"
        expect: { on_violation: quarantine, checks: { amount: { max: 9000 } } }
      - { format: parquet, path: "\${DIR}/own-all" }
`);
    expect(r.error).toBeUndefined();
    const [m] = await duck(`select count(*)::INT as rows, count(*) filter (where amount > 9000)::INT as broken from read_parquet('${dir}/own/*.parquet')`);
    const [q] = await duck(`select count(*)::INT as rows, count(*) filter (where amount <= 9000)::INT as fine, min(_check) as check from read_parquet('${dir}/own_quarantine/*.parquet')`);
    const [all] = await duck(`select count(*)::INT as rows, count(*) filter (where amount > 9000)::INT as above from read_parquet('${dir}/own-all/*.parquet')`);
    expect(all).toEqual({ rows: 3000, above: q!.rows });
    expect(m).toEqual({ rows: 3000 - (q!.rows as number), broken: 0 });
    expect(q).toMatchObject({ fine: 0, check: 'outputs[0].expect.checks.amount.max' });
    expect(existsSync(join(dir, 'own-all_quarantine'))).toBe(false);
    expect(r.summary!.outputs.map((o) => o.rows)).toEqual([3000 - (q!.rows as number), 3000]);
    expect(r.summary!.contract!.quarantine!.map((o) => [o.url.replace(/^file:\/\//, ''), o.rows])).toEqual([[join(dir, 'own_quarantine'), q!.rows]]);

    // Its quarantine lost (a kill between the commits): the output is written again with it, same rows.
    await rm(join(dir, 'own_quarantine'), { recursive: true });
    const again = await run(`  - name: own
    source: { sql: "select id, amount, quantity from sample.events order by id" }
    expect: { checks: { id: { not_null: true } } }
    outputs:
      - format: parquet
        path: "\${DIR}/own"
        expect: { on_violation: quarantine, checks: { amount: { max: 9000 } } }
      - { format: parquet, path: "\${DIR}/own-all" }
`, { executionId: r.summary!.executionId });
    expect(again.error).toBeUndefined();
    expect(again.summary!.outputs.map((o) => o.skipped)).toEqual([false, true]);
    const [m2] = await duck(`select count(*)::INT as rows from read_parquet('${dir}/own/*.parquet')`);
    const [q2] = await duck(`select count(*)::INT as rows from read_parquet('${dir}/own_quarantine/*.parquet')`);
    expect([m2!.rows, q2!.rows]).toEqual([m!.rows, q!.rows]);
  });

  it('fail on one output publishes no output; columns are checked before any page', async () => {
    const r = await run(`  - name: own-fail
    source: { sql: "select id, amount from sample.events order by id" }
    outputs:
      - { format: csv, path: "\${DIR}/own-fail-a" }
      - { format: csv, path: "\${DIR}/own-fail-b", expect: { checks: { id: { max: 1200 } } } }
`);
    expect(r.error).toBeInstanceOf(ContractViolationError);
    expect(r.error).toMatchObject({ check: 'outputs[1].expect.checks.id.max', row: 1202, value: '1201' });
    expect(existsSync(join(dir, 'own-fail-a'))).toBe(false);
    expect(existsSync(join(dir, 'own-fail-b'))).toBe(false);

    const typed = await run(`  - name: own-types
    source: { sql: "select id, amount from sample.events order by id" }
    outputs:
      - { format: csv, path: "\${DIR}/own-types", expect: { columns: { amount: double } } }
`);
    expect((typed.error as Error).message).toBe('job own-types: outputs[0].expect.columns.amount: column amount is decimal(18, 4), expected double; nothing was published');
    expect(typed.pages).toBe(0);
  });
});

describe('--plan shows the contract', () => {
  it('every check, when the run makes it, what a violation does and where quarantined rows go; nothing is executed', async () => {
    const j = job(`  - name: planned
    source: { sql: "select id, amount, quantity from sample.events" }
    expect:
      columns: { id: bigint }
      rows: { min: 1 }
      on_violation: quarantine
      checks:
        amount: { max: 9000, predicate: "amount >= 0" }
        id: { unique: true, on_violation: warn }
    outputs:
      - { format: parquet, path: "\${DIR}/planned" }
      - { format: csv, path: "\${DIR}/planned-csv", expect: { checks: { quantity: { not_null: true } } } }
`);
    requests.executes = 0;
    const plan = await planRun(j, { client: counted, stateDir: join(dir, 'state-plan'), signal: new AbortController().signal, resume: true });
    expect(requests.executes).toBe(0);
    const text = formatPlan(plan);
    const lines = text.split('\n');
    const at = lines.indexOf('  contract:');
    expect(lines.slice(at + 1, at + 6)).toEqual([
      '    before any page        fail       expect.columns: id bigint',
      '    before any page        fail       expect.rows: at least 1 row',
      `    on every row           quarantine expect.checks.amount: max 9000, predicate "amount >= 0" -> ${join(dir, 'planned_quarantine')}, ${join(dir, 'planned-csv_quarantine')}`,
      '    on every row           warn       expect.checks.id: unique',
      '    on every row           fail       outputs[1].expect.checks.quantity: not_null',
    ]);
    expect(planFields(plan)).toMatchObject({ contract: [{ check: 'expect.columns', when: 'before-fetch', on_violation: 'fail' }, { check: 'expect.rows' }, { check: 'expect.checks.amount', on_violation: 'quarantine', quarantine: [join(dir, 'planned_quarantine'), join(dir, 'planned-csv_quarantine')] }, { check: 'expect.checks.id', on_violation: 'warn' }, { check: 'outputs[1].expect.checks.quantity', on_violation: 'fail' }] });
  });

  it('says "skip" where a run skips: an output a quarantine left fewer rows than the result', async () => {
    const yaml = quarantineJob('plan-skip', `      - { format: parquet, path: "\${DIR}/plan-skip" }\n`);
    const first = await run(yaml);
    expect(first.summary!.outputs[0]!.rows).toBeLessThan(3000);
    const plan = await planRun(job(yaml), { client: counted, stateDir: join(dir, 'state-plan'), signal: new AbortController().signal, resume: true, executionId: first.summary!.executionId });
    expect(plan.outputs.map((o) => o.action)).toEqual(['skip']);
    const again = await run(yaml, { executionId: first.summary!.executionId });
    expect(again.summary!.outputs.map((o) => o.skipped)).toEqual([true]);
  });
});
