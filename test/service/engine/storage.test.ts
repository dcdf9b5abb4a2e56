import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EngineError } from '../../../src/service/engine/index.ts';
import { sampleEventsSelect } from '../../../src/service/engine/tables/sampleEvents.ts';
import { SAMPLE_ROWS, opts, startEngine, type EngineFixture } from './engineFixture.ts';

let fx: EngineFixture;
beforeAll(async () => {
  fx = await startEngine();
});
afterAll(async () => {
  await fx.close();
});

async function stored(sql: string, extra = {}): Promise<string> {
  const o = opts(extra);
  await fx.engine.execute(sql, o);
  return o.resultId;
}

function ids(rowsJson: string): number[] {
  return (JSON.parse(rowsJson) as { id: number }[]).map((r) => r.id);
}

describe('paging a stored result', () => {
  test('pages follow the query order; offset past the end is an empty page', async () => {
    const id = await stored('SELECT id, name FROM sample.events ORDER BY id DESC');
    const first = await fx.engine.page(id, { offset: 0, limit: 3 });
    expect(ids(first.rowsJson)).toEqual([999, 998, 997]);
    expect(first.totalRowCount).toBe(SAMPLE_ROWS);
    const last = await fx.engine.page(id, { offset: 998, limit: 10 });
    expect(ids(last.rowsJson)).toEqual([1, 0]);
    const past = await fx.engine.page(id, { offset: 5000, limit: 10 });
    expect(past).toMatchObject({ rowsJson: '[]', rowCount: 0, totalRowCount: SAMPLE_ROWS });
    expect(past.bytes).toBe('id,name\n'.length);
  });

  test('page bytes and total bytes count a header line plus values as text', async () => {
    const o = opts();
    const info = await fx.engine.execute("SELECT * FROM (VALUES (1, 'ab'), (NULL, 'é')) t(x, y)", o);
    // header "x,y\n" (4) + "1,ab\n" (5) + ",é\n" (4 bytes: é is 2)
    expect(info.bytes).toBe(13);
    const page = await fx.engine.page(o.resultId, { offset: 1, limit: 1 });
    expect(page.bytes).toBe(4 + 4);
    const all = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    expect(all.bytes).toBe(info.bytes);
  });

  test('columns projection, in the asked order; unknown column is bad_request', async () => {
    const id = await stored('SELECT id, name, value FROM sample.events ORDER BY id LIMIT 2');
    const page = await fx.engine.page(id, { offset: 0, limit: 10, columns: ['value', 'id'] });
    expect(page.columnNames).toEqual(['value', 'id']);
    expect(page.columnTypes).toEqual(['double', 'bigint']);
    expect(JSON.parse(page.rowsJson)).toEqual([{ value: 0, id: 0 }, { value: 79.19, id: 1 }]);
    await expect(fx.engine.page(id, { offset: 0, limit: 1, columns: ['nope'] })).rejects.toMatchObject({
      kind: 'bad_request',
      message: expect.stringContaining('unknown column "nope"'),
    });
  });

  test('sort_by with paging', async () => {
    const id = await stored('SELECT id, quantity FROM sample.events WHERE id < 20');
    const page = await fx.engine.page(id, { offset: 1, limit: 3, sortBy: 'quantity desc, id' });
    expect(ids(page.rowsJson)).toEqual([18, 17, 16]);
    expect(page.totalRowCount).toBe(20);
    await expect(fx.engine.page(id, { offset: 0, limit: 1, sortBy: 'nope' })).rejects.toMatchObject({ kind: 'bad_request' });
  });

  test('filters over typed columns, with paging and totals', async () => {
    const id = await stored('SELECT * FROM sample.events ORDER BY id');
    const by = async (filters: string) => {
      const page = await fx.engine.page(id, { offset: 0, limit: 1000, filters });
      return { ids: ids(page.rowsJson), total: page.totalRowCount };
    };
    expect(await by('id < 3')).toEqual({ ids: [0, 1, 2], total: 3 });
    expect(await by("id IN (5, '7') OR (name = 'event_9' AND flag = 'true')")).toEqual({ ids: [5, 7, 9], total: 3 });
    expect(await by("ts < '2026-01-01 00:00:02.5+00' AND id >= 1")).toEqual({ ids: [1, 2], total: 2 });
    // day is the date of ts: the fixture's 1,000 rows (20 minutes) are all on the first day.
    expect(await by("(day = '2026-01-01' AND id < 2) OR day = '2026-01-02'")).toEqual({ ids: [0, 1], total: 2 });
    expect(await by("name LIKE 'event_99_' AND id < 1000")).toEqual({ ids: [990, 991, 992, 993, 994, 995, 996, 997, 998, 999], total: 10 });
    expect(await by('amount >= 9999 AND id <> 0')).toMatchObject({ total: expect.any(Number) });
    const paged = await fx.engine.page(id, { offset: 2, limit: 2, filters: 'quantity = 5 OR quantity = 6' });
    expect(ids(paged.rowsJson)).toEqual([]);
    expect(paged.totalRowCount).toBe(2);
    expect(paged.rowCount).toBe(0);
  });

  test('filters on 256-bit, NULL and string columns', async () => {
    const id = await stored('SELECT * FROM sample.all_types ORDER BY id');
    const by = async (filters: string) => ids((await fx.engine.page(id, { offset: 0, limit: 10, filters })).rowsJson);
    expect(await by(`c_uint256 = '${(1n << 256n) - 1n}'`)).toEqual([2]);
    expect(await by('c_int256 < 0')).toEqual([1, 3]);
    expect(await by('c_boolean IS NULL')).toEqual([3, 4]);
    expect(await by('c_varchar IS NOT NULL AND c_varchar != \'\'')).toEqual([1, 3]);
    expect(await by("c_timestamptz > '2000-01-01 00:00:00 UTC'")).toEqual([1, 3]);
  });

  test('a filter comparing incompatible types is bad_request, and hostile text is inert', async () => {
    const id = await stored('SELECT id, name FROM sample.events LIMIT 5');
    await expect(fx.engine.page(id, { offset: 0, limit: 1, filters: "id = 'abc'" })).rejects.toMatchObject({ kind: 'bad_request' });
    const hostile = await fx.engine.page(id, { offset: 0, limit: 10, filters: "name = ''' OR 1=1 --'" });
    expect(hostile.rowCount).toBe(0);
    await expect(fx.engine.page(id, { offset: 0, limit: 1, filters: 'id = 1; DROP TABLE sample.events' })).rejects.toMatchObject({ kind: 'bad_request' });
    const still = await fx.engine.execute('SELECT count(*) AS n FROM sample.events', opts());
    expect(still.rowCount).toBe(1);
  });

  test('sample_count returns about that many distinct rows', async () => {
    const id = await stored('SELECT id FROM sample.events');
    const page = await fx.engine.page(id, { offset: 0, limit: 1000, sampleCount: 50 });
    const got = ids(page.rowsJson);
    expect(got).toHaveLength(50);
    expect(new Set(got).size).toBe(50);
    expect(page.totalRowCount).toBe(50);
    expect(got).toEqual([...got].sort((a, b) => a - b));
  });
});

describe('CSV pages', () => {
  test('header always, RFC 4180 quoting, NULL as an empty field, empty string quoted', async () => {
    const id = await stored(`SELECT * FROM (VALUES (1, 'plain', [1, 2]), (2, 'a,b "q"' || chr(10) || 'x', NULL), (3, NULL, []), (4, '', [3])) t("id", "text, odd", arr) ORDER BY id`);
    const page = await fx.engine.csvPage(id, { offset: 0, limit: 10 });
    expect(page.csv).toBe(
      'id,"text, odd",arr\n1,plain,"[1,2]"\n2,"a,b ""q""\nx",\n3,,"[]"\n4,"","[3]"\n',
    );
    expect(page).toMatchObject({ rowCount: 4, totalRowCount: 4 });
    const empty = await fx.engine.csvPage(id, { offset: 10, limit: 10 });
    expect(empty.csv).toBe('id,"text, odd",arr\n');
  });
});

describe('storage', () => {
  test('sampleEventsSelect (the benchmarks\' generator) yields exactly sample.events', async () => {
    const diff = await stored(`SELECT count(*) AS n FROM ((SELECT * FROM sample.events EXCEPT ALL ${sampleEventsSelect(SAMPLE_ROWS)}) UNION ALL (${sampleEventsSelect(SAMPLE_ROWS)} EXCEPT ALL SELECT * FROM sample.events))`);
    expect(JSON.parse((await fx.engine.page(diff, { offset: 0, limit: 1 })).rowsJson)).toEqual([{ n: 0 }]);
    const more = await stored(`SELECT count(*) AS n FROM (${sampleEventsSelect(SAMPLE_ROWS + 1)} EXCEPT ALL SELECT * FROM sample.events)`);
    expect(JSON.parse((await fx.engine.page(more, { offset: 0, limit: 1 })).rowsJson)).toEqual([{ n: 1 }]);
  });

  test('results survive close and reopen; the sample dataset is not regenerated', async () => {
    const o = opts();
    const info = await fx.engine.execute('SELECT id, uint256(id::VARCHAR) AS u FROM sample.events ORDER BY id DESC LIMIT 3', o);
    const before = await fx.engine.page(o.resultId, { offset: 0, limit: 10 });
    const engine = await fx.reopen();
    expect(await engine.hasResult(o.resultId)).toBe(true);
    expect(await engine.resultInfo(o.resultId)).toEqual(info);
    const after = await engine.page(o.resultId, { offset: 0, limit: 10 });
    expect(after).toEqual(before);
    expect(after.columnTypes).toEqual(['bigint', 'uint256']);
  });

  test('dropResult deletes the file and frees its space', async () => {
    const o = opts();
    await fx.engine.execute('SELECT * FROM sample.events', o);
    await fx.engine.page(o.resultId, { offset: 0, limit: 1 });
    const file = join(fx.dataDir, 'results', `${o.resultId}.duckdb`);
    expect(existsSync(file)).toBe(true);
    await fx.engine.dropResult(o.resultId);
    expect(existsSync(file)).toBe(false);
    expect(await fx.engine.hasResult(o.resultId)).toBe(false);
    await expect(fx.engine.page(o.resultId, { offset: 0, limit: 1 })).rejects.toMatchObject({ kind: 'not_found' });
  });

  test('maxResultBytes truncates at a row boundary and flags the result', async () => {
    const o = opts({ maxResultBytes: 100 });
    const info = await fx.engine.execute('SELECT id FROM sample.events ORDER BY id', o);
    // header "id\n" = 3, rows "0\n".."9\n" = 2 each, "10\n".. = 3 each: 3 + 20 + 25*3 = 98
    expect(info).toMatchObject({ truncated: true, rowCount: 35, bytes: 98 });
    const page = await fx.engine.page(o.resultId, { offset: 0, limit: 1000 });
    expect(page.rowCount).toBe(35);
    expect(page.totalRowCount).toBe(35);
    const full = await fx.engine.execute('SELECT id FROM sample.events', opts({ maxResultBytes: 1e9 }));
    expect(full.truncated).toBe(false);
  });

  test('non-SELECT statements store their own result; DDL before a SELECT runs in order', async () => {
    const o = opts();
    const info = await fx.engine.execute('CREATE TEMP TABLE t AS SELECT 1 AS a; INSERT INTO t VALUES (2); SELECT sum(a) AS s FROM t', o);
    expect(info.columnNames).toEqual(['s']);
    expect(JSON.parse((await fx.engine.page(o.resultId, { offset: 0, limit: 1 })).rowsJson)).toEqual([{ s: '3' }]);
    const pragma = opts();
    const p = await fx.engine.execute('PRAGMA table_info(\'sample.events\')', pragma);
    expect(p.rowCount).toBe(8);
    const ddl = await fx.engine.execute('CREATE TEMP TABLE u (x INTEGER)', opts());
    expect(ddl.truncated).toBe(false);
  });

  test('team schemas resolve as service.<team>.<name>', async () => {
    await fx.engine.execute('CREATE TABLE service.demo.mine_x AS SELECT 7 AS v', opts({ team: 'demo' }));
    const o = opts({ team: 'demo' });
    await fx.engine.execute('SELECT v FROM service.demo.mine_x', o);
    expect(JSON.parse((await fx.engine.page(o.resultId, { offset: 0, limit: 1 })).rowsJson)).toEqual([{ v: 7 }]);
  });

  test('bad result ids are rejected before touching the disk', async () => {
    await expect(fx.engine.execute('SELECT 1', opts({ resultId: '../escape' }))).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(fx.engine.page("x'; DROP", { offset: 0, limit: 1 })).rejects.toBeInstanceOf(EngineError);
  });
});

describe('cancel, timeout, concurrency', () => {
  const SLOW = 'SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3';

  test('abort interrupts a running query promptly; the engine stays usable', async () => {
    const ctl = new AbortController();
    const o = opts({ signal: ctl.signal });
    const started = performance.now();
    const run = fx.engine.execute(SLOW, o);
    setTimeout(() => ctl.abort(), 200);
    await expect(run).rejects.toMatchObject({ kind: 'canceled' });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(await fx.engine.hasResult(o.resultId)).toBe(false);
    expect((await fx.engine.execute('SELECT 1', opts())).rowCount).toBe(1);
  });

  test('an already aborted signal never runs the query', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(fx.engine.execute('SELECT 1', opts({ signal: ctl.signal }))).rejects.toMatchObject({ kind: 'canceled' });
  });

  test('timeoutMs stops the query with kind timeout', async () => {
    const started = performance.now();
    await expect(fx.engine.execute(SLOW, opts({ timeoutMs: 200 }))).rejects.toMatchObject({ kind: 'timeout' });
    expect(performance.now() - started).toBeLessThan(3000);
  });

  test('pages are served while a long execution runs', async () => {
    const id = await stored('SELECT id FROM sample.events');
    const ctl = new AbortController();
    const run = fx.engine.execute(SLOW, opts({ signal: ctl.signal }));
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    const page = await fx.engine.page(id, { offset: 10, limit: 5 });
    // SLOW never ends on its own: a page blocked behind it would never come.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(ids(page.rowsJson)).toEqual([10, 11, 12, 13, 14]);
    ctl.abort();
    await expect(run).rejects.toMatchObject({ kind: 'canceled' });
  });
});
