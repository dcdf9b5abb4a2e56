import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { NetworkError, ServiceClient, SubmissionOutcomeUnknownError } from '../../src/client/index.ts';
import { startMisbehavingServer, type MisbehavingServer } from './misbehavingServer.ts';

/**
 * The resubmission rule at the seams the real service never exercises (it resets GETs only):
 * a POST execute whose answer is lost after it was sent. The rule against the real service's
 * 429/500 faults is tested in serviceFaults.test.ts.
 */
const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const ANSWER = JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_PENDING' });
let server: MisbehavingServer | undefined;
let client: ServiceClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
  server = undefined;
});

function clientFor(baseUrl: string): ServiceClient {
  client = new ServiceClient({ apiKey: 'k', baseUrl, retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 5 } });
  return client;
}

describe('resubmission of execute', () => {
  it('does not resend when the answer is cut before the id arrived, and says why', async () => {
    server = await startMisbehavingServer(() => ({ body: ANSWER, resetAfterBytes: 20 }));
    const c = clientFor(server.baseUrl);
    const err = await c.executeSql('SELECT 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SubmissionOutcomeUnknownError);
    expect((err as SubmissionOutcomeUnknownError).retryable).toBe(false);
    expect((err as Error).message).toMatch(/^executeSql POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/sql\/execute: connection lost .* the service may have accepted it, so it is not resent/);
    expect(server.received.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(c.stats.retries).toBe(0);
  });

  it('keeps the execution when the id arrived whole before the cut', async () => {
    server = await startMisbehavingServer(() => ({ body: ANSWER, resetAfterBytes: ANSWER.indexOf('state') }));
    const c = clientFor(server.baseUrl);
    await expect(c.executeSql('SELECT 1')).resolves.toEqual({ execution_id: ID, state: 'QUERY_STATE_PENDING' });
    expect(server.received).toHaveLength(1);
  });

  it('resends after 500 and 429 (rejected before acting) and counts the retries', async () => {
    server = await startMisbehavingServer((_req, n) =>
      n === 1 ? { status: 500, body: '{"error":"Internal error"}' } : n === 2 ? { status: 429, body: '{"error":"Too many requests"}', headers: { 'retry-after': '0' } } : { body: ANSWER },
    );
    const events: number[] = [];
    client = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl, retry: { baseDelayMs: 1 }, onRetry: (e) => events.push(e.error.status ?? 0) });
    await expect(client.executeSql('SELECT 1')).resolves.toMatchObject({ execution_id: ID });
    expect(events).toEqual([500, 429]);
    expect(client.stats).toEqual({ requests: 3, retries: 2 });
  });

  it('does not resend after a 504 (a gateway timing out says nothing about the service)', async () => {
    server = await startMisbehavingServer(() => ({ status: 504, body: '{"error":"Gateway Timeout"}' }));
    const c = clientFor(server.baseUrl);
    await expect(c.executeSql('SELECT 1')).rejects.toMatchObject({ status: 504, code: 'SERVER_ERROR' });
    expect(server.received).toHaveLength(1);
  });

  it('resends when the connection was refused (nothing was written), bounded by attempts', async () => {
    const port = await freePort();
    const c = clientFor(`http://127.0.0.1:${port}/api`);
    const err = await c.executeSql('SELECT 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).not.toBeInstanceOf(SubmissionOutcomeUnknownError);
    expect((err as NetworkError).phase).toBe('connect');
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(c.stats).toEqual({ requests: 4, retries: 3 });
  });

  it('reads are resent after a reset mid-body', async () => {
    const status = JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_EXECUTING', is_execution_finished: false });
    server = await startMisbehavingServer((_req, n) => (n === 1 ? { body: status, resetAfterBytes: 10 } : { body: status }));
    const c = clientFor(server.baseUrl);
    await expect(c.getStatus(ID)).resolves.toMatchObject({ state: 'QUERY_STATE_EXECUTING' });
    expect(c.stats.retries).toBe(1);
  });
});

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const address = srv.address();
  await new Promise((r) => srv.close(r));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
