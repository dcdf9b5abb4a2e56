import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_PAGE_CONCURRENCY, ServiceClient } from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// The client's own pool must hold as many connections as a job may fetch pages at once: with fewer,
// the pages beyond the pool wait for a socket while the job believes they are in flight.
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 10 } });
});

afterAll(() => svc.close());

it('32 concurrent page requests each get their own connection from a fresh client', async () => {
  const setup = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url });
  const execution = await setup.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 400' });
  await execution.wait();
  await setup.close();
  const client = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url });
  const connected = new Set<unknown>();
  const onConnected = (message: unknown) => connected.add((message as { socket: unknown }).socket);
  try {
    subscribe('undici:client:connected', onConnected);
    // The service holds every request a while, so all 32 are in flight at once.
    svc.setFaults({ latency_ms: 150 });
    const pages = await Promise.all(
      Array.from({ length: MAX_PAGE_CONCURRENCY }, (_, i) => client.getResults(execution.id, { limit: 10, offset: i * 10 })),
    );
    expect(pages.map((p) => p.result?.rows[0]?.id)).toEqual(Array.from({ length: MAX_PAGE_CONCURRENCY }, (_, i) => i * 10));
    expect(connected.size).toBe(32);
  } finally {
    svc.setFaults({ latency_ms: 0 });
    unsubscribe('undici:client:connected', onConnected);
    await client.close();
  }
});


it('the per-attempt timeout counts from when a request is sent, not while it waits in the pool for a connection', async () => {
  const setup = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url });
  const execution = await setup.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 40' });
  await execution.wait();
  await setup.close();
  // One connection: the four requests run one after another, each answered after 300 ms. The last
  // waits about 900 ms in the queue, longer than the 700 ms timeout, and must still not time out
  // (nor be retried: the service counts the attempts).
  const dispatcher = new Agent({ connections: 1 });
  const attempts: number[] = [];
  const client = new ServiceClient({
    apiKey: svc.keys.demo.admin,
    baseUrl: svc.url,
    dispatcher,
    timeoutMs: 700,
    retry: { attempts: 1 },
    onRequest: (event) => attempts.push(event.attempt),
  });
  try {
    svc.setFaults({ latency_ms: 300 });
    const pages = await Promise.all(Array.from({ length: 4 }, (_, i) => client.getResults(execution.id, { limit: 10, offset: i * 10 })));
    expect(pages.map((p) => p.result?.rows[0]?.id)).toEqual([0, 10, 20, 30]);
    expect(attempts).toHaveLength(4);
  } finally {
    svc.setFaults({ latency_ms: 0 });
    await client.close();
    await dispatcher.close();
  }
});

it('a request sent on a connection that answers too slowly still times out', async () => {
  const client = new ServiceClient({ apiKey: svc.keys.demo.admin, baseUrl: svc.url, timeoutMs: 100, retry: { attempts: 1 } });
  try {
    svc.setFaults({ latency_ms: 400 });
    await expect(client.getUsage()).rejects.toMatchObject({ code: 'TIMEOUT' });
  } finally {
    svc.setFaults({ latency_ms: 0 });
    await client.close();
  }
});
