import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJobFile, type JobFile } from '../../src/config/index.ts';
import { connect } from '../../src/jobs/run/connect.ts';
import { runJob, type JobSummary } from '../../src/jobs/run/runJob.ts';
import { loadSettingsFile } from '../../src/service/settings.ts';
import type { LocalS3 } from '../helpers/s3.ts';
import { startExampleStores, type ExampleStores } from '../helpers/exampleStores.ts';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import type { DevStore } from '../../scripts/devStore.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { ROOT } from '../cli/sluiceProcess.ts';
import { duck } from '../jobs/duck.ts';
import { icebirdRead } from '../helpers/icebird.ts';
import type { CatalogStandIn } from '../helpers/icebergCatalog.ts';
import { IcebergRestCatalog } from 'iceberg-js';
import { builtins } from '../../connectors/index.ts';
import { resolveOutput } from '../../src/export/index.ts';
import type { LocalGcs } from '../helpers/gcs.ts';

// Habit 11: every file in config/ is loaded and run here. A new file without a case below
// fails the first test, so examples cannot rot unnoticed.

const CONFIG = join(ROOT, 'config');
const files = (function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [relative(CONFIG, path)];
  });
})(CONFIG).sort();

const JOB_FILES = ['docker/jobs.yaml', 'examples/azure.yaml', 'examples/backfill.yaml', 'examples/csv.yaml', 'examples/dune-transfers.yaml', 'examples/gcs.yaml', 'examples/iceberg.yaml', 'examples/iceberg-rest.yaml', 'examples/incremental.yaml', 'examples/partitioned.yaml', 'examples/quickstart.yaml', 'examples/s3.yaml', 'examples/schedule.yaml'];
// config/kubernetes/* are checked and run by test/config/kubernetes.test.ts.
const OTHER_FILES = ['examples/stream-rows.ts', 'service.yaml', 'kubernetes/aws-batch-job-definition.json', 'kubernetes/aws-batch-submit-job.json', 'kubernetes/indexed-job.yaml'];

let stores: ExampleStores;
let work: string;
let s3: LocalS3;
let azure: DevStore;
let catalog: CatalogStandIn;
let gcs: LocalGcs;
let env: Record<string, string>;

beforeAll(async () => {
  stores = await startExampleStores('sluice-examples-');
  ({ work, s3, azure, gcs, catalog, env } = stores);
});
afterAll(async () => {
  expect(gcs?.violations).toEqual([]);
  await stores?.stop();
});

/** Runs every job of a file the way `sluice run` does, in this process; `between` runs after each pass but the last. */
async function runFile(file: JobFile, passes = 1, between?: (summaries: JobSummary[]) => Promise<void>): Promise<JobSummary[]> {
  const connection = await connect(file.connection, { env, cwd: work });
  try {
    const summaries: JobSummary[] = [];
    for (let pass = 0; pass < passes; pass++) {
      if (pass > 0) await between?.(summaries);
      for (const job of file.jobs) {
        summaries.push(await runJob(job, { client: connection.client, stateDir: join(work, 'state'), signal: new AbortController().signal }));
      }
    }
    return summaries;
  } finally {
    await connection.close();
  }
}

describe('config/', () => {
  it('every file has a test case', () => {
    expect(files).toEqual([...JOB_FILES, ...OTHER_FILES].sort());
  });

  it.each(JOB_FILES)('%s validates and every job in it runs', async (name) => {
    const file = await loadJobFile(join(CONFIG, name), { registry: builtins, env });
    // An incremental file runs twice: the second pass finds nothing new.
    let before: string[] = [];
    const manifests = (runs: JobSummary[]) => runs.slice(0, file.jobs.length).map((s) => readFileSync(join(new URL(s.outputs[0]!.url).pathname, '_manifest.json'), 'utf8'));
    const all = await runFile(file, name === 'examples/incremental.yaml' ? 2 : 1, async (runs) => void (before = manifests(runs)));
    const summaries = all.slice(0, file.jobs.length);
    const again = all.slice(file.jobs.length);
    expect(summaries.map((s) => s.job)).toEqual(file.jobs.map((j) => j.name));
    for (const summary of summaries) {
      expect(summary.rows).toBeGreaterThan(0);
      for (const output of summary.outputs) {
        expect(output.rows).toBe(summary.rows);
        if (output.url.startsWith('file://') && output.snapshot === undefined) expect(existsSync(join(new URL(output.url).pathname, '_SUCCESS'))).toBe(true);
      }
    }
    if (name === 'examples/backfill.yaml') {
      // One execution per day; the sample's 3000 rows (an hour) are all in the first one.
      expect(summaries[0]).toMatchObject({ rows: 3000, credits: 140, backfill: { chunks: 14, executed: 14, reused: 0, splits: 0 } });
    }
    if (name === 'examples/s3.yaml') {
      const keys = await s3.list('examples', 'exports/events/');
      expect(keys).toContain('exports/events/_SUCCESS');
      expect(keys.filter((k) => k.endsWith('.parquet')).length).toBe(1);
    }
    if (name === 'examples/gcs.yaml') {
      const names = await gcs.list('examples', 'sluice/events/');
      expect(names).toContain('sluice/events/_SUCCESS');
      expect(names.filter((n) => n.endsWith('.parquet')).length).toBe(1);
    }
    if (name === 'examples/azure.yaml') {
      const container = new BlobServiceClient(azure.env.AZURE_ENDPOINT!, new StorageSharedKeyCredential(azure.env.AZURE_STORAGE_ACCOUNT!, azure.env.AZURE_STORAGE_KEY!)).getContainerClient('examples');
      const names: string[] = [];
      for await (const blob of container.listBlobsFlat({ prefix: 'sluice/events/' })) names.push(blob.name);
      expect(names).toContain('sluice/events/_SUCCESS');
      expect(names.filter((n) => n.endsWith('.parquet')).length).toBe(1);
    }
    if (name === 'examples/iceberg.yaml') {
      // A table an independent Iceberg reader (icebird) reads: every row, days as the partition spec says.
      const table = join(env.SLUICE_OUT!, 'events-lake');
      const rows = await icebirdRead(`file://${table}`);
      expect(rows).toHaveLength(summaries[0]!.rows);
      // day is the date of ts: the sample's 3000 rows (an hour) are all on the first day.
      expect(rows.every((r) => (r.day as Date).toISOString().slice(0, 10) === (r.ts as Date).toISOString().slice(0, 10))).toBe(true);
      expect(new Set(rows.map((r) => (r.day as Date).toISOString().slice(0, 10)))).toEqual(new Set(['2026-01-01']));
      expect(summaries[0]!.outputs[0]!.snapshot).toMatch(/^\d+$/);
      expect(readdirSync(join(table, 'data')).sort()).toEqual(['day=2026-01-01']);
    }
    if (name === 'examples/iceberg-rest.yaml') {
      // The catalog holds analytics.events_lake at the path; iceberg-js loads it, icebird reads the rows the catalog points at.
      const loaded = await new IcebergRestCatalog({ baseUrl: catalog.uri, warehouse: 'lake', auth: { type: 'bearer', token: 'example-token' } }).loadTableResult({ namespace: ['analytics'], name: 'events_lake' });
      const table = join(env.SLUICE_OUT!, 'events_lake');
      expect(loaded!.metadata.location).toBe(`file://${table}`);
      const rows = await icebirdRead(`file://${table}`, undefined, String(loaded!['metadata-location']).slice(`file://${table}/metadata/`.length));
      expect(rows).toHaveLength(summaries[0]!.rows);
      expect(catalog.violations).toEqual([]);
    }
    if (name === 'examples/partitioned.yaml') {
      const [row] = await duck(
        `select count(*)::int as n, count(distinct day)::int as days, bool_and(day = cast(timezone('UTC', ts) as date)) as dated from read_parquet('${env.SLUICE_OUT}/events-by-day/*/*.parquet', hive_partitioning = true)`,
      );
      // The first week, as the backfill example's first seven chunks: the sample's 3000 rows are one hour of it.
      expect(row).toEqual({ n: 3000, days: 1, dated: true });
    }
    if (name === 'examples/incremental.yaml') {
      // The second pass: nothing new, fewer rows fetched than the first wrote, the commits as they were; every row once.
      expect(again.map((s, i) => [s.rows, s.fetchedRows < summaries[i]!.rows])).toEqual([
        [0, true],
        [0, true],
      ]);
      expect(manifests(all)).toEqual(before);
      const [ids] = await duck(`select count(*)::int as n, count(distinct id)::int as ids from read_parquet('${env.SLUICE_OUT}/events-sync/*.parquet')`);
      expect(ids).toEqual({ n: 3000, ids: 3000 });
      const [late] = await duck(`select count(*)::int as n, count(distinct id)::int as ids from read_ndjson_auto('${env.SLUICE_OUT}/late-events/*.ndjson')`);
      expect(late).toEqual({ n: 3000, ids: 3000 });
    }
    if (name === 'examples/dune-transfers.yaml') {
      // DuneSQL (0x literals, TIMESTAMP '... UTC', uint256 / double) over the Dune-shaped sample: three tokens every hour.
      const [row] = await duck(
        `select count(distinct symbol)::int as tokens, min(transfers)::int as fewest, min(volume_usd) > 0 as priced from read_parquet('${env.SLUICE_OUT}/token-volume-hourly/*.parquet')`,
      );
      expect(row).toEqual({ tokens: 3, fewest: expect.any(Number), priced: true });
      expect(row!.fewest).toBeGreaterThan(0);
    }
    if (name === 'examples/csv.yaml') {
      const dir = join(env.SLUICE_OUT!, 'daily-totals-csv');
      const csv = readdirSync(dir).find((n) => n.endsWith('.csv'))!;
      expect(readFileSync(join(dir, csv), 'utf8').split('\n')[0]).toBe('day;events;amount;avg_value');
      // Its expect: block held (a broken one fails the run before this point).
      expect(summaries[0]!.contract).toEqual({ warnings: [] });
    }
  });

  it('service.yaml is valid service settings and an embedded service started with it runs a job', async () => {
    const settings = await loadSettingsFile(join(CONFIG, 'service.yaml'));
    expect(settings.teams[0]!.keys.some((k) => k.scopes.includes('Admin'))).toBe(true);
    const [summary] = await runFile({
      connection: { embedded: { settings: join(CONFIG, 'service.yaml'), data_dir: join(work, 'settings-service'), sample_rows: 100 } },
      jobs: [{ name: 'with-settings', source: { sql: 'select count(*) as n from sample.events' }, outputs: [resolveOutput({ format: 'ndjson', path: join(work, 'with-settings') }, builtins)] }],
    });
    expect(summary!.rows).toBe(1);
  });

  it('examples/stream-rows.ts streams typed rows from the library', async () => {
    const svc: TestService = await startTestService({ sampleRows: 100 });
    try {
      const { spawn } = await import('node:child_process');
      const child = spawn('node', [join(CONFIG, 'examples/stream-rows.ts'), 'select id, amount from sample.events order by id limit 3'], {
        env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`, SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(err).toContain('3 rows in 1 pages');
      expect(code).toBe(0);
      expect(out.trim().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual([
        { id: '0', amount: '0.0000' },
        { id: '1', amount: '10.4729' },
        { id: '2', amount: '20.9458' },
      ]);
    } finally {
      await svc.close();
    }
  });
});
