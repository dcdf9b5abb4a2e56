// The per-team cache of table sizes behind /v1/usage and the quota checks: it must never report a
// figure other than what reading the tables would give, and must spare that reading when nothing
// changed. Checked on the class (every interleaving of writers and readers) and on a real engine
// (each figure against a fresh measurement of the tables).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TeamTableSizes, teamTableBytes } from '../../../src/service/engine/tables/teamStorage.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

describe('TeamTableSizes', () => {
  test('keeps a measured figure until SQL changing the team starts; other teams are untouched', async () => {
    const sizes = new TeamTableSizes();
    let calls = 0;
    const measure = (n: number) => async () => {
      calls += 1;
      return n;
    };
    expect(await sizes.bytes('demo', measure(10))).toBe(10);
    expect(await sizes.bytes('DEMO', measure(99))).toBe(10);
    expect(await sizes.bytes('other', measure(5))).toBe(5);
    expect(calls).toBe(2);
    const end = sizes.beginWrite('demo');
    // While it runs, every read measures (what is committed so far) and nothing is kept.
    expect(await sizes.bytes('demo', measure(11))).toBe(11);
    expect(await sizes.bytes('demo', measure(12))).toBe(12);
    end(40);
    expect(await sizes.bytes('demo', measure(99))).toBe(40);
    expect(await sizes.bytes('other', measure(99))).toBe(5);
    expect(calls).toBe(4);
  });

  test('a write that ends without a committed figure leaves the team unknown', async () => {
    const sizes = new TeamTableSizes();
    await sizes.bytes('demo', async () => 10);
    sizes.beginWrite('demo')();
    expect(await sizes.bytes('demo', async () => 3)).toBe(3);
    expect(await sizes.bytes('demo', async () => 99)).toBe(3);
  });

  test('overlapping writes keep no figure of their own: the next read measures', async () => {
    const sizes = new TeamTableSizes();
    const a = sizes.beginWrite('demo');
    const b = sizes.beginWrite('demo');
    a(100); // measured in a's transaction: b's rows are not in it
    b(200); // b began before a committed: a's rows are not in it either
    expect(await sizes.bytes('demo', async () => 300)).toBe(300);
    // A write that started and ended inside another's lifetime spoils that one's figure too.
    const c = sizes.beginWrite('demo');
    sizes.beginWrite('demo')(50);
    c(60);
    expect(await sizes.bytes('demo', async () => 70)).toBe(70);
  });

  test('a measurement a write overtook is returned but not kept', async () => {
    const sizes = new TeamTableSizes();
    let release: () => void = () => undefined;
    const slow = sizes.bytes('demo', () => new Promise<number>((ok) => (release = () => ok(1))));
    sizes.beginWrite('demo')();
    release();
    expect(await slow).toBe(1);
    expect(await sizes.bytes('demo', async () => 2)).toBe(2);
  });
});

describe('on the engine', () => {
  let fx: EngineFixture;
  const quota = { storageQuota: { limitBytes: 1 << 30, otherBytes: 0 } };
  beforeAll(async () => {
    fx = await startEngine({ sampleRows: 10 });
  });
  afterAll(async () => {
    await fx.close();
  });
  const engine = (): DuckDbEngine => fx.engine as DuckDbEngine;
  const fresh = (team: string): Promise<number> => engine().withConnection((c) => teamTableBytes(c, team));
  const run = (sql: string, extra: object = quota): Promise<unknown> => fx.engine.execute(sql, opts({ team: 'demo', ...extra }));

  test('every figure equals the tables read afresh, through creates, inserts, drops and failures', async () => {
    const steps: Array<() => Promise<unknown>> = [
      () => run("CREATE TABLE service.demo.a AS SELECT range AS n, 'x' || range AS s FROM range(1000)"),
      () => run('INSERT INTO service.demo.a SELECT range, NULL FROM range(10)'),
      () => run('CREATE TABLE service.demo.b AS SELECT 1.5 AS d', {}),
      () => run('DROP TABLE service.demo.b'),
      () => run("CREATE OR REPLACE TABLE service.demo.a AS SELECT 'only' AS s"),
      () => run("CREATE TABLE service.demo.c AS SELECT 1 AS x; SELECT error('after the write')").catch(() => undefined),
      () => run('CREATE TABLE service.demo.d AS SELECT range FROM range(100)', { storageQuota: { limitBytes: 10, otherBytes: 0 } }).catch(() => undefined),
      () => Promise.all([run('CREATE TABLE service.demo.e AS SELECT range FROM range(500)'), run('CREATE TABLE service.demo.f AS SELECT range FROM range(700)')]),
    ];
    for (const [i, step] of steps.entries()) {
      await step();
      const expected = await fresh('demo');
      expect(await fx.engine.tables.teamTableBytes('demo'), `after step ${i}`).toBe(expected);
      expect(await fx.engine.tables.teamTableBytes('demo'), `after step ${i}, read again`).toBe(expected);
    }
    expect(await fresh('demo')).toBeGreaterThan(0);
  });

  test('after a write the figure comes from the write, not from reading the tables again', async () => {
    await run('CREATE TABLE service.demo.kept AS SELECT range FROM range(50)');
    const figure = await fx.engine.tables.teamTableBytes('demo');
    // Behind the engine's back (no execution): the kept figure does not notice, which shows it is kept.
    await engine().withConnection((c) => c.run('DROP TABLE service.demo.kept'));
    expect(await fx.engine.tables.teamTableBytes('demo')).toBe(figure);
    expect(await fresh('demo')).toBeLessThan(figure);
    // The next SQL changing the team's tables measures again.
    await run('DROP TABLE IF EXISTS service.demo.nothing');
    expect(await fx.engine.tables.teamTableBytes('demo')).toBe(await fresh('demo'));
  });
});
