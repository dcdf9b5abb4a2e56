// Execution records are kept limits.execution_record_retention_days after their result expired (or
// after they ended without one), then forgotten: deleted from memory and from catalog/executions by
// the retention sweep and at start, and a request for one answers 404 saying why.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import { call, executeSql, runSql, waitFor } from '../api.ts';
import { eventually, startLimitsService } from './limitsService.ts';

const DAY = 86_400_000;
const limits = { retention_days: 1, execution_record_retention_days: 2, sweep_interval_ms: 20 };
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function recordFiles(dataDir: string): Promise<string[]> {
  return (await readdir(join(dataDir, 'catalog', 'executions'))).filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).sort();
}

const FORGOTTEN = /^Object not found: the service keeps an execution's record 2 days after its result expires \(or after it ends without one; limits\.execution_record_retention_days\) and has forgotten executions submitted up to \d{4}-\d\d-\d\dT[\d:.]+Z; execution \w{26} was submitted \d{4}-\d\d-\d\dT[\d:.]+Z\. Submit the query again$/;

describe('execution records past their retention', () => {
  it('are forgotten by the sweep (files and memory): 404 with the reason, newer ones kept, a never-seen newer id plain 404', async () => {
    const clock = new ManualClock();
    const svc = await startLimitsService({ clock, limits });
    try {
      const old: string[] = [];
      for (let i = 0; i < 4; i++) old.push(await runSql(svc, `SELECT ${i} AS x`));
      const failed = await executeSql(svc, 'SELECT * FROM no_such_table');
      expect((await waitFor(svc, failed)).state).toBe('QUERY_STATE_FAILED');
      old.push(failed);
      // The failed one is forgotten 2 days after it ended; the results 1 day (expiry) + 2 days after.
      clock.advance(DAY + 1000);
      const newer = await runSql(svc, 'SELECT 42 AS x');
      expect(await recordFiles(svc.dataDir)).toEqual([...old, newer].sort());

      clock.advance(2 * DAY);
      await eventually('the old records forgotten', async () => ((await recordFiles(svc.dataDir)).length === 1 ? true : undefined));
      expect(await recordFiles(svc.dataDir)).toEqual([newer]);
      for (const id of old) {
        for (const path of [`/v1/execution/${id}/status`, `/v1/execution/${id}/results`, `/v1/execution/${id}/results/csv`]) {
          const r = await call(svc, 'GET', path, { key: svc.keys.demo.read });
          expect(r.status, path).toBe(404);
          expect(r.json.error, path).toMatch(FORGOTTEN);
        }
      }
      // Another team sees the same answer: it tells nothing about whether the id is the demo team's.
      const other = await call(svc, 'GET', `/v1/execution/${old[0]}/status`, { key: svc.keys.other.read });
      expect(other.status).toBe(404);
      expect(other.json.error).toMatch(FORGOTTEN);
      // Kept: its result expired a day ago, its record stays another day.
      const kept = await call(svc, 'GET', `/v1/execution/${newer}/status`, { key: svc.keys.demo.read });
      expect(kept.json.state).toBe('QUERY_STATE_EXPIRED');
      // An id newer than anything forgotten is simply unknown.
      const unknown = await call(svc, 'GET', `/v1/execution/${newer.slice(0, 10)}ZZZZZZZZZZZZZZZZ/status`, { key: svc.keys.demo.read });
      expect(unknown.status).toBe(404);
      expect(unknown.json).toEqual({ error: 'Object not found' });
    } finally {
      await svc.close();
    }
  });

  it('are deleted at start, and the 404 still says why after the restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-record-retention-'));
    dirs.push(dataDir);
    const clock = new ManualClock();
    const first = await startLimitsService({ clock, limits: { ...limits, sweep_interval_ms: 3_600_000 }, dataDir });
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) ids.push(await runSql(first, `SELECT ${i} AS x`));
    } finally {
      await first.close();
    }
    expect(await recordFiles(dataDir)).toEqual([...ids].sort());
    expect((await readdir(join(dataDir, 'engine', 'results'))).some((n) => n.startsWith(ids[0]!))).toBe(true);

    clock.advance(3 * DAY + 1000);
    const second = await startLimitsService({ clock, limits: { ...limits, sweep_interval_ms: 3_600_000 }, dataDir });
    try {
      expect(await recordFiles(dataDir)).toEqual([]);
      // Their results went with them (never left without a record).
      expect((await readdir(join(dataDir, 'engine', 'results'))).filter((n) => ids.some((id) => n.startsWith(id)))).toEqual([]);
      const r = await call(second, 'GET', `/v1/execution/${ids[2]}/status`, { key: second.keys.demo.read });
      expect(r.status).toBe(404);
      expect(r.json.error).toMatch(FORGOTTEN);
    } finally {
      await second.close();
    }
    // A third start still knows what was forgotten (the mark is on disk).
    const third = await startLimitsService({ clock, limits, dataDir });
    try {
      const r = await call(third, 'GET', `/v1/execution/${ids[4]}/status`, { key: third.keys.demo.read });
      expect(r.json.error).toMatch(FORGOTTEN);
    } finally {
      await third.close();
    }
  });
});
