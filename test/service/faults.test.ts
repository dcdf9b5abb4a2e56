import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Dispatcher, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

let svc: TestService;
let done: string;
beforeAll(async () => {
  svc = await startTestService();
  done = await runSql(svc, 'SELECT id FROM sample.events ORDER BY id LIMIT 500');
});
afterEach(() => svc.setFaults({ latency_ms: 0, error_rate: 0, reset_rate: 0, error_statuses: [500, 429], retry_after_seconds: 0 }));
afterAll(() => svc?.close());

const executionFiles = async () => (await readdir(join(svc.dataDir, 'catalog', 'executions'))).length;

/** Reads a response body to its end or its failure: the bytes declared and received, and the error. */
async function readToEnd(res: Dispatcher.ResponseData): Promise<{ declared: number; received: number; err: unknown }> {
  const declared = Number(res.headers['content-length']);
  let received = 0;
  const err = await (async () => {
    for await (const chunk of res.body) received += (chunk as Buffer).length;
  })().then(() => undefined, (e: unknown) => e);
  return { declared, received, err };
}

describe('faults', () => {
  it('are off by default', async () => {
    expect(svc.faults).toMatchObject({ latency_ms: 0, error_rate: 0, reset_rate: 0 });
    for (let i = 0; i < 5; i++) expect((await call(svc, 'GET', `/v1/execution/${done}/status`, { key: svc.keys.demo.read })).status).toBe(200);
  });

  it('error_rate 1 with 500 answers Internal error, before auth and handling: nothing is created', async () => {
    svc.setFaults({ error_rate: 1, error_statuses: [500] });
    const before = await executionFiles();
    const r = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: 'SELECT 1' } });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ error: 'Internal error' });
    expect((await call(svc, 'GET', '/v1/nowhere', { key: null })).status).toBe(500);
    expect(await executionFiles()).toBe(before);
  });

  it('a reset of a pre-encoded page (streamed from its files) drops the connection at once, not at the keep-alive timeout', async () => {
    const own = await startTestService({ encodeMinBytes: 0 });
    try {
      const id = await runSql(own, 'SELECT id FROM sample.events ORDER BY id LIMIT 500');
      await own.whenEncoded(id);
      own.setFaults({ reset_rate: 1 });
      // The body stalls for 3 s before undici gives up on it (UND_ERR_BODY_TIMEOUT): a connection left
      // open after the cut (the service's keep-alive timeout is longer) shows as that, a dropped one
      // as a closed socket.
      const res = await request(`${own.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': own.keys.demo.read }, bodyTimeout: 3000 });
      expect(res.statusCode).toBe(200);
      const { declared, received, err } = await readToEnd(res);
      expect(received).toBeLessThan(declared);
      expect(err).toMatchObject({ code: 'UND_ERR_SOCKET' });
    } finally {
      await own.close();
    }
  });

  it('error_rate 1 with 429 answers Too many requests with Retry-After', async () => {
    svc.setFaults({ error_rate: 1, error_statuses: [429], retry_after_seconds: 1 });
    const r = await call(svc, 'GET', `/v1/execution/${done}/status`, { key: svc.keys.demo.read });
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('1');
    expect(r.json).toEqual({ error: 'Too many requests' });
  });

  it('error_rate 0.5 faults about half', async () => {
    svc.setFaults({ error_rate: 0.5, error_statuses: [503] });
    const counts = { 200: 0, 503: 0 } as Record<number, number>;
    for (let i = 0; i < 60; i++) {
      const s = (await call(svc, 'GET', `/v1/execution/${done}/status`, { key: svc.keys.demo.read })).status;
      counts[s] = (counts[s] ?? 0) + 1;
    }
    expect(counts[200]).toBeGreaterThan(10);
    expect(counts[503]).toBeGreaterThan(10);
    expect(counts[200]! + counts[503]!).toBe(60);
  });

  it('reset_rate 1 cuts GET bodies halfway; POSTs are not reset', async () => {
    svc.setFaults({ reset_rate: 1 });
    const resetsBefore = svc.faultCounts.resets;
    const res = await request(`${svc.url}/v1/execution/${done}/results`, { headers: { 'x-service-api-key': svc.keys.demo.read } });
    expect(res.statusCode).toBe(200);
    const { declared, received, err } = await readToEnd(res);
    expect(err).toBeInstanceOf(Error);
    expect(received).toBeLessThan(declared);
    expect(svc.faultCounts.resets).toBe(resetsBefore + 1);
    const post = await call(svc, 'POST', '/v1/sql/execute', { key: svc.keys.demo.write, body: { sql: 'SELECT 1' } });
    expect(post.status).toBe(200);
  });

  it('latency_ms delays every request', async () => {
    svc.setFaults({ latency_ms: 40 });
    const before = svc.faultCounts.delayed;
    const t0 = performance.now();
    for (let i = 0; i < 3; i++) await call(svc, 'GET', `/v1/execution/${done}/status`, { key: svc.keys.demo.read });
    expect(svc.faultCounts.delayed - before).toBe(3);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(3 * 40 - 5);
  });

  it('refuses invalid fault settings', () => {
    expect(() => svc.setFaults({ error_rate: 2 })).toThrow();
    expect(svc.faults.error_rate).toBe(0);
  });
});
