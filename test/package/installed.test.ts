// The package as users install it: `npm pack` (which builds dist/ through prepare), unpacked under a
// node_modules folder, where Node refuses to strip TypeScript types. The library, `sluice/service`
// and the CLI must all run from the compiled output there. Packed from a copy of the checkout, so
// that the tests build nothing into the checkout itself.
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logLines, ROOT, startSluice, testEnv } from '../cli/sluiceProcess.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';
import { startTestService } from '../helpers/service.ts';
import { checkoutCopy } from './checkoutCopy.ts';

const run = promisify(execFile);

// Inside the checkout's node_modules, so the unpacked package resolves its dependencies there.
const home = join(ROOT, 'node_modules', `.sluice-installed-test-${process.pid}`);
const pkgDir = join(home, 'node_modules', 'sluice');

/** The checkout's dist/ before the tests (absent in a fresh clone): the tests must leave it as it was. */
const distBefore = distState();

function distState(): string {
  return existsSync(join(ROOT, 'dist')) ? `built ${statSync(join(ROOT, 'dist')).mtimeMs}` : 'absent';
}

beforeAll(async () => {
  const packDir = await mkdtemp(join(tmpdir(), 'sluice-pack-'));
  const copy = await checkoutCopy();
  try {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packDir], { cwd: copy.dir, env: testEnv(), maxBuffer: 64 << 20 });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string }[];
    if (packed === undefined) throw new Error(`npm pack printed no tarball: ${stdout}`);
    const { filename } = packed;
    await mkdir(pkgDir, { recursive: true });
    await run('tar', ['-xzf', join(packDir, filename), '-C', pkgDir, '--strip-components=1']);
  } finally {
    await rm(packDir, { recursive: true, force: true });
    await copy.remove();
  }
}, 180_000);

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('the installed package', () => {
  it('is packed without building into the checkout', () => {
    expect(distState()).toBe(distBefore);
  });

  it('ships the compiled output and no TypeScript sources', async () => {
    const top = await readdir(pkgDir);
    expect(top).toEqual(expect.arrayContaining(['bin', 'dist', 'docs', 'package.json', 'README.md']));
    expect(top).not.toContain('src');
    expect(top).not.toContain('test');
  });

  it('imports sluice and sluice/service from node_modules and streams typed rows', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-installed-data-'));
    const script = join(home, 'use.mjs');
    await writeFile(
      script,
      `import { ServiceClient, stream, SluiceError } from 'sluice';
import { startService } from 'sluice/service';
const svc = await startService({ dataDir: ${JSON.stringify(dataDir)}, sampleRows: 100 });
const client = new ServiceClient({ apiKey: 'sk_installed', baseUrl: svc.url });
try {
  const rows = [];
  for await (const row of stream(client, { sql: 'SELECT id, 9007199254740993::BIGINT AS big FROM sample.events ORDER BY id LIMIT 3' })) rows.push(row);
  console.log(JSON.stringify({ rows, isBigint: typeof rows[0].big === 'bigint', base: typeof SluiceError }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
} finally {
  await client.close();
  await svc.close();
}
`,
    );
    try {
      const { stdout } = await run(process.execPath, [script], { cwd: home, env: testEnv({ SERVICE_API_KEY: 'sk_installed' }) });
      const out = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { rows: { big: string }[]; isBigint: boolean; base: string };
      expect(out.rows).toHaveLength(3);
      expect(out.rows.map((r) => r.big)).toEqual(['9007199254740993', '9007199254740993', '9007199254740993']);
      expect(out.isBigint).toBe(true);
      expect(out.base).toBe('function');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('runs the sluice command from the installed bin', async () => {
    const { stdout } = await run(process.execPath, [join(pkgDir, 'bin', 'sluice.js'), '--version'], { cwd: home, env: testEnv() });
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(stdout.trim()).toBe(version);
    const schema = await run(process.execPath, [join(pkgDir, 'bin', 'sluice.js'), 'schema'], { cwd: home, env: testEnv() });
    expect(JSON.parse(schema.stdout)).toHaveProperty('properties.jobs');
  }, 60_000);

  // The image runs this compiled output too: the threads sluice starts (the embedded service's)
  // must load their entry points from dist/ as the main thread does, or the run fails.
  it('runs an export on the embedded service from the installed bin', async () => {
    const work = await mkdtemp(join(tmpdir(), 'sluice-installed-run-'));
    try {
      const job = await eventsJob(work, '  embedded:\n    sample_rows: 20000', { rowsPerFile: 6000 });
      const { stdout } = await run(process.execPath, [join(pkgDir, 'bin', 'sluice.js'), 'run', job, '--json'], { cwd: work, env: testEnv() });
      expect(stdout).toContain('"rows":20000');
      const files = (await readdir(join(work, 'out', 'events'))).filter((f) => f.endsWith('.parquet'));
      expect(files).toHaveLength(4);
      expect(await exported(work)).toEqual({ n: 20000, ids: 20000, lo: 0, hi: 19999 });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }, 120_000);

  // `--processes N` starts N processes of the package's own bin, which the compiled module finds
  // at another depth than the source one.
  it('runs a sharded export with --processes 2 from the installed bin', async () => {
    const work = await mkdtemp(join(tmpdir(), 'sluice-installed-shards-'));
    const svc = await startTestService({ sampleRows: 5000 });
    try {
      const job = await eventsJob(work, '  base_url: ${SERVICE_BASE_URL}', { rowsPerFile: 1000 });
      const env = testEnv({ SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin });
      const { stdout } = await run(process.execPath, [join(pkgDir, 'bin', 'sluice.js'), 'run', job, '--processes', '2', '--json'], { cwd: work, env });
      const shards = stdout.trim().split('\n').map((l) => JSON.parse(l) as { shard: number; execution_id: string });
      expect(shards.map((s) => s.shard).sort()).toEqual([0, 1]);
      expect(new Set(shards.map((s) => s.execution_id)).size).toBe(1);
      expect(await exported(work)).toEqual({ n: 5000, ids: 5000, lo: 0, hi: 4999 });
    } finally {
      await svc.close();
      await rm(work, { recursive: true, force: true });
    }
  }, 120_000);

  // The image's command (`sluice schedule /etc/sluice/jobs.yaml`) runs this compiled output: it
  // schedules the image's own job file, serves its health check, and ends on SIGTERM with 0.
  it('runs the image command, schedule, from the installed bin and ends on SIGTERM', async () => {
    const data = await mkdtemp(join(tmpdir(), 'sluice-installed-schedule-'));
    try {
      const proc = startSluice(['schedule', join(pkgDir, 'config', 'docker', 'jobs.yaml')], {
        entry: join(pkgDir, 'bin', 'sluice.js'),
        cwd: data,
        env: { SLUICE_DATA: data, SLUICE_SAMPLE_ROWS: '1000', SLUICE_HEALTH_PORT: '0', SLUICE_SCHEDULE: '0 0 1 1 *' },
      });
      await proc.waitFor(/"msg":"scheduled"/, 60_000);
      const listening = logLines(proc.stderr()).find((l) => l.msg === 'health server listening');
      const health = await fetch(new URL('/healthz', String(listening?.url)));
      expect(health.status).toBe(200);
      proc.child.kill('SIGTERM');
      const result = await proc.done;
      expect(result.code, result.stderr).toBe(0);
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  }, 120_000);
});

/** A job file in `dir` exporting sample.events in id order to `./out/events` as Parquet files. */
async function eventsJob(dir: string, connection: string, options: { rowsPerFile: number }): Promise<string> {
  const path = join(dir, 'job.yaml');
  await writeFile(
    path,
    `version: 1\nconnection:\n${connection}\njobs:\n  - name: events\n    source:\n      sql: select * from sample.events order by id\n    outputs:\n      - format: parquet\n        path: ./out/events\n        max_rows_per_file: ${options.rowsPerFile}\n`,
  );
  return path;
}

/** What DuckDB reads from the Parquet files under `dir`/out/events: rows, distinct ids, lowest and highest id. */
async function exported(dir: string): Promise<Record<string, unknown> | undefined> {
  const files = join(dir, 'out', 'events', '*.parquet');
  const [row] = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS ids, min(id)::INTEGER AS lo, max(id)::INTEGER AS hi FROM read_parquet('${files}')`);
  return row;
}
