// The client's side of compressed answers: what it asks for, that it reads compressed pages of the
// real service on every wire (and in part threads) as it reads uncompressed ones, counting both
// sizes, and that a body it cannot decode is a clear error, retried as a connection lost mid-body.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ContentEncodingError, ServiceClient, SubmissionOutcomeUnknownError } from '../../src/client/index.ts';
import { resolveConfig } from '../../src/client/config.ts';
import { resolveOutput, writeExport } from '../../src/export/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { startMisbehavingServer } from './misbehavingServer.ts';

const ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const STATUS = JSON.stringify({ execution_id: ID, query_id: 0, state: 'QUERY_STATE_EXECUTING', is_execution_finished: false, submitted_at: '2026-01-01T00:00:00.000Z' });
const ROWS = 3_000;

let svc: TestService;
let executionId: string;
let plain: ServiceClient;
let packed: ServiceClient;
beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 1_000 } });
  plain = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  packed = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {}, compression: 'on' });
  const execution = await plain.execute({ sql: `SELECT i AS id, 'name ' || i AS name, i * 0.5 AS half, TIMESTAMP '2024-01-01' + to_seconds(i) AS at FROM range(${ROWS}) t(i) ORDER BY i` });
  await execution.wait();
  executionId = execution.id;
});
afterAll(async () => {
  await plain?.close();
  await packed?.close();
  await svc?.close();
});

describe('what the client asks for', () => {
  it('compression on sends Accept-Encoding: zstd, br, gzip; auto sends it except to a loopback host; off never', () => {
    const base = { apiKey: 'k', env: {} };
    expect(resolveConfig({ ...base, baseUrl: 'http://127.0.0.1:1/api', compression: 'on' }).acceptEncoding).toBe('zstd, br, gzip');
    for (const host of ['127.0.0.1:8080', 'localhost', '[::1]:80', '127.1.2.3']) expect(resolveConfig({ ...base, baseUrl: `http://${host}/api` }).acceptEncoding, host).toBeUndefined();
    expect(resolveConfig({ ...base, baseUrl: 'https://api.example.com/api' }).acceptEncoding).toBe('zstd, br, gzip');
    expect(resolveConfig({ ...base, baseUrl: 'http://10.0.0.5:8080/api' }).acceptEncoding).toBe('zstd, br, gzip');
    expect(resolveConfig({ ...base, baseUrl: 'https://api.example.com/api', compression: 'off' }).acceptEncoding).toBeUndefined();
    expect(() => resolveConfig({ ...base, baseUrl: 'http://x/api', compression: 'gzip' as never })).toThrow(/compression must be 'auto', 'on' or 'off', got "gzip"/);
  });

  it('on every request, and a service that ignores it answers uncompressed, read as ever', async () => {
    const server = await startMisbehavingServer(() => ({ body: STATUS }));
    const client = new ServiceClient({ baseUrl: server.baseUrl, apiKey: 'k', env: {}, compression: 'on' });
    try {
      expect((await client.getStatus(ID)).state).toBe('QUERY_STATE_EXECUTING');
      await client.executeSql('SELECT 1').catch(() => undefined);
      expect(server.received.map((r) => r.headers['accept-encoding'])).toEqual(['zstd, br, gzip', 'zstd, br, gzip']);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('compressed pages of the real service', () => {
  it('JSON, CSV and Arrow pages read the same as uncompressed, the body counted as received and decoded', async () => {
    const sizes: [number, number][] = [];
    const a = await plain.getResults(executionId, { limit: 1_000 });
    const b = await packed.getResults(executionId, { limit: 1_000, onBodyBytes: (wire, decoded) => sizes.push([wire, decoded]) });
    expect(b).toEqual(a);
    const csvA = await plain.getResultsCsv(executionId, { limit: 1_000 });
    const csvB = await packed.getResultsCsv(executionId, { limit: 1_000, onBodyBytes: (wire, decoded) => sizes.push([wire, decoded]) });
    expect(csvB).toEqual(csvA);
    const arrowA = await plain.getResultsWire(executionId, { limit: 1_000, accept: 'arrow' });
    const arrowB = await packed.getResultsWire(executionId, { limit: 1_000, accept: 'arrow' });
    expect(arrowB.format).toBe('arrow');
    if (arrowA.format !== 'arrow' || arrowB.format !== 'arrow') throw new Error('Arrow expected');
    expect(Buffer.compare(arrowB.ipc, arrowA.ipc)).toBe(0);
    sizes.push([arrowB.bytes, arrowB.decodedBytes]);
    expect(arrowA.bytes).toBe(arrowA.decodedBytes);
    expect(arrowB.decodedBytes).toBe(arrowA.bytes);
    for (const [wire, decoded] of sizes) expect(wire).toBeLessThan(decoded / 2);
  });

  it.each(['json', 'arrow'] as const)('stream() over %s: the same rows; progress counts wire bytes below the decoded ones', async (wire) => {
    const read = async (client: ServiceClient) => {
      const s = stream(client, { executionId }, { wire });
      const rows: unknown[] = [];
      for await (const row of s) rows.push(row);
      return { rows, progress: s.progress! };
    };
    const a = await read(plain);
    const b = await read(packed);
    expect(b.rows).toEqual(a.rows);
    expect(a.progress.wireBytes).toBe(a.progress.httpBytes);
    expect(b.progress.httpBytes).toBe(a.progress.httpBytes);
    expect(b.progress.wireBytes).toBeLessThan(b.progress.httpBytes / 2);
  });

  it('range reads (the native path reads its parts so) ask for compressed pages too, kept in zstd for DuckDB, and their pages count in the stream progress', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'sluice-compressed-parts-'));
    try {
      const s = stream(packed, { executionId }, { wire: 'json' });
      const info = await s.info();
      const reader = (await s.rangeReader())!;
      let rangeRows = 0;
      const parts = { ...reader, page: (rows: number, bytes: number, http: number, wire: number) => ((rangeRows += rows), reader.page(rows, bytes, http, wire)) };
      const summary = await writeExport(
        { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts },
        resolveOutput({ format: 'parquet', max_rows_per_file: 1_000, path: join(parent, 'out') }, builtins),
        { native: 'always' },
      );
      // Every row came through the range reads (a page that straddles two parts is read by both).
      expect(rangeRows).toBeGreaterThanOrEqual(ROWS);
      expect(summary.rows).toBe(ROWS);
      const p = s.progress!;
      expect(p.rows).toBeGreaterThanOrEqual(ROWS);
      // The CSV pages came in zstd and went to DuckDB so: counted as received, not decoded.
      expect(p.httpBytes).toBe(p.wireBytes);
      let text = 0;
      for (let offset = 0; offset < ROWS; offset += 1_000) text += (await plain.getResultsCsv(executionId, { offset, limit: 1_000 })).body.length;
      expect(p.wireBytes).toBeLessThan(text / 2);
      const back = await duckRowsJS(`SELECT count(*)::INTEGER AS n, sum(id)::BIGINT AS s FROM '${join(parent, 'out')}/*.parquet'`);
      expect(back).toEqual([{ n: ROWS, s: BigInt((ROWS * (ROWS - 1)) / 2) }]);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('bodies the client cannot decode', () => {
  /** A server whose first answer is `first`, then the status it should have been. */
  const firstBad = (first: { headers: Record<string, string>; body: string | Buffer }) => startMisbehavingServer((_req, n) => (n === 1 ? first : { body: STATUS }));

  it('an unknown coding is ContentEncodingError naming the request and the coding, retried like a reset', async () => {
    const server = await firstBad({ headers: { 'content-encoding': 'snappy' }, body: 'whatever' });
    const errors: unknown[] = [];
    const client = new ServiceClient({ baseUrl: server.baseUrl, apiKey: 'k', env: {}, compression: 'on', retry: { baseDelayMs: 1 }, onRetry: (e) => errors.push(e.error) });
    try {
      expect((await client.getStatus(ID)).state).toBe('QUERY_STATE_EXECUTING');
      expect(server.received).toHaveLength(2);
      expect(errors).toHaveLength(1);
      const e = errors[0] as ContentEncodingError;
      expect(e).toBeInstanceOf(ContentEncodingError);
      expect(e.code).toBe('CONTENT_ENCODING');
      expect(e.retryable).toBe(true);
      expect(e.phase).toBe('response-body');
      expect(e.message).toMatch(
        new RegExp(`^getStatus GET http://127\\.0\\.0\\.1:\\d+/api/v1/execution/${ID}/status \\(execution ${ID}\\): the answer's body is in the content coding "snappy", which the client cannot decode`),
      );
    } finally {
      await client.close();
      await server.close();
    }
  });

  it.each([
    ['gzip', Buffer.from('not gzip at all')],
    ['zstd', Buffer.from('not zstd at all')],
    ['br', Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00])],
    ['gzip', gzipSync(STATUS).subarray(0, 20)],
  ])('a body that is not valid %s is ContentEncodingError, retried; then the good answer is read', async (coding, body) => {
    const server = await firstBad({ headers: { 'content-encoding': coding }, body });
    const errors: unknown[] = [];
    const client = new ServiceClient({ baseUrl: server.baseUrl, apiKey: 'k', env: {}, compression: 'on', retry: { baseDelayMs: 1 }, onRetry: (e) => errors.push(e.error) });
    try {
      expect((await client.getStatus(ID)).state).toBe('QUERY_STATE_EXECUTING');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(ContentEncodingError);
      expect((errors[0] as Error).message).toContain(`the answer's body is not valid ${coding}`);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('a submission whose answer does not decode is not resent: its outcome is unknown', async () => {
    const server = await startMisbehavingServer(() => ({ headers: { 'content-encoding': 'gzip' }, body: 'garbage' }));
    const client = new ServiceClient({ baseUrl: server.baseUrl, apiKey: 'k', env: {}, compression: 'on', retry: { baseDelayMs: 1 } });
    try {
      const err = await client.executeSql('SELECT 1').then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(SubmissionOutcomeUnknownError);
      expect((err as Error).message).toMatch(/connection lost \(the answer's body is not valid gzip/);
      expect(server.received).toHaveLength(1);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
