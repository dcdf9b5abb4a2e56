// Compressed answers: the service negotiates Accept-Encoding on every route, and what it sends
// decodes (with zlib, independently of the client) to the very bytes of the uncompressed answer.
import { brotliDecompressSync, zstdDecompressSync } from 'node:zlib';
import { gunzipOneMember } from '../helpers/gunzipOneMember.ts';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { MIN_COMPRESSED_BYTES, negotiateCoding } from '../../src/service/http/contentCoding.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

describe('negotiateCoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['zstd, br, gzip', 'zstd'],
    ['gzip, br', 'br'],
    ['GZIP;Q=0.5, br;q=0.4', 'gzip'],
    ['gzip;q=0.5, identity', 'identity'],
    ['gzip;q=1, identity;q=1', 'gzip'],
    ['*', 'zstd'],
    ['*;q=0.5, zstd;q=0', 'br'],
    ['gzip;q=0', 'identity'],
    ['deflate, compress', 'identity'],
    ['identity;q=0', undefined],
    ['*;q=0', undefined],
    ['*;q=0, identity', 'identity'],
    ['*;q=0, gzip', 'gzip'],
    ['gzip;q=2, br;q=abc, zstd;q=0.1', 'zstd'],
    ['gzip;level=9', 'gzip'],
  ] as const)('%j -> %s', (header, expected) => {
    expect(negotiateCoding(header)).toBe(expected);
  });
});

let svc: TestService;
let id: string;
let queryId: number;
beforeAll(async () => {
  svc = await startTestService({ sampleRows: 3000 });
  id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
  const q = await call(svc, 'POST', '/v1/query', { key: svc.keys.demo.write, body: { name: 'events', query_sql: 'SELECT * FROM sample.events ORDER BY id LIMIT 2000' } });
  queryId = q.json.query_id as number;
  const run = await call(svc, 'POST', `/v1/query/${queryId}/execute`, { key: svc.keys.demo.write, body: {} });
  for (;;) {
    const s = await call(svc, 'GET', `/v1/execution/${run.json.execution_id}/status`, { key: svc.keys.demo.read });
    if (s.json.is_execution_finished) break;
    await new Promise((r) => setTimeout(r, 20));
  }
});
afterEach(() => svc.setFaults({ reset_rate: 0 }));
afterAll(() => svc?.close());

const DECODE = { zstd: zstdDecompressSync, br: brotliDecompressSync, gzip: gunzipOneMember } as const;

/** One GET, its body as received (not decoded). */
async function raw(path: string, headers: Record<string, string>) {
  const res = await request(`${svc.url}${path}`, { headers: { 'x-service-api-key': svc.keys.demo.read, ...headers } });
  const chunks: Buffer[] = [];
  for await (const c of res.body) chunks.push(c as Buffer);
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}

describe('compressed answers', () => {
  const routes = () =>
    [
      ['JSON page', `/v1/execution/${id}/results?limit=1000`, {}],
      ['JSON page, filtered (built per request)', `/v1/execution/${id}/results?limit=1000&filters=${encodeURIComponent('id >= 10')}`, {}],
      ['CSV page', `/v1/execution/${id}/results/csv?limit=1000`, {}],
      ['Arrow page', `/v1/execution/${id}/results?limit=1000`, { accept: ARROW_STREAM_MEDIA_TYPE }],
      ['latest result, JSON', `/v1/query/${queryId}/results?limit=1000`, {}],
      ['latest result, CSV', `/v1/query/${queryId}/results/csv?limit=1000`, {}],
    ] as const;

  it.each(['zstd', 'br', 'gzip'] as const)('every results route answers %s that decodes to the uncompressed answer, byte for byte', async (coding) => {
    for (const [label, path, headers] of routes()) {
      const plain = await raw(path, headers);
      expect(plain.status, label).toBe(200);
      expect(plain.headers['content-encoding'], label).toBeUndefined();
      expect(plain.body.length, label).toBeGreaterThan(MIN_COMPRESSED_BYTES);
      const packed = await raw(path, { ...headers, 'accept-encoding': `${coding}, identity;q=0.5` });
      expect(packed.status, label).toBe(200);
      expect(packed.headers['content-encoding'], label).toBe(coding);
      expect(packed.headers['content-length'], label).toBeUndefined();
      expect(packed.headers['vary'], label).toBe('accept-encoding');
      expect(packed.headers['content-type'], label).toBe(plain.headers['content-type']);
      // Paging headers (CSV, Arrow) are the same either way.
      expect(packed.headers['x-service-next-offset'], label).toBe(plain.headers['x-service-next-offset']);
      expect(packed.body.length, label).toBeLessThan(plain.body.length / 2);
      expect(Buffer.compare(DECODE[coding](packed.body), plain.body), label).toBe(0);
    }
  });

  it('small answers go uncompressed with their length, whatever the client accepts', async () => {
    const r = await raw(`/v1/execution/${id}/status`, { 'accept-encoding': 'zstd, br, gzip' });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    expect(r.body.length).toBeLessThan(MIN_COMPRESSED_BYTES);
    expect(JSON.parse(r.body.toString()).execution_id).toBe(id);
  });

  it('codings it does not write, or none at all, get the answer uncompressed', async () => {
    for (const accept of ['deflate', 'compress, snappy', 'gzip;q=0']) {
      const r = await raw(`/v1/execution/${id}/results?limit=1000`, { 'accept-encoding': accept });
      expect(r.headers['content-encoding'], accept).toBeUndefined();
      expect(JSON.parse(r.body.toString()).result.rows, accept).toHaveLength(1000);
    }
  });

  it('a client that refuses identity and every coding the service writes gets 406 naming what it writes', async () => {
    const r = await raw(`/v1/execution/${id}/results?limit=1000`, { 'accept-encoding': 'snappy, identity;q=0' });
    expect(r.status).toBe(406);
    const body = JSON.parse(r.body.toString());
    expect(body.supported).toEqual(['zstd', 'br', 'gzip', 'identity']);
    expect(body.error).toContain('snappy, identity;q=0');
    // An error answer says what went wrong instead.
    const denied = await raw(`/v1/execution/${id}/results?limit=1000`, { 'accept-encoding': 'snappy, identity;q=0', 'x-service-api-key': 'wrong' });
    expect(denied.status).toBe(401);
  });

  it('a reset fault cuts the compressed stream short: what arrived does not decode whole', async () => {
    svc.setFaults({ reset_rate: 1 });
    const res = await request(`${svc.url}/v1/execution/${id}/results?limit=1000`, { headers: { 'x-service-api-key': svc.keys.demo.read, 'accept-encoding': 'zstd' } });
    expect(res.headers['content-encoding']).toBe('zstd');
    const chunks: Buffer[] = [];
    const failure = await (async () => {
      for await (const c of res.body) chunks.push(c as Buffer);
    })().then(() => undefined, (e: unknown) => e);
    expect(failure).toBeInstanceOf(Error);
    expect(() => zstdDecompressSync(Buffer.concat(chunks))).toThrow();
  });

  it('the official client, which asks for compression through fetch, reads compressed pages', async () => {
    const res = await fetch(`${svc.url}/v1/execution/${id}/results?limit=1000`, { headers: { 'x-service-api-key': svc.keys.demo.read } });
    expect(res.headers.get('content-encoding')).not.toBeNull();
    const page = (await res.json()) as { result: { rows: unknown[] } };
    expect(page.result.rows).toHaveLength(1000);
  });
});
