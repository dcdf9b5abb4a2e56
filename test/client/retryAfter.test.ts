// Retry-After is a floor on the retry wait for 5xx answers too (RFC 9110 10.2.3): overloaded services
// and proxies send it with 503. A tiny server stands in: the local service sends Retry-After on 429 only.
import { describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceClient } from '../../src/client/index.ts';

describe('Retry-After on server errors', () => {
  it('waits at least Retry-After before retrying a 503', async () => {
    const at: number[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        at.push(performance.now());
        const first = at.length === 1;
        const body = first ? '{"error":"Service Unavailable"}' : '{"execution_id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","state":"QUERY_STATE_PENDING","is_execution_finished":false}';
        res.writeHead(first ? 503 : 200, { 'content-type': 'application/json', ...(first ? { 'retry-after': '1' } : {}) });
        res.end(body);
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const c = new ServiceClient({ apiKey: 'k', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
    try {
      await c.getStatus('01ARZ3NDEKTSV4RRFFQ69G5FAV');
      expect(at).toHaveLength(2);
      expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(990);
    } finally {
      await c.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
