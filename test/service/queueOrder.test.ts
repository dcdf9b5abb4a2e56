// Queue order is submission (id) order even when the records' writes land out of order.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/service/clock.ts';
import { openEngine, type SqlEngine } from '../../src/service/engine/index.ts';
import type { ExecutionRecord } from '../../src/service/executionRecord.ts';
import { Executions } from '../../src/service/executions.ts';
import { parseSettings } from '../../src/service/settings.ts';
import { JsonStore } from '../../src/service/store.ts';

/** A real store whose first write of each PENDING record waits as long as the test says. */
class DelayedStore extends JsonStore<ExecutionRecord> {
  delays: number[] = [];
  override async put(id: string, doc: ExecutionRecord): Promise<void> {
    if (doc.state === 'QUERY_STATE_PENDING') await sleep(this.delays.shift() ?? 0);
    return super.put(id, doc);
  }
}

let dir: string;
let engine: SqlEngine;
const started: string[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-queue-order-'));
  const real = await openEngine({ dataDir: join(dir, 'engine'), datasets: [] });
  // The real engine, recording the order executions reach it.
  engine = new Proxy(real, {
    get(target, key) {
      if (key === 'execute') return (sql: string, o: Parameters<SqlEngine['execute']>[1]) => (started.push(o.resultId), target.execute(sql, o));
      const v: unknown = Reflect.get(target, key);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
});
afterAll(async () => {
  await engine?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('queue order', () => {
  it('starts executions in id order although later submissions were recorded first', async () => {
    const store = new DelayedStore(join(dir, 'executions'));
    await store.init();
    const settings = parseSettings({ teams: [{ name: 'demo', plan: { max_inflight: 1 } }], datasets: [] });
    const executions = new Executions({ engine, store, clock: systemClock, settings });
    // The first submission's write is the slowest, the last one's the fastest.
    store.delays = [80, 60, 40, 20, 0];
    const submitted = Promise.all(
      [0, 1, 2, 3, 4].map((i) => executions.submit({ team: 'demo', sql: `SELECT ${i} AS i`, queryId: 0, queryVersion: 0, parameters: {}, performance: 'medium' })),
    );
    // Before any record is durable, nothing runs, and places are taken in submission order.
    await sleep(10);
    expect(started).toEqual([]);
    const recs = await submitted;
    const ids = recs.map((r) => r.id);
    expect([...ids].sort()).toEqual(ids);
    for (;;) {
      const states = ids.map((id) => executions.get(id)?.state);
      if (states.every((s) => s === 'QUERY_STATE_COMPLETED')) break;
      expect(states.every((s) => s !== 'QUERY_STATE_FAILED')).toBe(true);
      await sleep(5);
    }
    expect(started).toEqual(ids);
    await executions.close();
  });
});
