import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { sluice, startSluice } from '../cli/sluiceProcess.ts';
import { ManualClock } from '../../src/service/clock.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from './duck.ts';
import { fileLeftovers } from '../connectors/destinations.ts';

// Sharded runs as a cluster runs them: real `sluice run` processes (one per shard) against the real
// local service, writing to a local folder; the output is read back by DuckDB.

let svc: TestService;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 2000, limits: { page_rows: 100 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-shards-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, OUT: dir };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

/** Executions the service has recorded (its catalog keeps one document per execution). */
async function executionCount(): Promise<number> {
  const names = await readdir(join(svc.dataDir, 'catalog', 'executions'));
  return names.filter((n) => n.endsWith('.json')).length;
}

async function creditsUsed(): Promise<number> {
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  try {
    return (await client.getUsage()).credits_used;
  } finally {
    await client.close();
  }
}

const SQL = 'select id, ts, quantity from sample.events order by id';

async function jobFile(name: string, out: string, extra = '', sql = SQL, connection = '  base_url: ${SERVICE_BASE_URL}'): Promise<string> {
  const path = join(dir, name);
  await writeFile(
    path,
    `connection:\n${connection}\nstate_dir: \${OUT}/state-${name}\njobs:\n  - name: events\n    source: { sql: "${sql}" }\n    outputs:\n      - format: parquet\n        path: ${out}\n        max_rows_per_file: 300\n${extra}`,
  );
  return path;
}

/** Runs `sluice args` with slow pages and kills it (SIGKILL) once it has written a part. */
async function killAfterAPart(args: string[]): Promise<void> {
  svc.setFaults({ latency_ms: 150 });
  try {
    const doomed = startSluice([...args, '--log-format', 'json'], { env });
    await doomed.waitFor(/"part written"/, 60_000);
    doomed.child.kill('SIGKILL');
    await doomed.done;
  } finally {
    svc.setFaults({ latency_ms: 0 });
  }
}

/** The rows DuckDB reads from the committed output's files (in manifest order), as one text per row. */
async function readBack(out: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as { files: { path: string }[] };
  const files = manifest.files.map((f) => `'${join(out, f.path)}'`).join(', ');
  const rows = await duck(`select id, ts::varchar as ts, quantity from read_parquet([${files}], file_row_number = false)`);
  return rows.map((r) => `${r.id}|${r.ts}|${r.quantity}`);
}

/** The same rows as the service returns them, read by an independent client. */
let EXPECTED: string[];
beforeAll(async () => {
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  try {
    const got = await client.run(`select id, ts::varchar as ts, quantity from sample.events order by id`);
    EXPECTED = got.map((r) => `${String(r.id)}|${String(r.ts)}|${String(r.quantity)}`);
  } finally {
    await client.close();
  }
  expect(EXPECTED).toHaveLength(2000);
});

describe('sharded runs (real processes, local folder)', () => {
  it('--processes 4: one execution charged once, every shard writes its parts, exactly one commit', async () => {
    const out = join(dir, 'four');
    // A second output from the same execution: its own plan and commit, rows split at other offsets.
    const file = await jobFile('four.yaml', out, `      - format: ndjson\n        path: ${out}-ndjson\n        max_rows_per_file: 900\n`);
    const before = { executions: await executionCount(), credits: await creditsUsed() };
    const run = await sluice(['run', file, '--processes', '4', '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    const summaries = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { shard: number; execution_id: string; started_execution: boolean; outputs: { commit: string; parts: number }[] });
    expect(summaries.map((s) => s.shard).sort()).toEqual([0, 1, 2, 3]);
    expect(new Set(summaries.map((s) => s.execution_id)).size).toBe(1);
    expect(summaries.filter((s) => s.started_execution)).toHaveLength(1);
    // 2000 rows, 300 per part: 7 parts over 4 shards.
    expect(summaries.reduce((n, s) => n + s.outputs[0]!.parts, 0)).toBe(7);
    expect(summaries.filter((s) => s.outputs[0]!.commit === 'committed')).toHaveLength(1);
    expect(summaries.filter((s) => s.outputs[1]!.commit === 'committed')).toHaveLength(1);
    expect(await executionCount()).toBe(before.executions + 1);
    expect(await creditsUsed()).toBe(before.credits + 10);
    expect(await readBack(out)).toEqual(EXPECTED);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8')) as { shards: unknown; execution_id: string; files: unknown[] };
    expect(manifest.shards).toMatchObject({ count: 4 });
    expect(manifest.execution_id).toBe(summaries[0]!.execution_id);
    expect(manifest.files).toHaveLength(7);
    const second = JSON.parse(await readFile(join(`${out}-ndjson`, '_manifest.json'), 'utf8')) as { execution_id: string; total_rows: number; files: { path: string }[] };
    expect(second).toMatchObject({ execution_id: manifest.execution_id, total_rows: 2000 });
    expect(second.files).toHaveLength(3);
    const lines = (await Promise.all(second.files.map((f) => readFile(join(`${out}-ndjson`, f.path), 'utf8')))).join('').trim().split('\n');
    expect(lines.map((l) => Number((JSON.parse(l) as { id: string }).id))).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    // The winner removed the shared records; beside the output, only the folder it links to.
    expect((await fileLeftovers(dir, 'four')).filter((n) => n.startsWith('.four.'))).toEqual([]);
    expect((await readdir(out)).sort()).toEqual(['_SUCCESS', '_manifest.json', ...manifest.files.map((f) => (f as { path: string }).path)].sort());
  });

  it('a shard killed mid-part and started again keeps its finished parts and rewrites the rest; nothing is visible before the commit', async () => {
    const out = join(dir, 'killed');
    const file = await jobFile('killed.yaml', out);
    const before = await executionCount();
    const runId = 'killed-1';
    // Shard 0 plans, writes parts 0-2, records them and leaves the commit to the last shard.
    const first = await sluice(['run', file, '--shard', '0/2', '--run-id', runId, '--json'], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ shard: 0, started_execution: true, outputs: [{ parts: 3, commit: 'waiting', waiting_for: [1] }] });
    await killAfterAPart(['run', file, '--shard', '1/2', '--run-id', runId]);
    // Killed: no commit, nothing at the output's place.
    await expect(readdir(out)).rejects.toMatchObject({ code: 'ENOENT' });
    const again = await sluice(['run', file, '--shard', '1/2', '--run-id', runId, '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    const summary = JSON.parse(again.stdout) as { started_execution: boolean; outputs: { parts: number; resumed_parts: number; commit: string }[] };
    expect(summary.started_execution).toBe(false);
    expect(summary.outputs[0]!.parts).toBe(4);
    expect(summary.outputs[0]!.resumed_parts).toBeGreaterThanOrEqual(1);
    expect(summary.outputs[0]!.resumed_parts).toBeLessThan(4);
    expect(summary.outputs[0]!.commit).toBe('committed');
    expect(await readBack(out)).toEqual(EXPECTED);
    expect(await executionCount()).toBe(before + 1);
  });

  it('--workers is accepted and ignored with one warning (part threads were removed): the same rows, one commit', async () => {
    const out = join(dir, 'threads');
    const file = await jobFile('threads.yaml', out);
    const run = await sluice(['run', file, '--processes', '2', '--workers', '2', '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.match(/--workers is ignored: part threads were removed.*sluice run --processes N/g)).toHaveLength(1);
    const summaries = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { shard: number; outputs: { commit: string; parts: number }[] });
    expect(summaries.map((s) => s.outputs[0]!.parts).sort()).toEqual([3, 4]);
    expect(summaries.filter((s) => s.outputs[0]!.commit === 'committed')).toHaveLength(1);
    expect(await readBack(out)).toEqual(EXPECTED);
  });

  it('shard 0 killed while its execution runs: started again, it picks that execution up (one execution, charged once)', async () => {
    const out = join(dir, 'planner');
    const file = await jobFile('planner.yaml', out);
    const before = { executions: await executionCount(), credits: await creditsUsed() };
    svc.setFaults({ latency_ms: 1000 });
    try {
      const doomed = startSluice(['run', file, '--shard', '0/2', '--run-id', 'planner-1'], { env });
      // Shard 0 records the execution as soon as it is known, before waiting for it.
      const deadline = Date.now() + 60_000;
      let recorded = false;
      while (!recorded && Date.now() < deadline) {
        const records = join(dir, '.planner.sluice', '.sluice-shards');
        const areas = await readdir(records).catch(() => [] as string[]);
        recorded = areas.length > 0 && (await readdir(join(records, areas[0]!)).catch(() => [] as string[])).includes('execution.json');
        if (!recorded) await new Promise((r) => setTimeout(r, 20));
      }
      expect(recorded).toBe(true);
      doomed.child.kill('SIGKILL');
      await doomed.done;
    } finally {
      svc.setFaults({ latency_ms: 0 });
    }
    const again = await sluice(['run', file, '--shard', '0/2', '--run-id', 'planner-1', '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ started_execution: false, credits: 0 });
    expect(again.stderr).toContain('execution of an earlier attempt picked up');
    const last = await sluice(['run', file, '--shard', '1/2', '--run-id', 'planner-1'], { env });
    expect(last.code, last.stderr).toBe(0);
    expect(await readBack(out)).toEqual(EXPECTED);
    expect(await executionCount()).toBe(before.executions + 1);
    expect(await creditsUsed()).toBe(before.credits + 10);
  });

  it('bad input: a shard out of range, a missing count, another N or another job file, a shard after the commit', async () => {
    const out = join(dir, 'bad');
    const file = await jobFile('bad.yaml', out);
    const range = await sluice(['run', file, '--shard', '3/2', '--run-id', 'r'], { env });
    expect(range.code).toBe(2);
    expect(range.stderr).toContain('shard index 3 is out of range for 2 shards (indexes run from 0 to 1)');
    // The other ways to get the shard wrong are refused by the same parser (test/cli/shardSpec.test.ts).
    const appendFile = await jobFile('bad-append.yaml', join(dir, 'bad-append'), '        mode: append\n');
    const append = await sluice(['run', appendFile, '--shard', '0/2', '--run-id', 'r'], { env });
    expect(append.code).toBe(2);
    expect(append.stderr).toContain('outputs[0].mode');
    expect(append.stderr).toContain('a sharded run replaces the output');

    const executions = await executionCount();
    const planned = await sluice(['run', file, '--shard', '0/2', '--run-id', 'bad-1'], { env });
    expect(planned.code, planned.stderr).toBe(0);
    const otherN = await sluice(['run', file, '--shard', '1/3', '--run-id', 'bad-1'], { env });
    expect(otherN.code).toBe(2);
    expect(otherN.stderr).toMatch(/SHARD_MISMATCH|was made for 2 shards, this shard was started for 3/);
    expect(otherN.stderr).toContain('was made for 2 shards, this shard was started for 3');
    const otherFile = await jobFile('bad-other.yaml', out, '', 'select id, ts, quantity from sample.events where id < 10 order by id');
    const otherJob = await sluice(['run', otherFile, '--shard', '1/2', '--run-id', 'bad-1'], { env });
    expect(otherJob.code).toBe(2);
    expect(otherJob.stderr).toMatch(/was made from another job file \(job events, fingerprint [0-9a-f]{32}; this shard's job file gives events, [0-9a-f]{32}\)/);
    // Nothing half-written is visible, and no shard but the first started an execution.
    await expect(readdir(out)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await executionCount()).toBe(executions + 1);

    const last = await sluice(['run', file, '--shard', '1/2', '--run-id', 'bad-1'], { env });
    expect(last.code, last.stderr).toBe(0);
    expect(await readBack(out)).toEqual(EXPECTED);
    const late = await sluice(['run', file, '--shard', '0/2', '--run-id', 'bad-1'], { env });
    expect(late.code).toBe(2);
    expect(late.stderr).toMatch(/run id bad-1: the export to file:\/\/\S+ \(outputs\[0\]\) is committed already \(execution \w+, 2000 rows, 2 shards\); this shard wrote nothing/);
    expect(await executionCount()).toBe(executions + 1);
  });
});

describe('sharded runs to S3 (real processes; conditional writes enforced by the precondition gate)', () => {
  let s3: LocalS3;
  let gate: PreconditionGate;
  beforeAll(async () => {
    s3 = await startLocalS3();
    await s3.createBucket('lake');
    gate = await startPreconditionGate(s3.endpoint);
  });
  afterAll(async () => {
    await gate?.stop();
    await s3?.stop();
  });

  const s3Block = () => `        s3: { endpoint: "${gate.endpoint}", region: ${s3.region}, force_path_style: true }\n`;

  async function readBackS3(prefix: string): Promise<string[]> {
    const local = join(dir, `download-${prefix}`);
    await s3.download('lake', prefix, local);
    return readBack(local);
  }

  it('--processes 2 to S3: one execution, one commit, the shards\' records removed by the winner', async () => {
    const file = await jobFile('s3.yaml', 's3://lake/events', s3Block());
    const before = await executionCount();
    const run = await sluice(['run', file, '--processes', '2', '--json'], { env });
    expect(run.code, run.stderr).toBe(0);
    expect(await executionCount()).toBe(before + 1);
    expect(await readBackS3('events')).toEqual(EXPECTED);
    const keys = await s3.list('lake', 'events/');
    expect(keys.filter((k) => k.includes('.sluice-shards/'))).toEqual([]);
    expect(keys).toHaveLength(7 + 2);
  });

  it('a shard killed mid-part on S3 and started again keeps the parts it uploaded; no manifest before the commit', async () => {
    const file = await jobFile('s3-killed.yaml', 's3://lake/killed', s3Block());
    const first = await sluice(['run', file, '--shard', '0/2', '--run-id', 's3-killed-1'], { env });
    expect(first.code, first.stderr).toBe(0);
    await killAfterAPart(['run', file, '--shard', '1/2', '--run-id', 's3-killed-1']);
    expect((await s3.list('lake', 'killed/')).filter((k) => k.endsWith('_manifest.json') || k.endsWith('_SUCCESS'))).toEqual([]);
    const again = await sluice(['run', file, '--shard', '1/2', '--run-id', 's3-killed-1', '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    const summary = JSON.parse(again.stdout) as { outputs: { resumed_parts: number; commit: string }[] };
    expect(summary.outputs[0]!.resumed_parts).toBeGreaterThanOrEqual(1);
    expect(summary.outputs[0]!.commit).toBe('committed');
    expect(await readBackS3('killed')).toEqual(EXPECTED);
    expect((await s3.list('lake', 'killed/')).filter((k) => k.includes('.sluice-shards/'))).toEqual([]);
  });

  it('the last shard started twice at once (a duplicated pod): both write, exactly one commits, both exit 0', async () => {
    const file = await jobFile('s3-twice.yaml', 's3://lake/twice', s3Block());
    const before = { executions: await executionCount(), refused: gate.refused };
    const first = await sluice(['run', file, '--shard', '0/2', '--run-id', 'twice-1'], { env });
    expect(first.code, first.stderr).toBe(0);
    // Slow pages: both copies are still writing when the other starts, whatever their start-up times.
    svc.setFaults({ latency_ms: 100 });
    const [a, b] = await Promise.all([0, 1].map(() => sluice(['run', file, '--shard', '1/2', '--run-id', 'twice-1', '--json'], { env }))).finally(() => svc.setFaults({ latency_ms: 0 }));
    expect(a!.code, a!.stderr).toBe(0);
    expect(b!.code, b!.stderr).toBe(0);
    const commits = [a!, b!].map((r) => (JSON.parse(r.stdout) as { outputs: { commit: string }[] }).outputs[0]!.commit).sort();
    expect(commits).toEqual(['committed', 'committed-by-another']);
    expect(await readBackS3('twice')).toEqual(EXPECTED);
    // Whichever copy finished last, the records and journals are gone.
    expect((await s3.list('lake', 'twice/')).filter((k) => k.includes('.sluice-shards/'))).toEqual([]);
    expect(await executionCount()).toBe(before.executions + 1);
  });
});

describe('a plan whose execution expired', () => {
  it('stops a shard with a clear error (exit 5) before it writes anything', async () => {
    const clock = new ManualClock();
    const aged = await startTestService({ sampleRows: 500, clock, limits: { retention_days: 1 } });
    try {
      const out = join(dir, 'expired');
      const file = await jobFile('expired.yaml', out);
      const agedEnv = { ...env, SERVICE_BASE_URL: aged.url };
      const first = await sluice(['run', file, '--shard', '0/2', '--run-id', 'expired-1'], { env: agedEnv });
      expect(first.code, first.stderr).toBe(0);
      clock.advance(2 * 86_400_000);
      const late = await sluice(['run', file, '--shard', '1/2', '--run-id', 'expired-1'], { env: agedEnv });
      expect(late.code).toBe(5);
      expect(late.stderr).toMatch(/the plan of run expired-1 \(job events\) reads execution \w+, which is expired and has no result to read; nothing was written\. Start a new run with a new run id/);
      await expect(readdir(out)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await aged.close();
    }
  });
});
