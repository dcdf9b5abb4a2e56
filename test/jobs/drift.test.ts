import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { formatSummary, summaryFields } from '../../src/cli/output/summary.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { type OutputDrift, SchemaDriftPolicyError } from '../../src/jobs/drift.ts';
import type { RunRecord } from '../../src/jobs/runHistory.ts';
import { runJob } from '../../src/jobs/runJob.ts';
import { runShard } from '../../src/jobs/shards/runShard.ts';
import { ConfigError } from '../../src/errors.ts';
import { icebirdRead } from '../helpers/icebird.ts';
import { startProxy } from '../helpers/proxy.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { dir, svc, useJobHarness } from './jobHarness.ts';

// 3000 rows in pages of 500; ids 0..2999.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 500 } }, 'sluice-drift-');

let proxy: Awaited<ReturnType<typeof startProxy>>;
let counted: ServiceClient;
let s3: LocalS3;
let pages = 0;

beforeAll(async () => {
  proxy = await startProxy(svc.url, (url) => {
    if (url.includes('/results')) pages++;
    return undefined;
  });
  counted = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.admin, env: {} });
  s3 = await startLocalS3();
  await s3.createBucket('lake');
});
afterAll(async () => {
  await counted?.close();
  await proxy?.close();
  await s3?.stop();
});

function job(yaml: string): Job {
  return parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir, S3_ENDPOINT: s3.endpoint, AWS_REGION: s3.region } }).jobs[0]!;
}

/** One run through the counting proxy: its outcome, the drift it reported, the result pages it asked for. */
async function run(yaml: string) {
  pages = 0;
  const drift: OutputDrift[] = [];
  let record: RunRecord | undefined;
  const outcome = await runJob(job(yaml), { client: counted, stateDir: join(dir, 'state'), signal: new AbortController().signal, events: { onDrift: (d) => drift.push(d), onRecorded: (r) => (record = r) } }).then(
    (summary) => ({ summary, error: undefined }),
    (error: unknown) => ({ summary: undefined, error }),
  );
  return { ...outcome, drift, pages, record: record! };
}

const events = (where: string, columns: string) => `select ${columns} from sample.events where ${where} order by id`;

describe('schema_drift: fail', () => {
  it('a new column and a changed type stop the run before any page; the output keeps what it committed', async () => {
    const yaml = (columns: string) => `  - name: strict
    source: { sql: "${events('id < 1000', columns)}" }
    schema_drift: fail
    outputs: [{ format: parquet, path: "\${DIR}/strict" }]
`;
    const first = await run(yaml('id, name'));
    expect(first.summary).toMatchObject({ rows: 1000 });
    expect(first.drift).toEqual([]);
    expect(first.summary!.drift).toBeUndefined();

    const second = await run(yaml('id::varchar as id, name, amount'));
    expect(second.error).toBeInstanceOf(SchemaDriftPolicyError);
    expect((second.error as Error).message).toBe(
      `job strict: output ${join(dir, 'strict')}: schema drift (schema_drift: fail): column id was bigint, is varchar; column amount (decimal(18, 4)) is new; no page was fetched and nothing was published`,
    );
    expect(second.pages).toBe(0);
    expect(second.drift).toEqual([
      {
        output: 0,
        url: join(dir, 'strict'),
        policy: 'fail',
        action: 'failed',
        types: 'service',
        changes: [
          { column: 'id', change: 'type', from: 'bigint', to: 'varchar' },
          { column: 'amount', change: 'added', to: 'decimal(18, 4)' },
        ],
      },
    ]);
    expect(second.record).toMatchObject({ outcome: 'failed', fetched_rows: 0, error: { code: 'SCHEMA_DRIFT' } });
    const rows = await duck(`select count(*)::int as n, typeof(any_value(id)) as t from read_parquet('${join(dir, 'strict')}/*.parquet')`);
    expect(rows).toEqual([{ n: 1000, t: 'BIGINT' }]);

    // The same columns again: no drift, the run goes on.
    expect((await run(yaml('id, name'))).summary).toMatchObject({ rows: 1000 });
  });

  it('on S3: stopped before any page, the committed manifest byte for byte as it was', async () => {
    const yaml = (columns: string) => `  - name: strict-s3
    source: { sql: "${events('id < 600', columns)}" }
    outputs: [{ format: csv, path: "s3://lake/strict", schema_drift: fail, s3: { endpoint: "\${S3_ENDPOINT}", region: "\${AWS_REGION}", force_path_style: true } }]
`;
    expect((await run(yaml('id, name, quantity'))).summary).toMatchObject({ rows: 600 });
    const manifest = await s3.get('lake', 'strict/_manifest.json');
    const second = await run(yaml('id, quantity'));
    expect(second.error).toBeInstanceOf(SchemaDriftPolicyError);
    expect((second.error as Error).message).toContain('column name (varchar) is not in the result');
    expect(second.pages).toBe(0);
    expect(await s3.get('lake', 'strict/_manifest.json')).toEqual(manifest);
  });
});

describe('schema_drift: freeze', () => {
  it('CSV, append: a missing column is written as NULL, a new one dropped; a changed type fails before any page', async () => {
    const yaml = (where: string, columns: string) => `  - name: frozen
    source: { sql: "${events(where, columns)}" }
    schema_drift: freeze
    workers: 2
    outputs: [{ format: csv, path: "\${DIR}/frozen", mode: append, max_rows_per_file: 250 }]
`;
    expect((await run(yaml('id < 1000', 'id, name, quantity'))).summary).toMatchObject({ rows: 1000 });
    const second = await run(yaml('id >= 1000 and id < 2000', 'id, quantity, amount'));
    expect(second.error).toBeUndefined();
    expect(second.summary).toMatchObject({ fetchedRows: 1000 });
    expect(second.drift).toMatchObject([{ policy: 'freeze', action: 'frozen', changes: [{ column: 'name', change: 'removed', from: 'varchar' }, { column: 'amount', change: 'added' }] }]);
    expect(second.summary!.drift).toEqual(second.drift);
    expect(formatSummary(second.summary!)).toContain(`  schema drift (freeze: frozen) ${join(dir, 'frozen')}: column name (varchar) is not in the result; column amount (decimal(18, 4)) is new\n`);
    expect(summaryFields(second.summary!).drift).toEqual(second.drift);
    // Every file keeps the committed header: id, name, quantity.
    const all = await duck(`select count(*)::int as n, count(name)::int as named, sum(quantity)::bigint as q from read_csv('${join(dir, 'frozen')}/*.csv', union_by_name = true)`);
    const expected = await duck(`select sum(i % 1000)::bigint as q from range(2000) t(i)`);
    expect(all).toEqual([{ n: 2000, named: 1000, q: expected[0]!.q }]);
    const headers = await duck(`select distinct columns from (select list_sort(list_transform(json_keys(to_json(r)), x -> x)) as columns from read_csv('${join(dir, 'frozen')}/*.csv', union_by_name = true) r)`);
    expect(headers).toEqual([{ columns: ['id', 'name', 'quantity'] }]);

    const third = await run(yaml('id >= 2000', 'id, name, quantity::varchar as quantity'));
    expect(third.error).toBeInstanceOf(SchemaDriftPolicyError);
    expect((third.error as Error).message).toContain('schema drift (schema_drift: freeze keeps the committed types; cast the column back in the query, or write to another path): column quantity was integer, is varchar');
    expect(third.pages).toBe(0);
  });

  it('an Iceberg table: the new column is dropped and the table schema stays; fail stops before any page', async () => {
    const yaml = (policy: string, columns: string) => `  - name: ice
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: ${policy}
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/ice", mode: append }]
`;
    expect((await run(yaml('freeze', 'id, name'))).summary).toMatchObject({ rows: 300 });
    const frozen = await run(yaml('freeze', 'id, name, amount'));
    expect(frozen.error).toBeUndefined();
    expect(frozen.drift).toEqual([{ output: 0, url: join(dir, 'ice'), policy: 'freeze', action: 'frozen', types: 'iceberg', changes: [{ column: 'amount', change: 'added', to: 'decimal(18, 4)' }] }]);
    const hint = (await readFile(join(dir, 'ice', 'metadata', 'version-hint.text'), 'utf8')).trim();
    const metadata = JSON.parse(await readFile(join(dir, 'ice', 'metadata', `v${hint}.metadata.json`), 'utf8')) as { schemas: { fields: { name: string }[] }[] };
    expect(metadata.schemas.map((s) => s.fields.map((f) => f.name))).toEqual([['id', 'name']]);
    const rows = await icebirdRead(`file://${join(dir, 'ice')}`);
    expect(rows).toHaveLength(600);
    expect(Object.keys(rows[0]!).sort()).toEqual(['id', 'name']);

    const failed = await run(yaml('fail', 'id, name, amount'));
    expect((failed.error as Error).message).toContain('column amount (decimal(18, 4)) is new');
    expect(failed.pages).toBe(0);
    // evolve (the default) cannot change a type in a table either: said before any page, in the table's types.
    const retyped = await run(yaml('evolve', 'id::varchar as id, name'));
    expect((retyped.error as Error).message).toContain('column id was long, is string');
    expect(retyped.pages).toBe(0);
  });
});

describe('schema_drift: evolve (the default)', () => {
  it('Parquet, append: the new column is added, older files read NULL there; CSV cannot add one and fails before any page', async () => {
    const yaml = (name: string, format: string, where: string, columns: string) => `  - name: ${name}
    source: { sql: "${events(where, columns)}" }
    schema_drift: evolve
    outputs: [{ format: ${format}, path: "\${DIR}/${name}", mode: append }]
`;
    await run(yaml('grows', 'parquet', 'id < 500', 'id, name'));
    const grown = await run(yaml('grows', 'parquet', 'id >= 500 and id < 1000', 'id, name, amount'));
    expect(grown.drift).toMatchObject([{ policy: 'evolve', action: 'evolved', changes: [{ column: 'amount', change: 'added' }] }]);
    const read = await duck(`select count(*)::int as n, count(amount)::int as with_amount from read_parquet('${join(dir, 'grows')}/*.parquet', union_by_name = true)`);
    expect(read).toEqual([{ n: 1000, with_amount: 500 }]);

    await run(yaml('flat', 'csv', 'id < 500', 'id, name'));
    const flat = await run(yaml('flat', 'csv', 'id >= 500', 'id, name, amount'));
    expect((flat.error as Error).message).toContain('csv files of one output must all have the same columns: set schema_drift: freeze (drops the new columns)');
    expect(flat.pages).toBe(0);
  });

  it('without a policy or a drift notification nothing more is read: the run behaves as before', async () => {
    const yaml = (columns: string) => `  - name: plain
    source: { sql: "${events('id < 100', columns)}" }
    outputs: [{ format: parquet, path: "\${DIR}/plain" }]
`;
    await run(yaml('id'));
    const replaced = await run(yaml('id, name'));
    expect(replaced.summary).toMatchObject({ rows: 100 });
    expect(replaced.drift).toEqual([]);
    expect(replaced.summary!.drift).toBeUndefined();
  });
});

describe('schema_drift: per output, partitions, shards', () => {
  it("an output's own policy wins over the job's; freeze refuses a missing partition column", async () => {
    const yaml = (columns: string) => `  - name: mixed
    source: { sql: "${events('id < 200', columns)}" }
    schema_drift: fail
    outputs:
      - { format: parquet, path: "\${DIR}/mixed-a", schema_drift: evolve }
      - { format: ndjson, path: "\${DIR}/mixed-b", schema_drift: freeze, partition_by: [flag] }
`;
    expect((await run(yaml('id, flag'))).summary).toMatchObject({ rows: 200 });
    const grown = await run(yaml('id, flag, name'));
    expect(grown.error).toBeUndefined();
    expect(grown.drift.map((d) => [d.output, d.policy, d.action])).toEqual([
      [0, 'evolve', 'evolved'],
      [1, 'freeze', 'frozen'],
    ]);
    const unplaced = await run(yaml('id, name'));
    expect((unplaced.error as Error).message).toContain('schema_drift: freeze cannot write a partition_by column as NULL');
    expect(unplaced.pages).toBe(0);
  });

  it('a sharded run refuses freeze, and shard 0 stops on fail before any page', async () => {
    const yaml = (policy: string, columns: string) => `  - name: sharded-${policy}
    source: { sql: "${events('id < 1000', columns)}" }
    outputs: [{ format: parquet, path: "\${DIR}/sharded-${policy}", max_rows_per_file: 250, schema_drift: ${policy} }]
`;
    const frozen = await runShard(job(yaml('freeze', 'id')), { client: counted, signal: new AbortController().signal, shard: { index: 0, count: 2, runId: 'f1', from: '--shard 0/2' } }).catch((e: unknown) => e);
    expect(frozen).toBeInstanceOf(ConfigError);
    expect((frozen as Error).message).toContain('freeze reshapes the rows of the one read, and each shard reads its own');

    expect((await run(yaml('fail', 'id'))).summary).toMatchObject({ rows: 1000 });
    pages = 0;
    const failed = await runShard(job(yaml('fail', 'id, name')), { client: counted, signal: new AbortController().signal, shard: { index: 0, count: 2, runId: 'f2', from: '--shard 0/2' } }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(SchemaDriftPolicyError);
    expect(pages).toBe(0);
  });
});

describe('schema_drift: a narrower type widened into the output', () => {
  it('Parquet, append, evolve: integer rows go into the bigint column and a decimal into one with more digits, every file alike', async () => {
    const yaml = (where: string, columns: string, policy = 'evolve') => `  - name: wide
    source: { sql: "${events(where, columns)}" }
    schema_drift: ${policy}
    outputs: [{ format: parquet, path: "\${DIR}/wide", mode: append }]
`;
    await run(yaml('id < 500', 'id, quantity::bigint as quantity, amount'));
    const narrow = await run(yaml('id >= 500 and id < 1000', 'id, quantity, amount::decimal(12, 4) as amount'));
    expect(narrow.error).toBeUndefined();
    expect(narrow.drift).toEqual([
      {
        output: 0,
        url: join(dir, 'wide'),
        policy: 'evolve',
        action: 'evolved',
        types: 'service',
        changes: [
          { column: 'quantity', change: 'widened', from: 'bigint', to: 'integer' },
          { column: 'amount', change: 'widened', from: 'decimal(18, 4)', to: 'decimal(12, 4)' },
        ],
      },
    ]);
    const types = await duck(`select distinct name, type, precision from parquet_schema('${join(dir, 'wide')}/*.parquet') where name in ('quantity', 'amount') order by name`);
    expect(types).toEqual([
      { name: 'amount', type: 'INT64', precision: '18' },
      { name: 'quantity', type: 'INT64', precision: null },
    ]);
    const sums = await duck(`select sum(quantity)::bigint as q, sum(amount)::varchar as a from read_parquet('${join(dir, 'wide')}/*.parquet')`);
    const expected = await duck(`select sum(i % 1000)::bigint as q, sum((((i * 104729) % 100000000) / 10000.0)::decimal(18, 4))::varchar as a from range(1000) t(i)`);
    expect(sums).toEqual(expected);

    const strict = await run(yaml('id >= 1000', 'id, quantity, amount', 'fail'));
    expect((strict.error as Error).message).toContain("column quantity is integer, the output's bigint holds it");
    expect(strict.pages).toBe(0);
  });

  it("an Iceberg table: real rows go into the table's double column, the schema unchanged", async () => {
    const yaml = (columns: string) => `  - name: wide-ice
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: evolve
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/wide-ice", mode: append }]
`;
    await run(yaml('id, value'));
    const narrow = await run(yaml('id, value::real as value'));
    expect(narrow.error).toBeUndefined();
    expect(narrow.drift).toMatchObject([{ types: 'iceberg', action: 'evolved', changes: [{ column: 'value', change: 'widened', from: 'double', to: 'float' }] }]);
    const hint = (await readFile(join(dir, 'wide-ice', 'metadata', 'version-hint.text'), 'utf8')).trim();
    const metadata = JSON.parse(await readFile(join(dir, 'wide-ice', 'metadata', `v${hint}.metadata.json`), 'utf8')) as { schemas: unknown[] };
    expect(metadata.schemas).toHaveLength(1);
    const rows = await icebirdRead(`file://${join(dir, 'wide-ice')}`);
    expect(rows).toHaveLength(600);
  });
});
