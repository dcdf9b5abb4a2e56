import { mkdtemp, readFile, rm, writeFile, access } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sweepExpired, RetentionSweeper, type RetainedExecution, type RetentionTarget } from '../../../src/service/limits/retention.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** Executions persisted in one JSON file, results as real files: what a restart would find. */
async function fileTarget(dir: string, failDropOnce = false): Promise<RetentionTarget & { states(): Promise<Record<string, string>> }> {
  const catalog = join(dir, 'executions.json');
  const read = async (): Promise<RetainedExecution[]> => JSON.parse(await readFile(catalog, 'utf8'));
  let failNext = failDropOnce;
  let snapshot = await read();
  return {
    executions: () => snapshot,
    async markExpired(id) {
      const all = await read();
      for (const e of all) if (e.id === id) e.state = 'QUERY_STATE_EXPIRED';
      await writeFile(catalog, JSON.stringify(all));
      snapshot = all;
    },
    hasResult: (id) => access(join(dir, `${id}.result`)).then(() => true, () => false),
    async dropResult(id) {
      if (failNext) {
        failNext = false;
        throw new Error('crash between the state change and the delete');
      }
      await rm(join(dir, `${id}.result`));
    },
    async forget(ids) {
      const all = (await read()).filter((e) => !ids.includes(e.id));
      await writeFile(catalog, JSON.stringify(all));
      snapshot = all;
    },
    async states() {
      return Object.fromEntries((await read()).map((e) => [e.id, e.state]));
    },
  };
}

async function setup(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-retention-'));
  dirs.push(dir);
  const execs: RetainedExecution[] = [
    { id: 'old', state: 'QUERY_STATE_COMPLETED', expiresAt: 1000 },
    { id: 'partial', state: 'QUERY_STATE_COMPLETED_PARTIAL', expiresAt: 1500 },
    { id: 'fresh', state: 'QUERY_STATE_COMPLETED', expiresAt: 5000 },
    { id: 'failed', state: 'QUERY_STATE_FAILED' },
  ];
  await writeFile(join(dir, 'executions.json'), JSON.stringify(execs));
  for (const id of ['old', 'partial', 'fresh']) await writeFile(join(dir, `${id}.result`), 'x'.repeat(100));
  return dir;
}

describe('retention sweep', () => {
  it('expires results at expires_at by the clock and deletes their stored results', async () => {
    const dir = await setup();
    const t = await fileTarget(dir);
    expect(await sweepExpired(t, 999)).toEqual({ expired: [], reclaimed: [], forgotten: [] });
    expect(await sweepExpired(t, 1500)).toEqual({ expired: ['old', 'partial'], reclaimed: ['old', 'partial'], forgotten: [] });
    expect(await t.states()).toMatchObject({ old: 'QUERY_STATE_EXPIRED', partial: 'QUERY_STATE_EXPIRED', fresh: 'QUERY_STATE_COMPLETED', failed: 'QUERY_STATE_FAILED' });
    expect(await t.hasResult('old')).toBe(false);
    expect(await t.hasResult('fresh')).toBe(true);
    // Idempotent: nothing more to do.
    expect(await sweepExpired(t, 1500)).toEqual({ expired: [], reclaimed: [], forgotten: [] });
  });

  it('after a crash between the state change and the delete, the next sweep (a restart) reclaims the space', async () => {
    const dir = await setup();
    const crashing = await fileTarget(dir, true);
    await expect(sweepExpired(crashing, 2000)).rejects.toThrow(/crash/);
    expect((await crashing.states()).old).toBe('QUERY_STATE_EXPIRED');
    expect(await crashing.hasResult('old')).toBe(true);

    const restarted = await fileTarget(dir);
    const report = await new RetentionSweeper(restarted, () => 2000).sweep();
    expect(report.reclaimed.sort()).toEqual(['old', 'partial']);
    expect(await restarted.hasResult('old')).toBe(false);
  });

  it('forgets the records past their own retention, a result a crash left deleted first, and never a running one', async () => {
    const dir = await setup();
    await writeFile(
      join(dir, 'executions.json'),
      JSON.stringify([
        { id: 'old', state: 'QUERY_STATE_COMPLETED', expiresAt: 1000, forgetAt: 3000 },
        { id: 'gone', state: 'QUERY_STATE_EXPIRED', expiresAt: 500, forgetAt: 2500 },
        { id: 'failed', state: 'QUERY_STATE_FAILED', forgetAt: 2000 },
        { id: 'fresh', state: 'QUERY_STATE_COMPLETED', expiresAt: 5000, forgetAt: 7000 },
        { id: 'running', state: 'QUERY_STATE_EXECUTING' },
      ]),
    );
    await writeFile(join(dir, 'gone.result'), 'left by a crash');
    const t = await fileTarget(dir);
    expect(await sweepExpired(t, 2000)).toEqual({ expired: ['old'], reclaimed: ['old', 'gone'], forgotten: ['failed'] });
    expect(await sweepExpired(t, 3000)).toEqual({ expired: [], reclaimed: [], forgotten: ['old', 'gone'] });
    expect(Object.keys(await t.states()).sort()).toEqual(['fresh', 'running']);
    expect(await sweepExpired(t, 1e12)).toEqual({ expired: ['fresh'], reclaimed: ['fresh'], forgotten: ['fresh'] });
    expect(Object.keys(await t.states())).toEqual(['running']);
  });

  it('coalesces overlapping sweeps', async () => {
    const dir = await setup();
    const sweeper = new RetentionSweeper(await fileTarget(dir), () => 2000);
    const [a, b] = await Promise.all([sweeper.sweep(), sweeper.sweep()]);
    expect(a).toBe(b);
    await sweeper.close();
  });
});
