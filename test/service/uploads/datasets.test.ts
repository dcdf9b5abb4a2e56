import { readdir, rm, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import { JsonStore } from '../../../src/service/store.ts';
import { Datasets, type DatasetRecord } from '../../../src/service/uploads/datasets.ts';
import { UploadError } from '../../../src/service/uploads/errors.ts';
import { SCRATCH_PREFIX } from '../../../src/service/engine/tables/serviceTables.ts';
import { startDuck, type DuckFixture } from '../views/duckFixture.ts';

let duck: DuckFixture;
let datasets: Datasets;
let storeDir: string;
const clock = new ManualClock(Date.UTC(2026, 0, 1));

beforeAll(async () => {
  duck = await startDuck();
  // The engine sets errors_as_json globally; the ingest must read those messages too.
  await duck.host.withConnection((c) => c.run('SET GLOBAL errors_as_json = true'));
  storeDir = await mkdtemp(join(tmpdir(), 'sluice-datasets-'));
  const store = new JsonStore<DatasetRecord>(storeDir);
  await store.init();
  datasets = new Datasets({ tables: duck.tables, clock, store });
});
afterAll(async () => {
  await duck?.close();
  await rm(storeDir, { recursive: true, force: true });
});

/** The upload's temporary CSV files, in the one directory the engine's DuckDB may read. */
async function scratchFiles(): Promise<string[]> {
  return (await readdir(join(duck.dataDir, 'results'))).filter((n) => n.startsWith(SCRATCH_PREFIX));
}

async function refusal(table: string, data: string): Promise<string> {
  const err = await datasets.upload('demo', { table_name: table, data }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(UploadError);
  expect((err as UploadError).status).toBe(400);
  return (err as UploadError).message;
}

describe('CSV upload', () => {
  it('creates service.<team>.dataset_<name> with inferred types that queries can read', async () => {
    const res = await datasets.upload('demo', {
      table_name: 'people',
      data: 'id,name,score,active,born,seen\n1,"Doe, Jane",1.5,true,2001-02-03,2026-01-01 10:00:00\n2,,2,false,,\n3,"say ""hi""\nthere",-7,true,1999-12-31,2026-01-02 00:00:00\n',
    });
    expect(res).toEqual({ success: true, table_name: 'service.demo.dataset_people', full_name: 'service.demo.dataset_people', example_query: 'SELECT * FROM service.demo.dataset_people LIMIT 10' });
    expect(await duck.rows('SELECT id, name, score, active, CAST(born AS VARCHAR) FROM service.demo.dataset_people ORDER BY id')).toEqual([
      ['1', 'Doe, Jane', 1.5, true, '2001-02-03'],
      ['2', null, 2, false, null],
      ['3', 'say "hi"\nthere', -7, true, '1999-12-31'],
    ]);
    expect(datasets.get('demo', 'dataset_people')?.columns.map((c) => c.type)).toEqual(['BIGINT', 'VARCHAR', 'DOUBLE', 'BOOLEAN', 'DATE', 'TIMESTAMP']);
    expect(datasets.storageBytes('demo')).toBeGreaterThan(100);
    // The temporary file is gone.
    expect(await scratchFiles()).toEqual([]);
  });

  it('replaces a dataset of the same name', async () => {
    await datasets.upload('demo', { table_name: 'again', data: 'a\n1\n2\n' });
    await datasets.upload('demo', { table_name: 'again', data: 'b\nx\n' });
    expect(await duck.rows('SELECT * FROM service.demo.dataset_again')).toEqual([['x']]);
  });

  it('a header-only file makes an empty table of text columns', async () => {
    await datasets.upload('demo', { table_name: 'empty', data: 'a,b\n' });
    expect(await duck.rows('SELECT count(*) FROM service.demo.dataset_empty')).toEqual([['0']]);
  });

  it('names the line of a row with too many or too few fields', async () => {
    expect(await refusal('bad', 'a,b\n1,2\n3,4\n5,6,7\n8,9\n')).toMatch(/^Bad Request: CSV line 4: Expected Number of Columns: 2 Found: 3 \(the line reads: 5,6,7\)$/);
    expect(await refusal('bad', 'a,b\n1,2\n3\n')).toMatch(/^Bad Request: CSV line 3: Expected Number of Columns: 2 Found: 1/);
    const many = `a,b\n${Array.from({ length: 3000 }, (_, i) => `${i},${i}`).join('\n')}\nx,y,z\n`;
    expect(await refusal('bad', many)).toMatch(/^Bad Request: CSV line 3002: /);
  });

  it('names the line of an unterminated quote', async () => {
    expect(await refusal('bad', 'a,b\n1,2\n3,"x\n')).toMatch(/^Bad Request: CSV line 3: Value with unterminated quote found/);
  });

  it('refuses a header with an empty or repeated name', async () => {
    expect(await refusal('bad', 'a,,c\n1,2,3\n')).toMatch(/CSV line 1 \(the header\): column 2 has no name/);
    expect(await refusal('bad', 'id,ID\n1,2\n')).toMatch(/columns 1 and 2 are both named "ID"/);
  });

  it('a refused upload leaves the previous table and no temp file', async () => {
    await datasets.upload('demo', { table_name: 'stable', data: 'v\n1\n' });
    await refusal('stable', 'v\n1\n2,3\n');
    expect(await duck.rows('SELECT * FROM service.demo.dataset_stable')).toEqual([['1']]);
    expect(await scratchFiles()).toEqual([]);
    expect(await duck.rows("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__upload%'")).toEqual([['0']]);
  });

  it('keeps teams apart and survives a restart of its catalog', async () => {
    await datasets.upload('other', { table_name: 'people', data: 'x\n1\n' });
    expect(await duck.rows('SELECT count(*) FROM service.demo.dataset_people')).toEqual([['3']]);
    const store = new JsonStore<DatasetRecord>(storeDir);
    await store.init();
    const again = new Datasets({ tables: duck.tables, clock, store });
    await again.load();
    expect(again.storageBytes('demo')).toBe(datasets.storageBytes('demo'));
    expect(again.get('other', 'dataset_people')?.rowCount).toBe(1);
  });
});
