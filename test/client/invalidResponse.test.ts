import { afterEach, describe, expect, it } from 'vitest';
import { InvalidResponseError, ServiceClient } from '../../src/client/index.ts';
import { startMisbehavingServer, type MisbehavingServer, type Scripted } from './misbehavingServer.ts';

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
let server: MisbehavingServer | undefined;
let client: ServiceClient | undefined;

afterEach(async () => {
  await client?.close();
  await server?.close();
});

async function answering(answer: Scripted): Promise<ServiceClient> {
  server = await startMisbehavingServer(() => answer);
  client = new ServiceClient({ apiKey: 'sk_fake_key_123', baseUrl: server.baseUrl, retry: { attempts: 3, baseDelayMs: 1 } });
  return client;
}

describe('InvalidResponseError', () => {
  it('names method, URL and the JSON problem when the body is not JSON', async () => {
    const c = await answering({ body: '<html>oops</html>' });
    const err = await c.getStatus(ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect((err as Error).message).toMatch(new RegExp(`^getStatus GET http://127\\.0\\.0\\.1:\\d+/api/v1/execution/${ID}/status \\(execution ${ID}\\): response is not JSON`));
    expect((err as Error).message).toContain('<html>oops');
    expect(c.stats.retries).toBe(0);
  });

  it('names the zod path of a schema mismatch', async () => {
    const c = await answering({ body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_RUNNING', is_execution_finished: 'no' }) });
    const err = await c.getStatus(ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect((err as Error).message).toContain('state: Invalid option');
    expect((err as Error).message).toContain('is_execution_finished: Invalid input: expected boolean, received string');
  });

  it('checks result pages, including rows against row_count', async () => {
    const metadata = { column_names: ['a'], column_types: ['integer'], row_count: 2, result_set_bytes: 4, total_row_count: 2, total_result_set_bytes: 4, datapoint_count: 2 };
    const c = await answering({
      body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows: [{ a: 1 }], metadata } }),
    });
    await expect(c.getResults(ID)).rejects.toThrow(/result.rows holds 1 rows but result.metadata.row_count says 2/);
  });

  it('tolerates unknown fields, absent optional fields and the other cancelled spelling', async () => {
    const c = await answering({
      body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_CANCELED', is_execution_finished: true, brand_new_field: { x: 1 } }),
    });
    const status = await c.getStatus(ID);
    expect(status.state).toBe('QUERY_STATE_CANCELLED');
    expect(status.submitted_at).toBeUndefined();
  });

  it('rejects a CSV page whose next-offset header is not a number', async () => {
    const c = await answering({ body: 'a\n1\n', headers: { 'content-type': 'text/csv', 'x-service-next-offset': 'ten' } });
    await expect(c.getResultsCsv(ID)).rejects.toThrow(/x-service-next-offset is not a row offset: "ten"/);
  });

  it('reports a paging loop (next_offset that does not advance) instead of spinning', async () => {
    const metadata = { column_names: ['a'], column_types: ['integer'], row_count: 1, result_set_bytes: 4, total_row_count: 9, total_result_set_bytes: 4, datapoint_count: 1 };
    const page = { execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows: [{ a: 1 }], metadata }, next_offset: 0 };
    server = await startMisbehavingServer((req) =>
      req.url?.includes('/status') ? { body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true }) } : { body: JSON.stringify(page) },
    );
    client = new ServiceClient({ apiKey: 'k', baseUrl: server.baseUrl });
    await expect(client.run({ sql: 'x' })).rejects.toThrow(/does not advance/);
    const rows = client.execution(ID).rows();
    await expect(rows.next()).resolves.toEqual({ done: false, value: { a: 1 } });
    await expect(rows.next()).rejects.toThrow(/next_offset 0 does not advance past offset 0/);
  });
});

describe('result page rows', () => {
  it('names the first row that is not an object', async () => {
    const metadata = { column_names: ['a'], column_types: ['integer'], row_count: 3, result_set_bytes: 4, total_row_count: 3, total_result_set_bytes: 4, datapoint_count: 3 };
    const c = await answering({ body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows: [{ a: 1 }, [2], { a: 3 }], metadata } }) });
    await expect(c.getResults(ID)).rejects.toThrow(/result.rows.1: expected an object/);
  });

  it('names a metadata field of the wrong type by its path', async () => {
    const metadata = { column_names: ['a'], column_types: ['integer'], row_count: '1', result_set_bytes: 4, total_row_count: 1, total_result_set_bytes: 4, datapoint_count: 1 };
    const c = await answering({ body: JSON.stringify({ execution_id: ID, state: 'QUERY_STATE_COMPLETED', is_execution_finished: true, result: { rows: [{ a: 1 }], metadata } }) });
    await expect(c.getResults(ID)).rejects.toThrow(/result.metadata.row_count: Invalid input: expected number, received string/);
  });
});
