// What test/client/** does not already pin down: keep-alive, an AbortSignal on every
// call, the 4xx classes that must never be retried, the total-time bound of retries, the timeout of
// a submission, polling that backs off to a cap, the real service's cancelled spelling in wait(),
// and lossless bigints inside nested values. Real local service where it can produce the case; a
// scripted node:http server where only a misbehaving server can.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AbortedError,
  BadRequestError,
  ConflictError,
  ExecutionCanceledError,
  ForbiddenError,
  NotFoundError,
  PaymentChallengeError,
  PaymentRequiredError,
  ServerError,
  ServiceClient,
  ServiceError,
  SubmissionOutcomeUnknownError,
  TimeoutError,
  type RequestEvent,
} from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

interface Scripted {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Answer after this many ms. */
  delayMs?: number;
}

interface ScriptedServer {
  baseUrl: string;
  connections: number;
  requests: { method: string; url: string; at: number }[];
  close(): Promise<void>;
}

async function scripted(answer: (req: IncomingMessage, n: number) => Scripted): Promise<ScriptedServer> {
  const state: ScriptedServer = { baseUrl: '', connections: 0, requests: [], close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', at: performance.now() });
      const a = answer(req, state.requests.length);
      const send = () => {
        if (res.destroyed) return;
        const body = Buffer.from(a.body ?? '');
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json', 'content-length': String(body.length), ...a.headers });
        res.end(body);
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  state.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  state.close = () =>
    new Promise((ok) => {
      server.closeAllConnections();
      server.close(() => ok());
    });
  return state;
}

const statusBody = (state: string, finished: boolean) => JSON.stringify({ execution_id: ID, state, is_execution_finished: finished });

let svc: TestService;
let client: ServiceClient;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 50, limits: { page_rows: 10 } });
  client = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url });
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

describe('transport', () => {
  it('keeps connections alive: sequential calls share one connection; keepAlive: false opens one per request', async () => {
    const server = await scripted(() => ({ body: statusBody('QUERY_STATE_COMPLETED', true) }));
    try {
      const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
      for (let i = 0; i < 40; i++) await c.getStatus(ID);
      await c.close();
      const reused = server.connections;
      console.log('keep-alive connections for 40 sequential calls:', reused);
      expect(reused).toBeLessThanOrEqual(2);
      const fresh = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, keepAlive: false });
      for (let i = 0; i < 4; i++) await fresh.getStatus(ID);
      await fresh.close();
      expect(server.connections).toBe(reused + 4);
    } finally {
      await server.close();
    }
  });

  it('accepts a base URL with a trailing slash', async () => {
    const c = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: `${svc.url}/` });
    try {
      expect(await c.run('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await c.close();
    }
  });
});

describe('errors that must not be retried', () => {
  const cases: Array<[number, new (...a: never[]) => ServiceError, string]> = [
    [400, BadRequestError, 'BAD_REQUEST'],
    [402, PaymentRequiredError, 'PAYMENT_REQUIRED'],
    [403, ForbiddenError, 'FORBIDDEN'],
    [404, NotFoundError, 'NOT_FOUND'],
    [408, BadRequestError, 'BAD_REQUEST'],
    [409, ConflictError, 'CONFLICT'],
    [422, BadRequestError, 'BAD_REQUEST'],
  ];
  it.each(cases)('%i: its class, code, status, not retryable, sent once (reads and submissions alike)', async (status, cls, code) => {
    const server = await scripted(() => ({ status, body: JSON.stringify({ error: `nope ${status}` }) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, retry: { attempts: 5, baseDelayMs: 1 } });
    try {
      for (const call of [() => c.getStatus(ID), () => c.executeSql('SELECT 1'), () => c.upsertView({ name: 'result_x', query_id: 1 })]) {
        const before = c.stats.requests;
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(cls);
        expect(err).toMatchObject({ code, status, retryable: false, serverMessage: `nope ${status}` });
        expect((err as Error).message).toContain(`${status} nope ${status}`);
        expect(c.stats.requests - before).toBe(1);
      }
      expect(c.stats.retries).toBe(0);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('a 5xx with an HTML body (a proxy) is a ServerError with an excerpt, retried for reads', async () => {
    const server = await scripted((_req, n) => (n < 3 ? { status: 502, body: '<html><h1>Bad Gateway</h1></html>', headers: { 'content-type': 'text/html' } } : { body: statusBody('QUERY_STATE_COMPLETED', true) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, retry: { attempts: 2, baseDelayMs: 1 } });
    try {
      const err = await c.getStatus(ID).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerError);
      expect((err as Error).message).toContain('Bad Gateway');
      expect(c.stats).toEqual({ requests: 2, retries: 1 });
      expect((await c.getStatus(ID)).state).toBe('QUERY_STATE_COMPLETED');
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe('retry bounds', () => {
  it('stops retrying once the total time budget (maxElapsedMs) would be crossed, whatever the attempts', async () => {
    const server = await scripted(() => ({ status: 500, body: '{"error":"Internal error"}' }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, retry: { attempts: 1000, baseDelayMs: 40, maxDelayMs: 40, maxElapsedMs: 300 } });
    try {
      const t = performance.now();
      const err = await c.getStatus(ID).catch((e: unknown) => e);
      const took = performance.now() - t;
      expect(err).toBeInstanceOf(ServerError);
      // Without the budget, 1000 attempts 40 ms apart would take 40 s; the margin over 300 ms is for
      // a loaded CI machine, not a property of the client.
      expect(took).toBeLessThan(3_000);
      expect(c.stats.requests).toBeGreaterThan(1);
      expect(c.stats.requests).toBeLessThan(1000);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('a submission whose answer does not come within timeoutMs is not resent (SubmissionOutcomeUnknownError)', async () => {
    const server = await scripted(() => ({ delayMs: 400, body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_PENDING' }) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, timeoutMs: 50, retry: { attempts: 5, baseDelayMs: 1 } });
    try {
      const err = await c.executeSql('SELECT 1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SubmissionOutcomeUnknownError);
      expect(err).toMatchObject({ retryable: false });
      expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
      // A read that times out is a TimeoutError and is retried.
      const read = await c.getStatus(ID).catch((e: unknown) => e);
      expect(read).toBeInstanceOf(TimeoutError);
      expect(server.requests.filter((r) => r.method === 'GET')).toHaveLength(5);
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe('AbortSignal on every call', () => {
  it('an aborted signal ends each method with AbortedError before any request is sent', async () => {
    const seen: RequestEvent[] = [];
    const c = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url, onRequest: (e) => seen.push(e) });
    const ac = new AbortController();
    ac.abort();
    const signal = ac.signal;
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['executeSql', () => c.executeSql('SELECT 1', { signal })],
      ['executeQuery', () => c.executeQuery(1, { signal })],
      ['getStatus', () => c.getStatus(ID, { signal })],
      ['cancel', () => c.cancel(ID, { signal })],
      ['getResults', () => c.getResults(ID, { signal })],
      ['getResultsCsv', () => c.getResultsCsv(ID, { signal })],
      ['getLatestResultPage', () => c.getLatestResultPage(1, { signal })],
      ['getLatestResultCsv', () => c.getLatestResultCsv(1, { signal })],
      ['createQuery', () => c.createQuery({ name: 'x', query_sql: 'SELECT 1' }, { signal })],
      ['getQuery', () => c.getQuery(1, { signal })],
      ['updateQuery', () => c.updateQuery(1, { name: 'y' }, { signal })],
      ['archiveQuery', () => c.archiveQuery(1, { signal })],
      ['unarchiveQuery', () => c.unarchiveQuery(1, { signal })],
      ['uploadCsv', () => c.uploadCsv({ table_name: 't', data: 'a\n1\n' }, { signal })],
      ['upsertView', () => c.upsertView({ name: 'result_x', query_id: 1 }, { signal })],
      ['getView', () => c.getView('service.demo.result_x', { signal })],
      ['listViews', () => c.listViews({ signal })],
      ['deleteView', () => c.deleteView('service.demo.result_x', { signal })],
      ['refreshView', () => c.refreshView('result_x', { signal })],
      ['getUsage', () => c.getUsage({ signal })],
      ['execute', () => c.execute({ sql: 'SELECT 1' }, { signal })],
      ['run', () => c.run('SELECT 1', { signal })],
      ['getLatestResult', () => c.getLatestResult(1, { signal })],
      ['wait', () => c.execution(ID).wait({ signal })],
      ['rows', async () => c.execution(ID).rows({ signal }).next()],
    ];
    try {
      for (const [name, call] of calls) {
        const err = await call().catch((e: unknown) => e);
        expect(err, name).toBeInstanceOf(AbortedError);
        expect((err as Error).name, name).toBe('AbortError');
      }
      expect(seen).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('aborting while iterating rows() stops at once: no further page is requested', async () => {
    const seen: RequestEvent[] = [];
    const c = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url, onRequest: (e) => seen.push(e) });
    try {
      const exec = await c.execute({ sql: 'SELECT id FROM sample.events ORDER BY id' });
      await exec.wait();
      const ac = new AbortController();
      const got: unknown[] = [];
      const err = await (async () => {
        for await (const row of exec.rows({ signal: ac.signal })) {
          got.push(row);
          if (got.length === 10) ac.abort();
        }
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AbortedError);
      expect(got).toHaveLength(10);
      expect(seen.filter((e) => e.operation === 'getResults')).toHaveLength(1);
    } finally {
      await c.close();
    }
  });
});

describe('wait()', () => {
  it('polls fast first and backs off (doubling) to the cap', async () => {
    const server = await scripted((_req, n) => ({ body: n < 9 ? statusBody('QUERY_STATE_EXECUTING', false) : statusBody('QUERY_STATE_COMPLETED', true) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    try {
      // The schedule is asserted from what wait() asks for (onPoll), not from the wall clock,
      // which a loaded machine stretches; the clock only bounds it from below.
      const asked: number[] = [];
      const done = await c.execution(ID).wait({ pollIntervalMs: 10, maxPollIntervalMs: 80, onPoll: (e) => asked.push(e.nextPollInMs) });
      expect(done.state).toBe('QUERY_STATE_COMPLETED');
      const expected = [10, 20, 40, 80, 80, 80, 80, 80];
      expect(asked).toEqual(expected);
      const at = server.requests.map((r) => r.at);
      expect(at).toHaveLength(9);
      const gaps = at.slice(1).map((t, i) => t - at[i]!);
      gaps.forEach((g, i) => expect(g, `gap ${i}`).toBeGreaterThanOrEqual(expected[i]! - 2));
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('gives up at deadlineMs with a TimeoutError naming the state and the execution, not retryable', async () => {
    const server = await scripted(() => ({ body: statusBody('QUERY_STATE_PENDING', false) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    try {
      // The server never finishes: only the deadline can end this wait.
      const err = await c.execution(ID).wait({ deadlineMs: 150, pollIntervalMs: 20 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err).toMatchObject({ retryable: false, executionId: ID });
      // The deadline falls between polls or during one; either way the message names the state seen.
      expect((err as Error).message).toMatch(/(execution still|status request unanswered \(last known state) QUERY_STATE_PENDING\)? after /);
      expect((err as Error).message).toContain('deadlineMs 150');
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('a deadline reached while a status request is unanswered names the last state seen', async () => {
    // The first status is answered at once, the second not before the deadline: the deadline is
    // ample for the first answer on a loaded machine (at 150 ms, a slow first answer made the
    // message 'no state known yet'), and the second request holds the rest of it.
    const server = await scripted((_req, n) => ({ body: statusBody('QUERY_STATE_EXECUTING', false), delayMs: n === 1 ? 0 : 60_000 }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    try {
      const err = await c.execution(ID).wait({ deadlineMs: 1_000, pollIntervalMs: 20 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as Error).message).toMatch(/: status request unanswered \(last known state QUERY_STATE_EXECUTING\) after \d+ ms \(deadlineMs 1000\)$/);
      expect(server.requests).toHaveLength(2);
    } finally {
      await c.close();
      await server.close();
    }
  });

  it('the real service\'s QUERY_STATE_CANCELLED is the terminal canceled state: wait() and rows() raise ExecutionCanceledError', async () => {
    const server = await scripted(() => ({ body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_CANCELLED', is_execution_finished: true, cancelled_at: '2026-11-20T10:15:30.123456Z' }) }));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    try {
      const err = await c.execution(ID).wait({ pollIntervalMs: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ExecutionCanceledError);
      expect(err).toMatchObject({ code: 'EXECUTION_CANCELED', executionId: ID });
      expect(server.requests).toHaveLength(1);
      const rows = await c.execution(ID).rows().next().catch((e: unknown) => e);
      expect(rows).toBeInstanceOf(ExecutionCanceledError);
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe('402: a payment challenge told apart from the billing cycle', () => {
  it('a 402 with WWW-Authenticate: Payment is PaymentChallengeError naming what was asked, sent once; a plain 402 stays PaymentRequiredError', async () => {
    const challenge = 'Payment realm="api", amount="0.05", currency="USDC", recipient="0xabc"';
    const server = await scripted((req) =>
      req.url?.includes('sql/execute')
        ? { status: 402, body: '{"error":"Payment required"}', headers: { 'www-authenticate': `Bearer realm="x", ${challenge}` } }
        : { status: 402, body: '{"error":"This API request would exceed your configured limits per billing cycle."}' },
    );
    const c = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    try {
      const err = await c.executeSql('SELECT 1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentChallengeError);
      expect(err).not.toBeInstanceOf(PaymentRequiredError);
      expect(err).toMatchObject({ code: 'PAYMENT_CHALLENGE', status: 402, retryable: false, challenge });
      expect((err as Error).message).toContain(`asks to be paid for this request with WWW-Authenticate: ${challenge}`);
      expect(server.requests).toHaveLength(1);
      const billing = await c.getStatus(ID).catch((e: unknown) => e);
      expect(billing).toBeInstanceOf(PaymentRequiredError);
      expect(billing).not.toBeInstanceOf(PaymentChallengeError);
      expect(server.requests).toHaveLength(2);
    } finally {
      await c.close();
      await server.close();
    }
  });
});

describe('values', () => {
  it('integers beyond 2^53 stay exact inside arrays, maps and rows, next to look-alike strings', async () => {
    // On the wire (pages, values as sent): the lossless parse.
    const exec = await client.execute({
      sql: `SELECT [9007199254740993, -9007199254740993, 1]::BIGINT[] AS arr,
              MAP {'k': 9223372036854775807}::MAP(VARCHAR, BIGINT) AS m,
              {'x': 9007199254740995::BIGINT, 's': '":12345678901234567890'} AS r,
              '[9007199254740993]' AS s,
              0.1::DOUBLE AS d, 1e300::DOUBLE AS big_double, 9007199254740991::BIGINT AS safe`,
    });
    const rows = [];
    for await (const page of exec.pages()) rows.push(...page.result!.rows);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row['arr']).toEqual([9007199254740993n, -9007199254740993n, 1]);
    expect(row['m']).toEqual({ k: 9223372036854775807n });
    expect(row['r']).toEqual({ x: 9007199254740995n, s: '":12345678901234567890' });
    expect(row['s']).toBe('[9007199254740993]');
    expect(row['d']).toBe(0.1);
    expect(row['big_double']).toBe(1e300);
    expect(row['safe']).toBe(9007199254740991);
    // Typed (run, rows): every bigint a bigint, the map a Map.
    const [typed] = await client.run({ sql: exec.sql! });
    expect(typed!['arr']).toEqual([9007199254740993n, -9007199254740993n, 1n]);
    expect(typed!['m']).toEqual(new Map([['k', 9223372036854775807n]]));
    expect(typed!['safe']).toBe(9007199254740991n);
  });

  it('run() with a partial result and allowPartialResults pages through the truncated rows only', async () => {
    const local = await startTestService({ sampleRows: 50, limits: { max_result_bytes: 100, page_rows: 4 } });
    const c = new ServiceClient({ apiKey: local.keys.demo.admin, baseUrl: local.url });
    try {
      const rows = await c.run('SELECT id FROM sample.events ORDER BY id', { allowPartialResults: true });
      expect(rows.length).toBeGreaterThan(4);
      expect(rows.length).toBeLessThan(50);
      expect(rows).toEqual(Array.from({ length: rows.length }, (_, i) => ({ id: BigInt(i) })));
    } finally {
      await c.close();
      await local.close();
    }
  });
});
