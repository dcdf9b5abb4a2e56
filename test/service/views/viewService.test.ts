import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { monotonicFactory } from 'ulid';
import { MESSAGES, ViewListSchema, ViewSchema, type Performance } from '../../../src/protocol/index.ts';
import { ManualClock } from '../../../src/service/clock.ts';
import { CreditLedger } from '../../../src/service/limits/credits.ts';
import { daysCycle } from '../../../src/service/limits/cycle.ts';
import { CreditLimitError } from '../../../src/service/limits/errors.ts';
import { executionCost } from '../../../src/service/limits/tiers.ts';
import { parseSettings } from '../../../src/service/settings.ts';
import { JsonStore } from '../../../src/service/store.ts';
import { ViewError, ViewRefreshError } from '../../../src/service/views/errors.ts';
import { ViewRegistry } from '../../../src/service/views/registry.ts';
import { ViewScheduler } from '../../../src/service/views/scheduler.ts';
import { ViewTables } from '../../../src/service/views/tables.ts';
import type { ViewRecord } from '../../../src/service/views/viewRecord.ts';
import { ViewService, type RefreshRunner } from '../../../src/service/views/viewService.ts';
import { startDuck, type DuckFixture } from './duckFixture.ts';

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const MIN = 60_000;
const settings = parseSettings({ teams: [{ name: 'demo' }, { name: 'other' }] });

/**
 * Refreshes run when the test says so: `finish(id)` stores the query's rows as the result (as the
 * engine would) and then completes the refresh the way the executions module will.
 */
class ManualRunner implements RefreshRunner {
  readonly pending = new Map<string, { view: ViewRecord; performance: Performance }>();
  readonly failures = new Map<string, string>();
  readonly #ulid = monotonicFactory();
  service!: ViewService;
  readonly duck: DuckFixture;
  readonly sqlOf: Map<number, string>;
  readonly ledger: CreditLedger;
  constructor(duck: DuckFixture, sqlOf: Map<number, string>, ledger: CreditLedger) {
    this.duck = duck;
    this.sqlOf = sqlOf;
    this.ledger = ledger;
  }

  async submit(view: ViewRecord, performance: Performance): Promise<string> {
    const id = this.#ulid();
    await this.ledger.reserve(view.team, executionCost(settings, performance, true), id);
    this.pending.set(id, { view, performance });
    return id;
  }

  isRunning(id: string): boolean {
    return this.pending.has(id);
  }

  async finish(id: string): Promise<void> {
    const p = this.pending.get(id);
    if (!p) throw new Error(`no pending refresh ${id}`);
    this.pending.delete(id);
    const sql = this.sqlOf.get(p.view.queryId) as string;
    const names = await this.duck.storeResult(id, sql);
    const [[bytes]] = (await this.duck.rows(`SELECT coalesce(sum(strlen(CAST(t AS VARCHAR))), 0)::BIGINT FROM (${sql}) t`)) as [[string]];
    try {
      await this.service.complete(id, p.view.id, { columnNames: names, bytes: Number(bytes), truncated: false });
      await this.ledger.settle(id, executionCost(settings, p.performance, true));
    } catch (err) {
      if (!(err instanceof ViewRefreshError)) throw err;
      this.failures.set(id, err.message);
      await this.ledger.settle(id, 0);
    }
  }

  async finishAll(): Promise<void> {
    for (const id of [...this.pending.keys()]) await this.finish(id);
  }
}

let duck: DuckFixture;
let clock: ManualClock;
let runner: ManualRunner;
let views: ViewService;
let registry: ViewRegistry;
let ledger: CreditLedger;
let catalogDir: string;
const sqlOf = new Map<number, string>([
  [1, 'SELECT i AS n FROM range(3) t(i)'],
  [2, "SELECT 'x' AS s"],
  [3, "SELECT repeat('y', 1000) AS big FROM range(30)"],
]);

async function build(quota = 10_000, credits = 10_000): Promise<void> {
  registry = new ViewRegistry(await initStore(catalogDir));
  await registry.load();
  ledger = new CreditLedger({ clock, cycle: daysCycle(30), limitOf: () => credits });
  runner = new ManualRunner(duck, sqlOf, ledger);
  const ids = monotonicFactory();
  views = new ViewService({ registry, tables: new ViewTables(duck.tables), runner, clock, quotaOf: () => quota, tierOf: () => 'medium', newId: () => ids() });
  runner.service = views;
}

async function initStore(dir: string): Promise<JsonStore<ViewRecord>> {
  const s = new JsonStore<ViewRecord>(dir);
  await s.init();
  return s;
}

beforeEach(async () => {
  duck = await startDuck();
  clock = new ManualClock(T0);
  catalogDir = await mkdtemp(join(tmpdir(), 'sluice-view-catalog-'));
  await build();
});
afterEach(async () => {
  await duck.close();
  await rm(catalogDir, { recursive: true, force: true });
});

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

describe('materialized views', () => {
  it('creates a view whose refresh fills service.<team>.result_<x>; the record has every field', async () => {
    const res = await views.upsert('demo', { name: 'result_numbers', query_id: 1, cron_expression: '0 * * * *' });
    expect(res.name).toBe('service.demo.result_numbers');
    await runner.finish(res.execution_id);
    expect(await duck.rows('SELECT n FROM service.demo.result_numbers ORDER BY n')).toEqual([['0'], ['1'], ['2']]);
    const v = views.get('demo', 'service.demo.result_numbers');
    expect(ViewSchema.strict().safeParse(v).success).toBe(true);
    expect(v).toMatchObject({
      name: 'service.demo.result_numbers',
      query_id: 1,
      cron_expression: '0 * * * *',
      performance: 'medium',
      is_private: false,
      owner_team: 'demo',
      last_execution_ids: [res.execution_id],
      created_at: '2026-01-01T00:00:00.000000Z',
    });
    expect(v.table_size_bytes).toBeGreaterThan(0);
    expect(views.get('demo', 'result_numbers')).toEqual(v); // the short name means the caller's team
  });

  it('upsert updates the view of that query (schedule, tier, name) and 409s a name of another query', async () => {
    const a = await views.upsert('demo', { name: 'result_a', query_id: 1 });
    await runner.finish(a.execution_id);
    clock.advance(MIN);
    const b = await views.upsert('demo', { name: 'result_a', query_id: 1, performance: 'large', cron_expression: '*/30 * * * *' });
    expect(views.get('demo', 'result_a')).toMatchObject({ performance: 'large', cron_expression: '*/30 * * * *', last_execution_ids: [b.execution_id, a.execution_id] });
    expect(views.get('demo', 'result_a').updated_at).toBe('2026-01-01T00:01:00.000000Z');
    expect(views.list('demo', 100, 0).materialized_views).toHaveLength(1);

    // Same query, new name: the view (and its table) is renamed.
    const c = await views.upsert('demo', { name: 'result_renamed', query_id: 1 });
    await runner.finishAll();
    expect(() => views.get('demo', 'result_a')).toThrow(/not found/);
    expect(views.get('demo', 'result_renamed').id).toBe(views.get('demo', 'result_renamed').id);
    expect(await duck.rows('SELECT count(*) FROM service.demo.result_renamed')).toEqual([['3']]);
    expect(c.name).toBe('service.demo.result_renamed');

    const err = await views.upsert('demo', { name: 'result_renamed', query_id: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ViewError);
    expect((err as ViewError).status).toBe(409);
    expect((err as ViewError).message).toMatch(/service\.demo\.result_renamed belongs to query 1, not 2/);
  });

  it('refuses bad names and schedules with 400 and the reason', async () => {
    const badName = caught(() => views.get('demo', 'daily_totals')) as ViewError;
    expect(badName.status).toBe(400);
    expect(badName.message).toMatch(/invalid materialized view name "daily_totals".*starts with "result_"/);
    expect((caught(() => views.get('demo', 'service.demo.Result_X')) as ViewError).status).toBe(400);
    const badCron = (await views.upsert('demo', { name: 'result_c', query_id: 1, cron_expression: '*/5 * * * *' }).catch((e: unknown) => e)) as ViewError;
    expect(badCron.status).toBe(400);
    expect(badCron.message).toMatch(/every 15 minutes at the most/);
    expect(views.list('demo', 10, 0).materialized_views).toEqual([]);
  });

  it('a refresh larger than the storage quota fails clearly and the previous table stays', async () => {
    await build(5_000);
    sqlOf.set(9, 'SELECT 1 AS v');
    const a = await views.upsert('demo', { name: 'result_q', query_id: 9 });
    await runner.finish(a.execution_id);
    sqlOf.set(9, "SELECT repeat('y', 1000) AS v FROM range(30)");
    const r = await views.refresh('demo', 'result_q');
    await runner.finish(r.execution_id);
    expect(runner.failures.get(r.execution_id)).toMatch(
      /Refresh of materialized view service\.demo\.result_q failed: its result is \d+ bytes.*exceeds the storage quota of 5000 bytes; the previous table is kept/,
    );
    expect(await duck.rows('SELECT * FROM service.demo.result_q')).toEqual([[1]]);
    expect(views.get('demo', 'result_q').table_size_bytes).toBeLessThan(100);
    expect(ledger.used('demo')).toBe(10); // the failed refresh cost nothing
    sqlOf.set(9, 'SELECT 1 AS v');
  });

  it('the quota counts the team’s other views', async () => {
    await build(40_000);
    const a = await views.upsert('demo', { name: 'result_big1', query_id: 3 });
    await runner.finish(a.execution_id);
    expect(views.storageBytes('demo')).toBeGreaterThan(30_000);
    sqlOf.set(4, "SELECT repeat('z', 1000) AS big FROM range(20)");
    const b = await views.upsert('demo', { name: 'result_big2', query_id: 4 });
    await runner.finish(b.execution_id);
    expect(runner.failures.get(b.execution_id)).toMatch(/with the team's other views \(\d+ bytes\) that exceeds the storage quota of 40000 bytes/);
    // Another team has its own quota.
    const c = await views.upsert('other', { name: 'result_big1', query_id: 3 });
    await runner.finish(c.execution_id);
    expect(runner.failures.has(c.execution_id)).toBe(false);
  });

  it('refreshes that would exceed the cycle’s credits are refused (402) and nothing changes', async () => {
    await build(10_000, 20);
    const a = await views.upsert('demo', { name: 'result_one', query_id: 1 });
    await runner.finish(a.execution_id);
    await views.refresh('demo', 'result_one');
    const err = await views.refresh('demo', 'result_one').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CreditLimitError);
    expect((err as CreditLimitError).message).toBe(MESSAGES.billingLimit);
    const create = await views.upsert('demo', { name: 'result_two', query_id: 2 }).catch((e: unknown) => e);
    expect(create).toBeInstanceOf(CreditLimitError);
    expect(() => views.get('demo', 'result_two')).toThrow(/not found/);
  });

  it('an older refresh finishing after a newer one does not overwrite it', async () => {
    const a = await views.upsert('demo', { name: 'result_order', query_id: 1 });
    const b = await views.refresh('demo', 'result_order');
    await runner.finish(b.execution_id);
    await runner.finish(a.execution_id);
    expect(views.get('demo', 'result_order').last_execution_ids).toEqual([b.execution_id, a.execution_id]);
    expect(registry.get('demo', 'result_order')?.appliedExecutionId).toBe(b.execution_id);
  });

  it('delete drops the table; private views and teams stay apart', async () => {
    const a = await views.upsert('demo', { name: 'result_pub', query_id: 1 });
    const b = await views.upsert('demo', { name: 'result_priv', query_id: 2, is_private: true });
    await runner.finishAll();
    expect(views.get('other', 'service.demo.result_pub').owner_team).toBe('demo');
    expect((caught(() => views.get('other', 'service.demo.result_priv')) as ViewError).status).toBe(404);
    expect(views.list('other', 10, 0).materialized_views).toEqual([]);
    expect((await views.delete('other', 'service.demo.result_pub').catch((e: unknown) => e) as ViewError).status).toBe(403);
    expect((await views.delete('other', 'service.demo.result_priv').catch((e: unknown) => e) as ViewError).status).toBe(404);
    expect((await views.refresh('other', 'service.demo.result_priv').catch((e: unknown) => e) as ViewError).status).toBe(404);

    expect(await views.delete('demo', 'service.demo.result_pub')).toEqual({ message: 'Materialized view service.demo.result_pub deleted' });
    expect(await duck.rows("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'result_pub'")).toEqual([['0']]);
    expect((caught(() => views.get('demo', 'result_pub')) as ViewError).status).toBe(404);
    expect([a.execution_id, b.execution_id]).toHaveLength(2);
  });

  it('lists with limit, offset and next_offset, oldest first', async () => {
    for (let q = 10; q < 15; q += 1) {
      sqlOf.set(q, `SELECT ${q} AS q`);
      clock.advance(1000);
      await views.upsert('demo', { name: `result_v${q}`, query_id: q });
    }
    const first = views.list('demo', 2, 0);
    expect(ViewListSchema.safeParse(first).success).toBe(true);
    expect(first.materialized_views.map((v) => v.name)).toEqual(['service.demo.result_v10', 'service.demo.result_v11']);
    expect(first.next_offset).toBe(2);
    const last = views.list('demo', 2, 4);
    expect(last.materialized_views.map((v) => v.name)).toEqual(['service.demo.result_v14']);
    expect(last).not.toHaveProperty('next_offset');
    expect(views.list('demo', 10, 50).materialized_views).toEqual([]);
  });

  it('survives a restart: views are persisted', async () => {
    const a = await views.upsert('demo', { name: 'result_kept', query_id: 1, cron_expression: '0 0 * * *' });
    await runner.finish(a.execution_id);
    await build();
    expect(views.get('demo', 'result_kept')).toMatchObject({ query_id: 1, cron_expression: '0 0 * * *', last_execution_ids: [a.execution_id] });
  });
});

describe('view scheduler', () => {
  it('runs due refreshes as the clock moves, once per due time, skipping while one still runs', async () => {
    const scheduler = new ViewScheduler({
      clock,
      registry,
      refresh: (v) => views.refreshScheduled(v),
      isRefreshing: (v) => views.isRefreshing(v),
      onError: () => {},
    });
    const a = await views.upsert('demo', { name: 'result_sched', query_id: 1, cron_expression: '*/15 * * * *' });
    await runner.finish(a.execution_id);
    expect(await scheduler.tick()).toEqual([]);
    clock.advance(14 * MIN);
    expect(await scheduler.tick()).toEqual([]);
    clock.advance(MIN);
    expect(await scheduler.tick()).toEqual(['service.demo.result_sched']);
    expect(await scheduler.tick()).toEqual([]); // not twice for one due time
    clock.advance(15 * MIN);
    expect(await scheduler.tick()).toEqual([]); // the 00:15 refresh is still running: skipped
    await runner.finishAll();
    clock.advance(15 * MIN);
    expect(await scheduler.tick()).toEqual(['service.demo.result_sched']);
    await runner.finishAll();
    // Stopped for a day: the missed runs collapse into one.
    clock.advance(24 * 60 * MIN);
    expect(await scheduler.tick()).toEqual(['service.demo.result_sched']);
    expect(registry.get('demo', 'result_sched')?.nextRunAt).toBe(clock.now() + 15 * MIN);
    expect(views.get('demo', 'result_sched').last_execution_ids).toHaveLength(4);
  });

  it('reports a refresh it could not start (no credits) and goes on with the others', async () => {
    await build(10_000, 10);
    const errors: string[] = [];
    const scheduler = new ViewScheduler({ clock, registry, refresh: (v) => views.refreshScheduled(v), isRefreshing: (v) => views.isRefreshing(v), onError: (v, e) => errors.push(`${v.name}: ${(e as Error).message}`) });
    const a = await views.upsert('demo', { name: 'result_s1', query_id: 1, cron_expression: '0 * * * *' });
    await runner.finish(a.execution_id);
    clock.advance(60 * MIN);
    expect(await scheduler.tick()).toEqual([]);
    expect(errors).toEqual([`result_s1: ${MESSAGES.billingLimit}`]);
  });
});
