import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import {
  AbortedError,
  BadRequestError,
  ExecutionExpiredError,
  ExecutionFailedError,
  ForbiddenError,
  QueryArchivedError,
  InvalidApiKeyError,
  NetworkError,
  NotFoundError,
  PartialResultError,
  RateLimitedError,
  ServerError,
  ServiceClient,
  ServiceError,
  TimeoutError,
  type ClientOptions,
} from '../../src/client/index.ts';
import { ManualClock } from '../../src/service/clock.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// Each error class produced by the real service (or the real network), and the API key in none of them.
const UNKNOWN_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
let svc: TestService;
const clients: ServiceClient[] = [];

function clientWith(options: Partial<ClientOptions> = {}): ServiceClient {
  const c = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url, retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...options });
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ServiceError)) throw new Error(`expected a ServiceError, got ${String(err)}`);
  return err;
}

beforeAll(async () => {
  svc = await startTestService({ limits: { max_result_bytes: 2_000 } });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await svc.close();
});

describe('HTTP errors from the real service', () => {
  it('401 bad key: InvalidApiKeyError, not retried', async () => {
    const c = clientWith({ apiKey: 'sk_wrong' });
    const err = await failure(c.getStatus(UNKNOWN_ID));
    expect(err).toBeInstanceOf(InvalidApiKeyError);
    expect(err).toMatchObject({ status: 401, code: 'INVALID_API_KEY', retryable: false, method: 'getStatus', executionId: UNKNOWN_ID });
    expect(err.message).toBe(
      `getStatus GET ${svc.url}/v1/execution/${UNKNOWN_ID}/status (execution ${UNKNOWN_ID}): 401 Invalid API Key (check the apiKey option)`,
    );
    expect(c.stats).toEqual({ requests: 1, retries: 0 });
  });

  it('403 read-only key creating a query: ForbiddenError naming the scope', async () => {
    const c = clientWith({ apiKey: svc.keys.demo.read });
    const err = await failure(c.createQuery({ name: 'q', query_sql: 'SELECT 1' }));
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err.message).toContain('403 Not allowed: this API key lacks the Read/Write scope');
    expect(c.stats.retries).toBe(0);
  });

  it('403 executing an archived query: QueryArchivedError, not a scope problem', async () => {
    const c = clientWith();
    const { query_id } = await c.createQuery({ name: 'archived', query_sql: 'SELECT 1' });
    await c.archiveQuery(query_id);
    const err = await failure(c.execute({ queryId: query_id }));
    expect(err).toBeInstanceOf(QueryArchivedError);
    expect(err).toMatchObject({ status: 403, code: 'QUERY_ARCHIVED' });
    expect(err.message).toContain('is archived');
  });

  it('404 unknown execution and unknown query: NotFoundError', async () => {
    const c = clientWith();
    const err = await failure(c.execution(UNKNOWN_ID).wait());
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toContain('404 Object not found');
    expect(err.executionId).toBe(UNKNOWN_ID);
    expect(await failure(c.getQuery(987654))).toBeInstanceOf(NotFoundError);
    expect(c.stats.retries).toBe(0);
  });

  it('404 for a base URL without /api names the likely fix', async () => {
    const origin = new URL(svc.url).origin;
    const c = clientWith({ baseUrl: origin });
    const err = await failure(c.executeSql('SELECT 1'));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toContain('no operation at POST /v1/sql/execute');
    expect(err.message).toContain(`did you mean ${origin}/api as the base URL?`);
    // An unknown object under the right prefix is a plain 404.
    expect((await failure(clientWith().getQuery(987654))).message).not.toContain('did you mean');
  });

  it('400 malformed execution id, unknown parameter and bad filter: BadRequestError', async () => {
    const c = clientWith();
    const bad = await failure(c.getStatus('not-an-id'));
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad.message).toContain('400 The requested execution ID (ID: not-an-id) is invalid.');

    const { query_id } = await c.createQuery({ name: 'p', query_sql: 'SELECT {{a}} AS a', parameters: [{ key: 'a', type: 'number', value: 1 }] });
    expect((await failure(c.executeQuery(query_id, { parameters: { nope: 1 } }))).message).toContain('unknown parameters (nope)');

    const exec = await c.execute({ sql: 'SELECT id FROM sample.events WHERE id < 10' });
    await exec.wait();
    const filter = await failure(c.getResults(exec.id, { filters: 'lower(id) = 1' }));
    expect(filter).toBeInstanceOf(BadRequestError);
    expect(filter.message).toMatch(/getResults GET .*filters=lower%28id%29.*: 400 /);
    expect(c.stats.retries).toBe(0);
  });

  it('429 and 5xx via fault injection: retried, bounded, then RateLimitedError / ServerError', async () => {
    const c = clientWith({ retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    try {
      svc.setFaults({ error_rate: 1, error_statuses: [429] });
      const limited = await failure(c.getStatus(UNKNOWN_ID));
      expect(limited).toBeInstanceOf(RateLimitedError);
      expect(limited).toMatchObject({ status: 429, retryable: true, retryAfterMs: 0 });
      expect(c.stats).toEqual({ requests: 3, retries: 2 });

      svc.setFaults({ error_statuses: [503] });
      const server = await failure(c.executeSql('SELECT 1'));
      expect(server).toBeInstanceOf(ServerError);
      expect(server.status).toBe(503);
      expect(c.stats).toEqual({ requests: 6, retries: 4 });
    } finally {
      svc.setFaults({ error_rate: 0, error_statuses: [500, 429] });
    }
  });
});

describe('execution outcomes', () => {
  it('bad SQL: ExecutionFailedError with line, column and a caret under the offending place', async () => {
    const c = clientWith();
    const sql = 'SELECT id,\n       name\nFROM sample.events\nWHERE nope > 1';
    const err = await failure(c.run(sql));
    expect(err).toBeInstanceOf(ExecutionFailedError);
    const failed = err as ExecutionFailedError;
    expect(failed).toMatchObject({ line: 4, column: 7, errorType: 'FAILED_TYPE_EXECUTION_FAILED' });
    expect(failed.excerpt).toBe('4 | WHERE nope > 1\n  |       ^');
    // The engine's message first, its caret under it, the request last.
    expect(failed.message).toMatch(/^execution failed: .*nope/);
    expect(failed.message).toContain(`\n${failed.excerpt}\n(wait GET `);
    expect(failed.message.endsWith(`, execution ${failed.executionId})`)).toBe(true);
  });

  it('COMPLETED_PARTIAL: PartialResultError unless allowPartialResults', async () => {
    const c = clientWith();
    const sql = 'SELECT id, name FROM sample.events';
    const err = await failure(c.run(sql));
    expect(err).toBeInstanceOf(PartialResultError);
    expect(err.message).toContain('allowPartialResults: true');
    const exec = await c.execute({ sql });
    await exec.wait({ allowPartialResults: true });
    const wire = await failure(c.getResults(exec.id));
    expect(wire).toBeInstanceOf(PartialResultError);
    expect(wire.status).toBe(400);
    const rows = await c.run(sql, { allowPartialResults: true });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(2000);
  });

  it('EXPIRED: ExecutionExpiredError', async () => {
    const clock = new ManualClock();
    const own = await startTestService({ clock, limits: { retention_days: 1 } });
    try {
      const c = new ServiceClient({ apiKey: own.keys.demo.admin, baseUrl: own.url });
      clients.push(c);
      const exec = await c.execute({ sql: 'SELECT 1' });
      await exec.wait();
      clock.advance(2 * 86_400_000);
      const err = await failure(c.execution(exec.id).wait());
      expect(err).toBeInstanceOf(ExecutionExpiredError);
      expect(err.message).toContain('result expired');
      await expect(c.run('SELECT 1')).resolves.toEqual([{ 1: 1 }]);
    } finally {
      await own.close();
    }
  });
});

describe('transport failures', () => {
  it('per-request timeout: TimeoutError, retried for reads and then reported', async () => {
    const c = clientWith({ timeoutMs: 50, retry: { attempts: 2, baseDelayMs: 1 } });
    svc.setFaults({ latency_ms: 300 });
    try {
      const err = await failure(c.getStatus(UNKNOWN_ID));
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err.message).toContain('no complete answer within 50 ms');
      expect(c.stats).toEqual({ requests: 2, retries: 1 });
    } finally {
      svc.setFaults({ latency_ms: 0 });
    }
  });

  it('an aborted signal: AbortedError (name AbortError), never retried', async () => {
    const c = clientWith();
    const controller = new AbortController();
    controller.abort();
    const err = await failure(c.getStatus(UNKNOWN_ID, { signal: controller.signal }));
    expect(err).toBeInstanceOf(AbortedError);
    expect(err.name).toBe('AbortError');
    expect(c.stats.requests).toBe(0);
  });
});

describe('the API key never shows', () => {
  const KEY = 'sk_secret_key_do_not_print_1234';

  it('in messages, inspect output, causes or request events, whether in a header or the api_key parameter', async () => {
    const seen: string[] = [];
    const errors: unknown[] = [];
    for (const apiKeyIn of ['header', 'query'] as const) {
      const bad = clientWith({ apiKey: KEY, apiKeyIn, onRequest: (e) => seen.push(e.url) });
      errors.push(await failure(bad.getStatus(UNKNOWN_ID)));
      const good = clientWith({ apiKey: svc.keys.demo.admin, apiKeyIn, onRequest: (e) => seen.push(e.url) });
      errors.push(await failure(good.getStatus(UNKNOWN_ID)));
      errors.push(await failure(good.run('SELECT nope')));
      const dead = clientWith({ apiKey: KEY, apiKeyIn, baseUrl: 'http://127.0.0.1:1/api', retry: { attempts: 1 } });
      errors.push(await failure(dead.getStatus(UNKNOWN_ID)));
      seen.push(inspect(bad, { depth: 5 }), inspect(dead, { depth: 5 }));
    }
    const adminKey = svc.keys.demo.admin;
    expect(errors.map((e) => (e as Error).constructor.name)).toEqual([
      'InvalidApiKeyError', 'NotFoundError', 'ExecutionFailedError', 'NetworkError',
      'InvalidApiKeyError', 'NotFoundError', 'ExecutionFailedError', 'NetworkError',
    ]);
    expect(errors[3]).toBeInstanceOf(NetworkError);
    for (const err of errors) {
      for (let e: unknown = err; e !== undefined; e = (e as { cause?: unknown }).cause) {
        const text = `${String(e)}\n${inspect(e, { depth: 10, showHidden: true })}`;
        expect(text).not.toContain(KEY);
        expect(text).not.toContain(adminKey);
      }
    }
    expect(seen.length).toBeGreaterThan(8);
    for (const s of seen) {
      expect(s).not.toContain(KEY);
      expect(s).not.toContain(adminKey);
    }
  });
});
