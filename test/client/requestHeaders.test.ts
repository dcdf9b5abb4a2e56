// The client's requestHeaders hook (how telemetry puts `traceparent` on every request): asked for
// on every attempt, retries included, and never able to replace the client's own headers.
import { describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { startMisbehavingServer } from './misbehavingServer.ts';

const STATUS = '{"execution_id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","state":"QUERY_STATE_PENDING","is_execution_finished":false}';

describe('requestHeaders', () => {
  it('adds the hook’s headers to every attempt, fresh each time; the API key and accept stay the client’s', async () => {
    const server = await startMisbehavingServer((_req, n) => (n === 1 ? { status: 503, body: '{"error":"busy"}' } : { status: 200, headers: { 'content-type': 'application/json' }, body: STATUS }));
    let asked = 0;
    const operations: string[] = [];
    const c = new ServiceClient({
      apiKey: 'the-key',
      baseUrl: `${server.baseUrl}/api`,
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      requestHeaders: (operation) => (operations.push(operation), { traceparent: `00-${'a'.repeat(32)}-${String(++asked).padStart(16, '0')}-01`, 'x-service-api-key': 'stolen', accept: 'text/plain' }),
    });
    try {
      await c.getStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV');
      expect(server.received.map((r) => r.headers.traceparent)).toEqual([`00-${'a'.repeat(32)}-0000000000000001-01`, `00-${'a'.repeat(32)}-0000000000000002-01`]);
      expect(server.received.every((r) => r.headers['x-service-api-key'] === 'the-key' && r.headers.accept === 'application/json')).toBe(true);
      // Named by the client method, so that a tracer can tell a page fetch from a status poll.
      expect(operations).toEqual(['getStatus', 'getStatus']);
    } finally {
      await c.close();
      await server.close();
    }
  });
});
