import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IcebergRestCatalog } from 'iceberg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { formatSummary, summaryFields } from '../../src/cli/output/summary.ts';
import { formatPlan, planFields } from '../../src/cli/output/shardSummary.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import { type ColumnChange, type OutputDrift, SchemaDriftPolicyError } from '../../src/jobs/drift/drift.ts';
import type { RunRecord } from '../../src/jobs/run/runHistory.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { planRun } from '../../src/jobs/plan/planRun.ts';
import { runShard } from '../../src/jobs/shards/runShard.ts';
import { ConfigError } from '../../src/errors.ts';
import { SchemaDriftError } from '../../src/export/errors.ts';
import { IcebergPartitionError } from '../../src/export/iceberg/errors.ts';
import { icebirdRead } from '../helpers/icebird.ts';
import { type CatalogStandIn, startCatalogStandIn } from '../helpers/icebergCatalog.ts';
import { startProxy } from '../helpers/proxy.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { duck } from './duck.ts';
import { dir, svc, useJobHarness } from './jobHarness.ts';

// 3000 rows in pages of 500; ids 0..2999.
useJobHarness({ sampleRows: 3000, limits: { page_rows: 500 } }, 'sluice-drift-');

let proxy: Awaited<ReturnType<typeof startProxy>>;
let counted: ServiceClient;
let s3: LocalS3;
let catalog: CatalogStandIn;
let pages = 0;

beforeAll(async () => {
  proxy = await startProxy(svc.url, (url) => {
    if (url.includes('/results')) pages++;
    return undefined;
  });
  counted = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.admin, env: {} });
  s3 = await startLocalS3();
  await s3.createBucket('lake');
  catalog = await startCatalogStandIn();
});
afterAll(async () => {
  // Every request and answer of the catalog followed the Iceberg REST OpenAPI document.
  expect(catalog?.violations).toEqual([]);
  await catalog?.stop();
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

/** The drift an evolved manifest output at ${DIR}/<name> reports. */
const evolvedAt = (name: string, changes: ColumnChange[]): OutputDrift[] => [{ output: 0, url: join(dir, name), policy: 'evolve', action: 'evolved', types: 'service', changes }];

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

describe('schema_drift: an Iceberg table in a REST catalog (its schema read from the catalog before the fetch)', () => {
  const yaml = (name: string, policy: string, columns: string) => `  - name: ${name}
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: ${policy}
    outputs:
      - format: parquet
        table: iceberg
        mode: append
        path: "\${DIR}/${name}"
        catalog: { type: rest, uri: "${catalog.uri}", warehouse: main, namespace: analytics }
`;
  /** The table as iceberg-js loads it from the catalog, and icebird's rows of the data its metadata points at. */
  async function readBack(table: string) {
    const result = await new IcebergRestCatalog({ baseUrl: catalog.uri, warehouse: 'main' }).loadTableResult({ namespace: ['analytics'], name: table });
    const metadata = result!.metadata as unknown as { location: string; schemas: { fields: { name: string; type: string }[] }[]; snapshots: unknown[] };
    const file = String(result!['metadata-location']).slice(`${metadata.location}/metadata/`.length);
    return { metadata, rows: await icebirdRead(metadata.location, undefined, file) };
  }

  it('freeze: the new column is dropped, the catalog\'s schema unchanged; read back by iceberg-js and icebird', async () => {
    expect((await run(yaml('rest_frozen', 'freeze', 'id, name'))).summary).toMatchObject({ rows: 300 });
    const frozen = await run(yaml('rest_frozen', 'freeze', 'id, name, amount'));
    expect(frozen.error).toBeUndefined();
    expect(frozen.drift).toEqual([{ output: 0, url: join(dir, 'rest_frozen'), policy: 'freeze', action: 'frozen', types: 'iceberg', changes: [{ column: 'amount', change: 'added', to: 'decimal(18, 4)' }] }]);
    const { metadata, rows } = await readBack('rest_frozen');
    expect(metadata.schemas.map((s) => s.fields.map((f) => f.name))).toEqual([['id', 'name']]);
    expect(metadata.snapshots).toHaveLength(2);
    expect(rows).toHaveLength(600);
    expect(Object.keys(rows[0]!).sort()).toEqual(['id', 'name']);
  });

  it('fail: a new column and a changed type stop the run before any page; the catalog gets no commit', async () => {
    expect((await run(yaml('rest_strict', 'fail', 'id, name'))).summary).toMatchObject({ rows: 300 });
    const commits = () => catalog.requests.filter((r) => r.operation === 'updateTable').length;
    const committed = commits();
    const failed = await run(yaml('rest_strict', 'fail', 'id::varchar as id, name, amount'));
    expect(failed.error).toBeInstanceOf(SchemaDriftPolicyError);
    expect((failed.error as Error).message).toBe(
      `job rest_strict: output ${join(dir, 'rest_strict')}: schema drift (schema_drift: fail): column id was long, is string; column amount (decimal(18, 4)) is new; no page was fetched and nothing was published`,
    );
    expect(failed.pages).toBe(0);
    expect(failed.record).toMatchObject({ outcome: 'failed', fetched_rows: 0, error: { code: 'SCHEMA_DRIFT' } });
    expect(commits()).toBe(committed);
    const { metadata, rows } = await readBack('rest_strict');
    expect(metadata.snapshots).toHaveLength(1);
    expect(rows).toHaveLength(300);
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
    expect((flat.error as Error).message).toContain('csv files of one output must all have the same columns and types: set schema_drift: freeze (drops the new columns)');
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
    expect(narrow.drift).toEqual(evolvedAt('wide', [
      { column: 'quantity', change: 'widened', from: 'bigint', to: 'integer' },
      { column: 'amount', change: 'widened', from: 'decimal(18, 4)', to: 'decimal(12, 4)' },
    ]));
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

describe('schema_drift: a wider type promoted into the output (evolve)', () => {
  const BIG = 3_000_000_000; // beyond a 32-bit integer: only a promoted column holds it
  const narrowCols = 'id, quantity, amount::decimal(12, 4) as amount, value::real as value';
  const wideCols = `id, quantity::bigint + ${BIG} as quantity, amount, value`;

  it('Parquet and NDJSON, append: the new files carry the wider types; readers that merge by name read every file as them', async () => {
    const yaml = (name: string, format: string, where: string, columns: string, policy = 'evolve') => `  - name: ${name}
    source: { sql: "${events(where, columns)}" }
    schema_drift: ${policy}
    outputs: [{ format: ${format}, path: "\${DIR}/${name}", mode: append }]
`;
    for (const format of ['parquet', 'ndjson']) {
      const name = `promote-${format}`;
      expect((await run(yaml(name, format, 'id < 500', narrowCols))).summary).toMatchObject({ rows: 500 });
      const wide = await run(yaml(name, format, 'id >= 500 and id < 1000', wideCols));
      expect(wide.error).toBeUndefined();
      expect(wide.drift).toEqual(evolvedAt(name, [
        { column: 'quantity', change: 'promoted', from: 'integer', to: 'bigint' },
        { column: 'amount', change: 'promoted', from: 'decimal(12, 4)', to: 'decimal(18, 4)' },
        { column: 'value', change: 'promoted', from: 'real', to: 'double' },
      ]));
      expect(formatSummary(wide.summary!)).toContain('column quantity was integer, is the wider bigint');
    }
    // DuckDB merging the Parquet files by name: BIGINT, DECIMAL(18,4) and DOUBLE, the older files' values exact.
    const parquet = `read_parquet('${join(dir, 'promote-parquet')}/*.parquet', union_by_name = true)`;
    const types = await duck(`select typeof(quantity) as q, typeof(amount) as a, typeof(value) as v, count(*)::int as n from ${parquet} group by all`);
    expect(types).toEqual([{ q: 'BIGINT', a: 'DECIMAL(18,4)', v: 'DOUBLE', n: 1000 }]);
    const sums = `sum(quantity)::varchar as q, sum(amount)::varchar as a`;
    const expected = await duck(
      `select ${sums} from (select case when i < 500 then i % 1000 else (i % 1000) + ${BIG} end as quantity, case when i < 500 then ((((i * 104729) % 100000000) / 10000.0)::decimal(18, 4))::decimal(12, 4) else (((i * 104729) % 100000000) / 10000.0)::decimal(18, 4) end as amount from range(1000) t(i))`,
    );
    expect(await duck(`select ${sums} from ${parquet}`)).toEqual(expected);
    // NDJSON read back by DuckDB's JSON reader: the numbers of both runs.
    expect(await duck(`select sum(quantity)::varchar as q, count(*)::int as n from read_json('${join(dir, 'promote-ndjson')}/*.ndjson', union_by_name = true)`)).toEqual([{ q: expected[0]!.q, n: 1000 }]);
  });

  it('CSV append, freeze and fail: a wider type stops the run before any page', async () => {
    const yaml = (name: string, format: string, columns: string, policy: string) => `  - name: ${name}
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: ${policy}
    outputs: [{ format: ${format}, path: "\${DIR}/${name}", mode: append }]
`;
    await run(yaml('promote-csv', 'csv', 'id, quantity', 'evolve'));
    const csv = await run(yaml('promote-csv', 'csv', 'id, quantity::bigint as quantity', 'evolve'));
    expect((csv.error as Error).message).toContain('column quantity was integer, is the wider bigint');
    expect((csv.error as Error).message).toContain('csv files of one output must all have the same columns and types');
    expect(csv.pages).toBe(0);
    await run(yaml('promote-frozen', 'parquet', 'id, quantity', 'freeze'));
    const frozen = await run(yaml('promote-frozen', 'parquet', 'id, quantity::bigint as quantity', 'freeze'));
    expect((frozen.error as Error).message).toContain('schema_drift: freeze keeps the committed types');
    expect(frozen.pages).toBe(0);
    const failed = await run(yaml('promote-frozen', 'parquet', 'id, quantity::bigint as quantity', 'fail'));
    expect((failed.error as Error).message).toContain('(schema_drift: fail): column quantity was integer, is the wider bigint');
    expect(failed.pages).toBe(0);
  });

  it('without a policy, a Parquet append takes the wider type too (the append check accepts it); CSV still refuses it at the write', async () => {
    const yaml = (name: string, format: string, columns: string) => `  - name: ${name}
    source: { sql: "${events('id < 200', columns)}" }
    outputs: [{ format: ${format}, path: "\${DIR}/${name}", mode: append }]
`;
    await run(yaml('promote-plain', 'parquet', 'id, quantity'));
    const wide = await run(yaml('promote-plain', 'parquet', `id, quantity::bigint + ${BIG} as quantity`));
    expect(wide.error).toBeUndefined();
    expect(wide.drift).toEqual([]);
    expect(await duck(`select typeof(quantity) as t, max(quantity)::varchar as m from read_parquet('${join(dir, 'promote-plain')}/*.parquet', union_by_name = true) group by all`)).toEqual([{ t: 'BIGINT', m: String(BIG + 199) }]);
    await run(yaml('promote-plain-csv', 'csv', 'id, quantity'));
    const csv = await run(yaml('promote-plain-csv', 'csv', 'id, quantity::bigint as quantity'));
    expect(csv.error).toBeInstanceOf(SchemaDriftError);
    expect((csv.error as Error).message).toContain('was integer in the committed output and is bigint in this result');
  });

  it('an Iceberg table by path: int to long, float to double and decimal(12, 4) to decimal(18, 4) in a new schema with the same field ids; icebird reads both snapshots', async () => {
    const yaml = (name: string, columns: string, extra = '') => `  - name: ${name}
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: evolve
    outputs: [{ format: parquet, table: iceberg, path: "\${DIR}/${name}", mode: append${extra} }]
`;
    await run(yaml('promote-ice', narrowCols));
    const wide = await run(yaml('promote-ice', wideCols));
    expect(wide.error).toBeUndefined();
    expect(wide.drift).toMatchObject([
      {
        types: 'iceberg',
        action: 'evolved',
        changes: [
          { column: 'quantity', change: 'promoted', from: 'int', to: 'long' },
          { column: 'amount', change: 'promoted', from: 'decimal(12, 4)', to: 'decimal(18, 4)' },
          { column: 'value', change: 'promoted', from: 'float', to: 'double' },
        ],
      },
    ]);
    const hint = (await readFile(join(dir, 'promote-ice', 'metadata', 'version-hint.text'), 'utf8')).trim();
    const metadata = JSON.parse(await readFile(join(dir, 'promote-ice', 'metadata', `v${hint}.metadata.json`), 'utf8')) as { 'current-schema-id': number; schemas: { 'schema-id': number; fields: { id: number; name: string; type: string }[] }[] };
    expect(metadata.schemas.map((s) => s.fields.map((f) => `${f.id}:${f.name}:${f.type}`))).toEqual([
      ['1:id:long', '2:quantity:int', '3:amount:decimal(12, 4)', '4:value:float'],
      ['1:id:long', '2:quantity:long', '3:amount:decimal(18, 4)', '4:value:double'],
    ]);
    expect(metadata['current-schema-id']).toBe(1);
    const rows = await icebirdRead(`file://${join(dir, 'promote-ice')}`);
    expect(rows).toHaveLength(600);
    const quantities = rows.map((r) => BigInt(r.quantity as number | bigint)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(quantities[0]).toBe(0n);
    expect(quantities.at(-1)).toBe(BigInt(BIG + 299));

    // A partition column keeps its type: refused before any page.
    await run(yaml('promote-ice-part', 'id, quantity', ', partition_by: [quantity]'));
    const part = await run(yaml('promote-ice-part', 'id, quantity::bigint as quantity', ', partition_by: [quantity]'));
    expect((part.error as Error).message).toContain('a partition column of an Iceberg table keeps its type');
    expect(part.pages).toBe(0);
    // Without a policy the write refuses it the same, before anything is committed.
    const unwatched = await run(yaml('promote-ice-part', 'id, quantity::bigint as quantity', ', partition_by: [quantity]').replace('    schema_drift: evolve\n', ''));
    expect(unwatched.error).toBeInstanceOf(IcebergPartitionError);
    expect((unwatched.error as Error).message).toContain('partition_by[0]: column quantity is int in the table and long in this result; a partition column keeps its type: cast it back to int in the query');
  });

  it('an Iceberg table in a REST catalog: the promoted schema is committed through the catalog (add-schema), read back by iceberg-js and icebird', async () => {
    const yaml = (columns: string) => `  - name: rest_promote
    source: { sql: "${events('id < 300', columns)}" }
    schema_drift: evolve
    outputs:
      - format: parquet
        table: iceberg
        mode: append
        path: "\${DIR}/rest_promote"
        catalog: { type: rest, uri: "${catalog.uri}", warehouse: main, namespace: analytics }
`;
    await run(yaml('id, quantity'));
    const wide = await run(yaml(`id, quantity::bigint + ${BIG} as quantity`));
    expect(wide.error).toBeUndefined();
    expect(wide.drift).toMatchObject([{ types: 'iceberg', action: 'evolved', changes: [{ column: 'quantity', change: 'promoted', from: 'int', to: 'long' }] }]);
    const result = await new IcebergRestCatalog({ baseUrl: catalog.uri, warehouse: 'main' }).loadTableResult({ namespace: ['analytics'], name: 'rest_promote' });
    const metadata = result!.metadata as unknown as { location: string; 'current-schema-id': number; schemas: { 'schema-id': number; fields: { name: string; type: string }[] }[] };
    const current = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id'])!;
    expect(current.fields.map((f) => `${f.name}:${f.type}`)).toEqual(['id:long', 'quantity:long']);
    const file = String(result!['metadata-location']).slice(`${metadata.location}/metadata/`.length);
    const rows = await icebirdRead(metadata.location, undefined, file);
    expect(rows).toHaveLength(600);
    expect(rows.map((r) => BigInt(r.quantity as number | bigint)).reduce((a, b) => a + b, 0n)).toBe(2n * BigInt((299 * 300) / 2) + 300n * BigInt(BIG));
  });
});

describe('--plan', () => {
  it("shows each output's schema_drift policy (its own, else the job's) when the job sets one, and nothing when it sets none", async () => {
    const plan = async (yaml: string) => planRun(job(yaml), { client: counted, stateDir: join(dir, 'state'), signal: new AbortController().signal, resume: true });
    const set = await plan(`  - name: planned
    source: { sql: "${events('id < 10', 'id')}" }
    schema_drift: fail
    outputs:
      - { format: parquet, path: "\${DIR}/planned-a" }
      - { format: csv, path: "\${DIR}/planned-b", mode: append, schema_drift: freeze }
`);
    expect(set.outputs.map((o) => o.schemaDrift)).toEqual(['fail', 'freeze']);
    const text = formatPlan(set);
    expect(text).toContain(`${join(dir, 'planned-a')}  parquet  write\n    schema_drift: fail (any change of columns or types fails before any page)\n`);
    expect(text).toContain('    schema_drift: freeze (the committed columns are kept: new ones dropped, missing ones NULL)\n');
    expect((planFields(set) as { outputs: { schema_drift?: string }[] }).outputs.map((o) => o.schema_drift)).toEqual(['fail', 'freeze']);

    const unset = await plan(`  - name: unplanned
    source: { sql: "${events('id < 10', 'id')}" }
    outputs: [{ format: parquet, path: "\${DIR}/unplanned" }]
`);
    expect(unset.outputs[0]!.schemaDrift).toBeUndefined();
    expect(formatPlan(unset)).not.toContain('schema_drift');
    expect((planFields(unset) as { outputs: Record<string, unknown>[] }).outputs[0]).not.toHaveProperty('schema_drift');
  });
});
