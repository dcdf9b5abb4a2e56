// A few hundred generated malformed requests (bodies, ids, result parameters, names, headers)
// against a running service. Seeded, so a failure names the seed and request number that
// reproduces it. Asserts: never a 5xx, every refusal a JSON {"error": "..."} body, and the
// service still answers afterwards.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runSql } from './api.ts';
import { seeded } from '../helpers/seeded.ts';

const SEED = 20261124;
const COUNT = 400;


let svc: TestService;
let goodId: string;
beforeAll(async () => {
  svc = await startTestService({ sampleRows: 100 });
  goodId = await runSql(svc, `SELECT i AS a, 'x' || i AS "b c", i::DOUBLE AS d FROM range(20) t(i)`);
});
afterAll(() => svc?.close());

interface Fuzzed {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

function generator(random: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const int = (n: number) => Math.floor(random() * n);
  const chars = ['a', 'Z', '0', '_', ' ', '"', "'", '\\', '(', ')', ',', '%', '/', '.', '\u0000', '\u00e9', '\u{1F600}', '\ufeff', '\n', ';', '-', '=', '<', '*'];
  const junk = (max: number) => Array.from({ length: int(max) }, () => pick(chars)).join('');
  const weirdStrings = () =>
    pick([
      '',
      junk(12),
      junk(60),
      'x'.repeat(pick([240, 4000])),
      '\u0000',
      'SELECT 1',
      "'; DROP TABLE x; --",
      '((((((((((a = 1',
      'a = 1 AND',
      'NaN',
      '-0',
      '9999999999999999999999',
      '1e309',
      '__proto__',
      'result_' + junk(10),
      'a'.repeat(129),
    ]);
  const jsonValue = (depth: number): unknown => {
    switch (int(depth > 3 ? 6 : 9)) {
      case 0:
        return null;
      case 1:
        return random() < 0.5;
      case 2:
        return pick([0, -1, 1.5, 2 ** 53 + 1, 1e308, -1e308, 9999999999999]);
      case 3:
      case 4:
      case 5:
        return weirdStrings();
      case 6:
        return Array.from({ length: int(4) }, () => jsonValue(depth + 1));
      default: {
        const o: Record<string, unknown> = {};
        for (let k = int(5); k > 0; k--) o[pick(['sql', 'name', 'query_sql', 'parameters', 'query_parameters', 'performance', 'table_name', 'data', 'query_id', 'cron_expression', 'is_private', 'tags', junk(6)])] = jsonValue(depth + 1);
        return o;
      }
    }
  };
  const csv = () => pick(['\u0000', 'a,a\n1,2\n', '"x\n', 'x\u0000y\n1\n', 'a,b\n1\n', 'x\n1\n', junk(30), 'x\n' + junk(20)]);
  const shaped: Record<string, () => unknown> = {
    sql: () => ({ sql: pick([junk(40), 'SELECT 1', weirdStrings()]), ...(random() < 0.3 ? { query_parameters: jsonValue(1) } : {}), ...(random() < 0.3 ? { performance: jsonValue(2) } : {}) }),
    upload: () => ({ table_name: pick([weirdStrings(), 'a'.repeat(pick([240, 10_000])), 't_' + int(5)]), data: csv(), ...(random() < 0.3 ? { is_private: jsonValue(2) } : {}) }),
    query: () => ({ name: weirdStrings(), query_sql: pick(['SELECT {{x}}', 'SELECT 1', junk(20)]), ...(random() < 0.5 ? { parameters: pick([jsonValue(1), [{ key: 'x', type: pick(['text', 'number', 'enum', 'date']), value: jsonValue(2) }]]) } : {}), ...(random() < 0.5 ? { query_parameters: pick([jsonValue(1), { x: jsonValue(2) }]) } : {}) }),
    execute: () => ({ query_parameters: pick([jsonValue(1), { x: jsonValue(2) }]), performance: pick(['medium', 'large', jsonValue(2)]) }),
    view: () => ({ name: pick([weirdStrings(), 'result_' + 'v'.repeat(pick([5, 240]))]), query_id: jsonValue(2), cron_expression: pick([junk(9), '*/5 * * * *', '0 0 * * 0', weirdStrings()]) }),
    none: () => jsonValue(0),
  };
  const body = (kind: string): string | Buffer | undefined =>
    pick([
      () => undefined,
      () => JSON.stringify((shaped[kind] ?? shaped.none!)()),
      () => JSON.stringify((shaped[kind] ?? shaped.none!)()),
      () => JSON.stringify((shaped[kind] ?? shaped.none!)()),
      () => JSON.stringify(jsonValue(0)),
      () => '{"sql": ' + junk(8),
      () => '['.repeat(int(5000) + 1) + ']'.repeat(int(3)),
      () => '{"a":'.repeat(int(3000) + 1) + '1' + '}'.repeat(int(3)),
      () => Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x7b]),
    ])();
  const id = () =>
    pick([
      goodId,
      '01' + 'Z'.repeat(24),
      junk(10),
      encodeURIComponent(junk(10)),
      '%E0%A4%A',
      '%00',
      '..',
      '-1',
      '0',
      '9999999999999',
      '1e3',
      'x'.repeat(300),
      encodeURIComponent('\u{1F600}'),
    ]);
  const resultQuery = (): string => {
    const q = new URLSearchParams();
    for (let k = int(5); k > 0; k--) {
      const key = pick(['limit', 'offset', 'columns', 'filters', 'sort_by', 'sample_count', 'allow_partial_results', 'ignore_max_datapoints_per_request', 'params.a', 'params.', 'api_key', junk(5)]);
      const value = pick([
        weirdStrings,
        () => String(int(100)),
        () => pick(['a', '"b c"', 'a,a', '"b\\"c"', 'd desc', 'A, a', Array(300).fill('a').join(','), Array(300).fill('d desc').join(',')]),
        () => pick([Array(400).fill('a = 1').join(pick([' AND ', ' OR '])), '('.repeat(1500) + 'a=1' + ')'.repeat(1500), 'a = 1', 'a IN (1, 2', "\"b c\" LIKE 'x%'", 'd > 1.5 OR (a < 3 AND a IS NOT NULL)', 'NOT a = 1', 'a = now()', '(' .repeat(150) + 'a=1' + ')'.repeat(150)]),
      ])();
      q.append(key, value);
    }
    const s = q.toString();
    return s === '' ? '' : `?${s}`;
  };
  const ops: (() => Fuzzed)[] = [
    () => ({ method: 'POST', path: pick(['/v1/uploads/csv', '/v1/query/']), headers: {}, ...opt(body(pick(['upload', 'query']))) }),
    () => ({ method: 'POST', path: '/v1/sql/execute', headers: {}, ...opt(body('sql')) }),
    () => ({ method: 'GET', path: `/v1/execution/${id()}/status`, headers: {} }),
    () => ({ method: 'POST', path: `/v1/execution/${id()}/cancel`, headers: {}, ...opt(body('none')) }),
    () => ({ method: 'GET', path: `/v1/execution/${pick([goodId, goodId, id()])}/results${pick(['', '/csv'])}${resultQuery()}`, headers: {} }),
    () => ({ method: 'GET', path: `/v1/query/${id()}/results${pick(['', '/csv'])}${resultQuery()}`, headers: {} }),
    () => ({ method: pick(['POST', 'PATCH']), path: pick(['/v1/query', '/v1/query/', `/v1/query/${id()}`]), headers: {}, ...opt(body('query')) }),
    () => ({ method: 'POST', path: `/v1/query/${id()}/${pick(['execute', 'archive', 'unarchive', 'private', 'unprivate'])}`, headers: {}, ...opt(body('execute')) }),
    () => ({ method: 'POST', path: pick(['/v1/uploads/csv', '/v1/table/upload/csv']), headers: {}, ...opt(body('upload')) }),
    () => ({ method: pick(['GET', 'POST', 'DELETE']), path: pick(['/v1/materialized-views', `/v1/materialized-views/${id()}`, `/v1/materialized-views/${id()}/refresh`]), headers: {}, ...opt(body('view')) }),
    () => ({ method: pick(['GET', 'POST']), path: '/v1/usage', headers: {}, ...opt(body(pick(['none', 'usage']))) }),
    () => ({ method: pick(['PUT', 'OPTIONS', 'HEAD', 'DELETE', 'GET']), path: pick(['/v1', '/v2/query', '/', `/v1/${junk(8)}`, '/v1/query//']).replace(/[^\x21-\x7e]/g, '_'), headers: {} }),
  ];
  const headerValue = () => pick(['application/json', 'text/csv', 'application/vnd.apache.arrow.stream', '*/*', 'x'.repeat(2000), '', 'ümlaut', junk(10).replace(/[^\x20-\x7e]/g, '?')]);
  return (): { req: Fuzzed; key: string | undefined } => {
    const req = pick(ops)();
    for (let k = int(3); k > 0; k--) req.headers[pick(['content-type', 'accept', 'x-requested-with', 'content-encoding'])] = headerValue();
    const key = pick([svc.keys.demo.admin, svc.keys.demo.write, svc.keys.demo.read, svc.keys.other.write, undefined, 'nope', 'x'.repeat(500)]);
    return { req, key };
  };
}

function opt(body: string | Buffer | undefined): { body?: string | Buffer } {
  return body === undefined ? {} : { body };
}

describe('fuzz: generated malformed requests', () => {
  it(`${COUNT} requests (seed ${SEED}): no 5xx, JSON error bodies, the service alive afterwards`, async () => {
    const next = generator(seeded(SEED));
    const statuses = new Map<number, number>();
    for (let n = 0; n < COUNT; n++) {
      const { req, key } = next();
      const headers = { ...req.headers, ...(key === undefined ? {} : { 'x-service-api-key': key }) };
      const where = `seed ${SEED} request ${n}: ${req.method} ${req.path.slice(0, 200)}`;
      const res = await request(`${svc.origin}/api${req.path}`, { method: req.method as 'GET', headers, ...(req.body === undefined ? {} : { body: req.body }) });
      const text = await res.body.text();
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      expect(res.statusCode, `${where} -> ${text.slice(0, 300)}`).toBeLessThan(500);
      if (res.statusCode >= 400 && req.method !== 'HEAD') {
        expect(res.headers['content-type'], where).toMatch(/^application\/json/);
        const parsed = JSON.parse(text) as { error?: unknown };
        expect(typeof parsed.error, `${where} -> ${text.slice(0, 300)}`).toBe('string');
      }
    }
    // The run covered refusals of many kinds, not only one.
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(4);
    const alive = await request(`${svc.origin}/api/v1/execution/${goodId}/results?limit=1`, { headers: { 'x-service-api-key': svc.keys.demo.read } });
    expect(alive.statusCode).toBe(200);
    expect(((await alive.body.json()) as any).result.rows).toEqual([{ a: 0, 'b c': 'x0', d: 0 }]);
  }, 120_000);
});
