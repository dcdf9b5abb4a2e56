// Inputs that once reached the engine or the file system unchecked and came back as 500: each
// is now a 400 that says what is wrong, and the service keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

let svc: TestService;
let id: string;
beforeAll(async () => {
  svc = await startTestService();
  id = await runSql(svc, 'SELECT i AS a, i * 2 AS b FROM range(10) t(i)');
});
afterAll(() => svc?.close());

const results = (query: Record<string, string>) => call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read, query });
const upload = (body: unknown) => call(svc, 'POST', '/v1/uploads/csv', { key: svc.keys.demo.write, body });

async function expectAlive(): Promise<void> {
  const r = await results({ limit: '2' });
  expect(r.status).toBe(200);
  expect(r.json.result.rows).toEqual([
    { a: 0, b: 0 },
    { a: 1, b: 2 },
  ]);
}

describe('bad input is a 400 naming the problem, never a 500', () => {
  it('filters nested thousands of parentheses deep', async () => {
    for (const n of [101, 2000]) {
      const r = await results({ filters: `${'('.repeat(n)}a = 1${')'.repeat(n)}` });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('Bad Request: filters: parentheses nested more than 100 deep at 100');
    }
    // Past Node's 16 KiB request head, still a JSON error.
    const huge = await results({ filters: `${'('.repeat(5000)}a = 1${')'.repeat(5000)}` });
    expect(huge.status).toBe(431);
    expect(huge.json.error).toMatch(/^Request Header Fields Too Large: the request line and headers exceed 16 KiB/);
    // A hundred levels is still served, and so are long flat chains and deep mixes within it.
    expect((await results({ filters: `${'('.repeat(100)}a = 1${')'.repeat(100)}` })).json.result.rows).toEqual([{ a: 1, b: 2 }]);
    expect((await results({ filters: Array(700).fill('a = 3').join(' OR ') })).json.result.rows).toEqual([{ a: 3, b: 6 }]);
    let mixed = 'a = 4';
    for (let i = 0; i < 99; i++) mixed = `(${mixed} ${i % 2 === 0 ? 'OR' : 'AND'} a >= 0)`;
    expect((await results({ filters: mixed })).status).toBe(200);
    await expectAlive();
  });

  it('columns naming the same column hundreds of times, or twice in another case', async () => {
    const r = await results({ columns: Array(500).fill('a').join(',') });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe('Bad Request: columns: "a" is named twice; name each column once');
    const c = await results({ columns: 'a,b,A' });
    expect(c.json.error).toBe('Bad Request: columns: "A" is named twice (as "a" too); name each column once');
    await expectAlive();
  });

  it('an upload table_name of 240 or 10,000 characters', async () => {
    for (const n of [129, 240, 10_000]) {
      const r = await upload({ table_name: 'a'.repeat(n), data: 'x\n1\n' });
      expect(r.status, String(n)).toBe(400);
      expect(r.json.error).toBe('Bad Request: table_name: at most 128 characters');
    }
    const ok = await upload({ table_name: 'a'.repeat(128), data: 'x\n1\n' });
    expect(ok.status, ok.text).toBe(200);
    const view = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: `result_${'v'.repeat(240)}`, query_id: 1 } });
    expect(view.status).toBe(400);
    expect(view.json.error).toContain('name: at most 128 characters');
    await expectAlive();
  });

  it('an upload whose CSV has a NUL in the header, or is only a NUL', async () => {
    for (const [data, column] of [
      ['x\u0000y,z\n1,2\n', 1],
      ['z,"q\u0000"\n1,2\n', 2],
      ['\u0000', 1],
    ] as const) {
      const r = await upload({ table_name: 'nul', data });
      expect(r.status, JSON.stringify(data)).toBe(400);
      expect(r.json.error).toBe(
        `Bad Request: CSV line 1 (the header): the name of column ${column} holds a NUL character (U+0000); column names must be text without NUL`,
      );
    }
    // A NUL inside a value is data, kept as such.
    const value = await upload({ table_name: 'nul_value', data: 'x,y\n1,a\u0000b\n' });
    expect(value.status, value.text).toBe(200);
    await expectAlive();
  });
});
