// Response bodies arrive in many chunks, with or without a content-length, with multi-byte characters
// cut between chunks: the page is read whole, into one buffer of its own.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
let server: Server | undefined;
let client: ServiceClient | undefined;

afterEach(async () => {
  await client?.close();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
  client = undefined;
});

/** A result page of `n` rows, with non-ASCII text split across chunks. */
function page(n: number): Buffer {
  const rows = Array.from({ length: n }, (_, i) => ({ id: i, name: `é ✓ row ${i} 🎉` }));
  const metadata = { column_names: ['id', 'name'], column_types: ['integer', 'varchar'], row_count: n, result_set_bytes: n, total_row_count: n, total_result_set_bytes: n, datapoint_count: 2 * n };
  return Buffer.from(JSON.stringify({ execution_id: ID, query_id: 0, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows, metadata } }));
}

async function serve(withLength: boolean, body: Buffer): Promise<ServiceClient> {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', ...(withLength ? { 'content-length': String(body.length) } : {}) });
    // Odd-sized chunks, so multi-byte characters are cut between them.
    let at = 0;
    const next = () => {
      if (at >= body.length) return res.end();
      const end = Math.min(body.length, at + 7_777);
      res.write(body.subarray(at, end), next);
      at = end;
    };
    next();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  client = new ServiceClient({ apiKey: 'k', baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/api` });
  return client;
}

describe('response bodies in many chunks', () => {
  it.each([true, false])('are read whole (content-length: %s), the bytes counted as received', async (withLength) => {
    const body = page(5_000);
    const c = await serve(withLength, body);
    let bytes = 0;
    const got = await c.getResults(ID, { onBodyBytes: (n) => (bytes = n) });
    expect(bytes).toBe(body.length);
    expect(got.result!.rows).toHaveLength(5_000);
    expect(got.result!.rows[4_999]).toEqual({ id: 4_999, name: 'é ✓ row 4999 🎉' });
    const wire = await c.getResultsWire(ID, { accept: 'json' });
    expect(wire.format).toBe('json');
    if (wire.format === 'json') {
      expect(Buffer.compare(wire.body, body)).toBe(0);
      // A buffer of its own, whole: it can be freed (or transferred) without a copy.
      expect(wire.body.byteOffset).toBe(0);
      expect(wire.body.buffer.byteLength).toBe(body.length);
    }
  });
});
