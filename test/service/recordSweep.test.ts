// The retention sweep over the executions themselves (a real engine and store, the service's clock):
// a record past limits.execution_record_retention_days leaves memory and disk, and an expired
// execution's result is looked for once, not on every sweep.
import { readdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/service/clock.ts';
import { openEngine, type SqlEngine } from '../../src/service/engine/index.ts';
import type { ExecutionRecord } from '../../src/service/executionRecord.ts';
import { Executions } from '../../src/service/executions.ts';
import { sweepExpired } from '../../src/service/limits/retention.ts';
import { parseSettings } from '../../src/service/settings.ts';
import { JsonStore } from '../../src/service/store.ts';

const DAY = 86_400_000;
let dir: string;
let engine: SqlEngine;
const asked: string[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-record-sweep-'));
  const real = await openEngine({ dataDir: join(dir, 'engine'), datasets: [] });
  // The real engine, recording which results the sweep asks about.
  engine = new Proxy(real, {
    get(target, key) {
      if (key === 'hasResult') return (id: string) => (asked.push(id), target.hasResult(id));
      const v: unknown = Reflect.get(target, key);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
});
afterAll(async () => {
  await engine?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the sweep over execution records', () => {
  it('asks for an expired result once, and forgets the records past their retention from memory and disk', async () => {
    const store = new JsonStore<ExecutionRecord>(join(dir, 'executions'));
    await store.init();
    const clock = new ManualClock();
    const settings = parseSettings({ teams: [{ name: 'demo' }], datasets: [], limits: { retention_days: 1, execution_record_retention_days: 1 } });
    const executions = new Executions({ engine, store, clock, settings });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await executions.submit({ team: 'demo', sql: `SELECT ${i} AS i`, queryId: 0, queryVersion: 0, parameters: {}, performance: 'medium' })).id);
    }
    while (ids.some((id) => executions.get(id)?.state !== 'QUERY_STATE_COMPLETED')) await sleep(10);
    const target = executions.retentionTarget();

    clock.advance(DAY + 1000);
    // Expiring drops the result itself; the sweep then checks once that none was left behind.
    expect(await sweepExpired(target, clock.now())).toEqual({ expired: ids, reclaimed: [], forgotten: [] });
    expect(asked).toEqual(ids);
    // Their results are gone: the next sweeps do not ask again.
    expect(await sweepExpired(target, clock.now())).toEqual({ expired: [], reclaimed: [], forgotten: [] });
    expect(await sweepExpired(target, clock.now())).toEqual({ expired: [], reclaimed: [], forgotten: [] });
    expect(asked).toEqual(ids);
    expect((await readdir(store.dir)).sort()).toEqual(ids.map((id) => `${id}.json`).sort());

    clock.advance(DAY);
    expect(await sweepExpired(target, clock.now())).toEqual({ expired: [], reclaimed: [], forgotten: ids });
    for (const id of ids) expect(executions.get(id)).toBeUndefined();
    expect([...target.executions()]).toEqual([]);
    expect(await readdir(store.dir)).toEqual([]);
    await executions.close();
  });
});
