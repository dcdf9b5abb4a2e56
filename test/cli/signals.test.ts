// SIGTERM / SIGINT at a spread of moments of a real export on the embedded service (starting,
// executing, streaming pages, writing, committing): every stop ends with the exit code of the
// table in docs/cli.md, never a native abort (exit 134, "terminate called after throwing an instance of
// 'Napi::Error'"), and leaves no lock file in state_dir; the next run resumes and completes.
// The delays are a spread, not expectations: a signal that lands after the run ended finds it
// finished (exit 0), and that is accepted as such.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { logLines, startSluice, type Finished, type Running } from './sluiceProcess.ts';

const ROWS = 300_000;
let dir: string;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-signals-'));
  file = join(dir, 'export.yaml');
  await writeFile(
    file,
    [
      'connection:',
      '  embedded:',
      `    data_dir: ${join(dir, 'service')}`,
      `    sample_rows: ${ROWS}`,
      `state_dir: ${join(dir, 'state')}`,
      'jobs:',
      '  - name: events',
      '    source: { sql: "select * from sample.events" }',
      `    outputs: [{ format: parquet, path: "${join(dir, 'out')}", max_rows_per_file: 50000 }]`,
      '    schedule: "0 0 1 1 *"',
      '',
    ].join('\n'),
  );
  // The first start builds sample.events; the runs below start on it.
  const first = await startSluice(['run', file, '--fresh']).done;
  expect(first.code, first.stderr).toBe(0);
}, 180_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts `args`, waits for the log line, then sends `signals` (the second 150 ms after the first). */
async function stopAt(args: string[], after: RegExp, delayMs: number, signals: NodeJS.Signals[]): Promise<Finished> {
  const proc: Running = startSluice(args);
  await proc.waitFor(after, 120_000).catch(() => undefined);
  await new Promise((r) => setTimeout(r, delayMs));
  for (const [i, signal] of signals.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, 150));
    proc.child.kill(signal);
  }
  return proc.done;
}

function expectCleanStop(result: Finished, interruptedCode: number, where: string): 'stopped' | 'finished' {
  const context = `${where}\n${result.stderr.slice(-2000)}`;
  // Never ended by a signal: a second one that lands after the command has stopped and returned
  // 130, while the process exits, is caught too (the entry point exits at once after an
  // interrupted command instead of letting Node wind down without its signal handlers).
  expect(result.signal, context).toBeNull();
  expect(result.stderr, context).not.toMatch(/Napi::Error|terminate called|Aborted/);
  if (result.code === 0 && logLines(result.stderr).some((l) => l.msg === 'job finished')) return 'finished';
  expect(result.code, context).toBe(interruptedCode);
  return 'stopped';
}

async function locksLeft(): Promise<string[]> {
  const state = join(dir, 'state');
  return existsSync(state) ? (await readdir(state)).filter((n) => n.endsWith('.lock')) : [];
}

describe('signals over a real export on the embedded service', () => {
  it('run: SIGTERM or SIGINT at any moment exits 130 (or finds the run finished), never aborts; twice exits at once and leaves no lock file; the next run resumes', async () => {
    const outcomes: string[] = [];
    const points: { after: RegExp; delays: number[]; signals: NodeJS.Signals[] }[] = [
      { after: /started the embedded local service/, delays: [0, 300], signals: ['SIGTERM'] },
      { after: /execution started/, delays: [0, 150, 600, 1500, 3000], signals: ['SIGTERM'] },
      { after: /execution started/, delays: [400, 2000], signals: ['SIGINT'] },
      { after: /execution started/, delays: [100, 1000, 2500], signals: ['SIGINT', 'SIGINT'] },
    ];
    for (const { after, delays, signals } of points) {
      for (const delay of delays) {
        const where = `${signals.join('+')} ${delay} ms after ${after.source}`;
        const result = await stopAt(['run', file], after, delay, signals);
        outcomes.push(`${where}: ${expectCleanStop(result, 130, where)}`);
        expect(await locksLeft(), where).toEqual([]);
      }
    }
    // Most of them stopped the run (a loaded machine may finish one before its signal).
    expect(outcomes.filter((o) => o.endsWith('stopped')).length, outcomes.join('\n')).toBeGreaterThanOrEqual(8);

    // Whatever was interrupted, the next run completes the export, resuming where it can.
    const last = await startSluice(['run', file, '--json']).done;
    expect(last.code, last.stderr).toBe(0);
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const rows = await conn.runAndReadAll(`select count(*)::INTEGER from read_parquet('${join(dir, 'out')}/**/*.parquet')`);
      expect(rows.getRowsJson()[0]![0]).toBe(ROWS);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  }, 600_000);

  it('run: a signal that lands after the job finished (the service closing, the process exiting) never ends it by the signal', async () => {
    for (const [delay, signal] of [[0, 'SIGINT'], [30, 'SIGTERM'], [80, 'SIGINT'], [150, 'SIGTERM'], [300, 'SIGINT']] as [number, NodeJS.Signals][]) {
      const where = `${signal} ${delay} ms after the job finished`;
      const result = await stopAt(['run', file], /"job finished"|job finished/, delay, [signal]);
      // While the command still closes the embedded service, the signal stops that (130); once the
      // command has returned, the process exits with its code (0).
      expect(result.signal, `${where}\n${result.stderr.slice(-2000)}`).toBeNull();
      expect([0, 130], `${where}\n${result.stderr.slice(-2000)}`).toContain(result.code);
      expect(await locksLeft(), where).toEqual([]);
    }
  }, 300_000);

  it('schedule --run-now: SIGTERM during its run exits 0 within its grace; query: SIGINT exits 130', async () => {
    for (const delay of [200, 1500]) {
      const where = `schedule SIGTERM ${delay} ms after the run started`;
      const result = await stopAt(['schedule', file, '--run-now'], /run started/, delay, ['SIGTERM']);
      expect(result.stderr, where).not.toMatch(/Napi::Error|terminate called/);
      expect(result.code, `${where}\n${result.stderr.slice(-2000)}`).toBe(0);
      expect(await locksLeft(), where).toEqual([]);
    }
    const dataDir = join(dir, 'service');
    for (const signals of [['SIGINT'], ['SIGINT', 'SIGINT']] as NodeJS.Signals[][]) {
      const where = `query ${signals.join('+')}`;
      const result = await stopAt(['query', '--data-dir', dataDir, 'select * from sample.events, range(20)'], /started the embedded local service/, 500, signals);
      expectCleanStop(result, 130, where);
    }
  }, 300_000);
});
