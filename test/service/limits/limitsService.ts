// The real service for the black-box tests of limits, views and uploads: the test settings of test/helpers/service.ts,
// with the plans, limits and tiers a test needs, and always a clock the test moves.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ManualClock } from '../../../src/service/clock.ts';
import { startService } from '../../../src/service/index.ts';
import type { ServiceSettingsInput } from '../../../src/service/settings.ts';
import { TEST_KEYS, testSettings, type TestService } from '../../helpers/service.ts';
import { call, status } from '../api.ts';
import { setTimeout as sleep } from 'node:timers/promises';

type PlanInput = { credits_per_cycle?: number; max_inflight?: number; storage_quota_bytes?: number; performance?: 'small' | 'medium' | 'large' };

export interface LimitsServiceOptions {
  clock: ManualClock;
  limits?: ServiceSettingsInput['limits'];
  tiers?: ServiceSettingsInput['tiers'];
  plans?: { demo?: PlanInput; other?: PlanInput };
  /** Reuse a data directory (restart tests); it is then not deleted by close(). */
  dataDir?: string;
}

export async function startLimitsService(o: LimitsServiceOptions): Promise<TestService> {
  const settings = testSettings({ ...(o.limits === undefined ? {} : { limits: o.limits }), ...(o.tiers === undefined ? {} : { tiers: o.tiers }) });
  for (const team of settings.teams) {
    const extra = o.plans?.[team.name as 'demo' | 'other'];
    if (extra !== undefined) team.plan = { ...team.plan, ...extra };
  }
  const ownDir = o.dataDir === undefined;
  const dataDir = o.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-limits-')));
  const handle = await startService({ dataDir, sampleRows: 200, settings, clock: o.clock });
  const stop = handle.close;
  const close = async (): Promise<void> => {
    await stop();
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
  };
  return Object.assign(handle, { keys: TEST_KEYS, dataDir, close });
}

/** Polls (real time, short) until `check` returns a value; for work the service does on its own. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Rows of a finished execution's first page. */
export async function rowsOf(svc: TestService, id: string, key = svc.keys.demo.read): Promise<unknown[]> {
  const res = await call(svc, 'GET', `/v1/execution/${id}/results`, { key });
  if (res.status !== 200 || res.json.result === undefined) throw new Error(`results of ${id}: ${res.status} ${res.text}`);
  return res.json.result.rows as unknown[];
}

/** Runs SQL as the key's team and returns its rows, or the error message of a FAILED execution. */
export async function query(svc: TestService, sql: string, key = svc.keys.demo.write): Promise<{ rows?: unknown[]; error?: string }> {
  const res = await call(svc, 'POST', '/v1/sql/execute', { key, body: { sql } });
  if (res.status !== 200) throw new Error(`execute: ${res.status} ${res.text}`);
  const id = res.json.execution_id as string;
  const s = await eventually(`execution ${id}`, async () => {
    const st = await status(svc, id, key);
    return st.is_execution_finished ? st : undefined;
  });
  if (s.state === 'QUERY_STATE_FAILED') return { error: s.error.message as string };
  return { rows: await rowsOf(svc, id, key) };
}
