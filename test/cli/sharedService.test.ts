// One embedded service per data folder, shared by processes: while `sluice schedule` runs the
// folder's service, `usage`, `query` and `run --processes 2` in the same folder use it over
// loopback (found through the folder's owner.json, with the owner's key) instead of failing on
// DuckDB's lock; `--processes` alone starts one service for its shards; an owner killed -9 is
// detected as stale and replaced.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { logLines, sluice, startSluice, terminate } from './sluiceProcess.ts';

const ROWS = 20_000;
let dir: string;
let file: string;
let dataDir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-shared-'));
  dataDir = join(dir, 'service');
  file = join(dir, 'job.yaml');
  await writeFile(
    file,
    [
      'connection:',
      '  embedded:',
      `    data_dir: ${dataDir}`,
      `    sample_rows: ${ROWS}`,
      `state_dir: ${join(dir, 'state')}`,
      'jobs:',
      '  - name: events',
      '    source: { sql: "select * from sample.events" }',
      `    outputs: [{ format: parquet, path: "\${OUT}", max_rows_per_file: 5000 }]`,
      '    schedule: "0 0 1 1 *"',
      '',
    ].join('\n'),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function parquetRows(path: string): Promise<number> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    return Number((await conn.runAndReadAll(`select count(*) from read_parquet('${path}/**/*.parquet')`)).getRowsJson()[0]![0]);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

const shared = (stderr: string): Record<string, unknown>[] => logLines(stderr).filter((l) => l.msg === "using the data folder's service, run by another process");
const ignoredRows = (stderr: string): Record<string, unknown>[] => logLines(stderr).filter((l) => /^embedded\.sample_rows \(\d+\) is ignored/.test(String(l.msg)));
const started = (stderr: string): Record<string, unknown>[] => logLines(stderr).filter((l) => l.msg === 'started the embedded local service');

describe('one service per data folder', () => {
  it('while schedule runs the folder\'s service, usage, query and run --processes 2 use it', async () => {
    const schedule = startSluice(['schedule', file], { env: { OUT: join(dir, 'unused') } });
    await schedule.waitFor(/"scheduled"/, 120_000);
    const owner = JSON.parse(await readFile(join(dataDir, 'owner.json'), 'utf8')) as { pid: number; url: string; key?: string };
    expect(owner.pid).toBe(schedule.child.pid);
    expect(owner.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
    // It holds a key: only its user can read it.
    expect((await stat(join(dataDir, 'owner.json'))).mode & 0o077).toBe(0);

    const usage = await sluice(['usage', '--data-dir', dataDir, '--json']);
    expect(usage.code, usage.stderr).toBe(0);
    expect(JSON.parse(usage.stdout)).toMatchObject({ team: 'demo' });
    expect(shared(usage.stderr)).toHaveLength(1);
    expect(started(usage.stderr)).toHaveLength(0);

    const query = await sluice(['query', '--data-dir', dataDir, 'select count(*) as n from sample.events']);
    expect(query.code, query.stderr).toBe(0);
    expect(query.stdout).toContain(String(ROWS));
    expect(shared(query.stderr)).toHaveLength(1);

    const out = join(dir, 'out-shards');
    const run = await sluice(['run', file, '--processes', '2'], { env: { OUT: out } });
    expect(run.code, run.stderr).toBe(0);
    // The parent and both shards used the schedule's service; none opened the folder.
    expect(shared(run.stderr)).toHaveLength(3);
    expect(started(run.stderr)).toHaveLength(0);
    expect(await parquetRows(out)).toBe(ROWS);
    expect(ignoredRows(run.stderr)).toHaveLength(0);

    // A job asking for another sample size cannot have it from this service: it says so.
    const other = join(dir, 'job-500.yaml');
    await writeFile(other, (await readFile(file, 'utf8')).replace(`sample_rows: ${ROWS}`, 'sample_rows: 500'));
    const small = await sluice(['run', other], { env: { OUT: join(dir, 'out-500') } });
    expect(small.code, small.stderr).toBe(0);
    expect(ignoredRows(small.stderr)).toEqual([expect.objectContaining({ level: 'warn', pid: schedule.child.pid, sample_rows: 500 })]);
    expect(await parquetRows(join(dir, 'out-500'))).toBe(ROWS);

    const { result } = await terminate(schedule);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
  }, 300_000);

  it('run --processes 2 with no service running starts one, which both shards use', async () => {
    const out = join(dir, 'out-alone');
    const run = await sluice(['run', file, '--processes', '2', '--fresh'], { env: { OUT: out } });
    expect(run.code, run.stderr).toBe(0);
    expect(started(run.stderr)).toHaveLength(1);
    expect(shared(run.stderr)).toHaveLength(2);
    expect(await parquetRows(out)).toBe(ROWS);
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
  }, 300_000);

  it('an owner killed -9 is stale: the next process removes its record and opens the folder', async () => {
    const schedule = startSluice(['schedule', file], { env: { OUT: join(dir, 'unused') } });
    await schedule.waitFor(/"scheduled"/, 120_000);
    schedule.child.kill('SIGKILL');
    await schedule.done;
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(true);

    const usage = await sluice(['usage', '--data-dir', dataDir, '--json']);
    expect(usage.code, usage.stderr).toBe(0);
    expect(started(usage.stderr)).toHaveLength(1);
    expect(shared(usage.stderr)).toHaveLength(0);
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
  }, 300_000);

  it('processes started at once on a folder nobody serves all succeed: one opens it, the others wait for it', async () => {
    const runs = await Promise.all([0, 1, 2].map(() => sluice(['query', '--data-dir', dataDir, 'select 42 as answer'])));
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('42');
    }
    expect(runs.flatMap((r) => started(r.stderr)).length).toBeGreaterThanOrEqual(1);
  }, 300_000);
});
