// The embedded service a job file starts without a settings file is made to run for months:
// results kept a day, credits a schedule cannot spend in a cycle; `sluice usage` shows what its
// data folder holds on disk.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_DEFAULTS } from '../../src/jobs/run/embeddedDefaults.ts';
import { startSluice } from './sluiceProcess.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-embedded-defaults-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the embedded service defaults', () => {
  it('keeps results a day, has credits for years of a demo schedule, and sluice usage shows the result store on disk', async () => {
    const file = join(dir, 'jobs.yaml');
    await writeFile(file, `connection:\n  embedded:\n    data_dir: ${join(dir, 'service')}\n    sample_rows: 2000\nstate_dir: ${join(dir, 'state')}\njobs:\n  - name: events\n    source: { sql: "select * from sample.events" }\n    outputs: [{ format: parquet, path: "${join(dir, 'out')}" }]\n`);
    const run = await startSluice(['run', file, '--json'], { env: { SERVICE_API_KEY: 'sk_embedded_defaults_test' } }).done;
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { execution_id: string; credits: number };

    const env = { SERVICE_API_KEY: 'sk_embedded_defaults_test' };
    const usage = await startSluice(['usage', '--json', '--data-dir', join(dir, 'service')], { env }).done;
    expect(usage.code, usage.stderr).toBe(0);
    const u = JSON.parse(usage.stdout) as { credits_limit: number; credits_used: number; data_dir: { path: string; bytes: number; results_bytes: number } };
    expect(u.credits_limit).toBe(EMBEDDED_DEFAULTS.credits_per_cycle);
    expect(u.credits_used).toBe(summary.credits);
    expect(u.data_dir.path).toBe(join(dir, 'service'));
    expect(u.data_dir.results_bytes).toBeGreaterThan(0);
    expect(u.data_dir.bytes).toBeGreaterThan(u.data_dir.results_bytes);

    const text = await startSluice(['usage', '--data-dir', join(dir, 'service')], { env }).done;
    expect(text.stdout).toMatch(/results +[\d.]+ ([KMG]i)?B on disk \(the result store; data folder .*: [\d.]+ ([KMG]i)?B\)/);

    const status = await startSluice(['status', summary.execution_id, '--data-dir', join(dir, 'service')], { env }).done;
    expect(status.code, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout) as { execution_ended_at: string; expires_at: string };
    const kept = Date.parse(s.expires_at) - Date.parse(s.execution_ended_at);
    expect(kept).toBe(EMBEDDED_DEFAULTS.retention_days * 86_400_000);
  }, 120_000);
  it('a settings file that names only what it changes is read over these defaults; a bad value names its field', async () => {
    const settings = join(dir, 'partial.yaml');
    await writeFile(settings, 'limits: { retention_days: 2, result_store_max_bytes: 50000000 }\nengine: { memory_limit: 300MiB }\n');
    const file = join(dir, 'partial-jobs.yaml');
    const data = join(dir, 'partial-service');
    await writeFile(file, `connection:\n  embedded:\n    data_dir: ${data}\n    settings: ${settings}\n    sample_rows: 100\nstate_dir: ${join(dir, 'partial-state')}\njobs:\n  - name: one\n    source: { sql: "select 1 as x" }\n    outputs: [{ format: csv, path: "${join(dir, 'partial-out')}" }]\n`);
    const env = { SERVICE_API_KEY: 'sk_embedded_partial_test' };
    const run = await startSluice(['run', file, '--json'], { env }).done;
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as { execution_id: string; credits_left: number };
    // The embedded credits are kept (the file names no teams), its retention is the file's.
    expect(summary.credits_left).toBe(EMBEDDED_DEFAULTS.credits_per_cycle - 10);
    const status = await startSluice(['status', summary.execution_id, '--data-dir', data], { env }).done;
    expect(status.code, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout) as { execution_ended_at: string; expires_at: string };
    expect(Date.parse(s.expires_at) - Date.parse(s.execution_ended_at)).toBe(2 * 86_400_000);
    // A command on the folder sees the job's bound when given the job's settings file.
    const usage = await startSluice(['usage', '--json', '--data-dir', data, '--settings', settings], { env }).done;
    expect(usage.code, usage.stderr).toBe(0);
    expect(JSON.parse(usage.stdout)).toMatchObject({ result_store_max_bytes: 50_000_000, credits_limit: EMBEDDED_DEFAULTS.credits_per_cycle });

    await writeFile(settings, 'engine: { memory_limit: lots }\n');
    const bad = await startSluice(['run', file], { env }).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${settings}: engine.memory_limit: a size is a number of bytes or a number with a unit`);
  }, 120_000);
});
