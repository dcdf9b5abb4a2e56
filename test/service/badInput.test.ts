import { request } from 'undici';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql } from './api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ limits: { max_body_bytes: 4096 } });
});
afterAll(() => svc?.close());

const post = (path: string, rawBody: string, headers: Record<string, string> = {}) => call(svc, 'POST', path, { key: svc.keys.demo.write, rawBody, headers });

describe('bad input gets a clear 4xx and the service keeps running', () => {
  it('malformed JSON, wrong types, unknown fields, empty bodies', async () => {
    const cases: [string, RegExp][] = [
      ['{"sql": "SELECT 1"', /not valid JSON/],
      ['[1,2]', /must be a JSON object/],
      ['"SELECT 1"', /must be a JSON object/],
      ['{"sql": 42}', /^Bad Request: sql: /],
      ['{"sql": ""}', /^Bad Request: sql: /],
      ['{"sql": "SELECT 1", "tier": "large"}', /unknown field "tier"/],
      ['{"sql": "SELECT 1", "performance": "xl"}', /performance/],
      ['', /a JSON object body is required/],
    ];
    for (const [body, msg] of cases) {
      const r = await post('/v1/sql/execute', body);
      expect(r.status, body).toBe(400);
      expect(r.json.error, body).toMatch(msg);
    }
  });

  it('parses JSON whatever the Content-Type', async () => {
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/json']) {
      const r = await post('/v1/sql/execute', '{"sql":"SELECT 1"}', { 'content-type': ct });
      expect(r.status, ct).toBe(200);
    }
  });

  it('bad and unknown execution ids', async () => {
    for (const bad of ['abc', '01ARZ3NDEKTSV4RRFFQ69G5FAVX', '01arz3ndektsv4rrffq69g5fav', '01ARZ3NDEKTSV4RRFFQ69G5FAI']) {
      const r = await call(svc, 'GET', `/v1/execution/${bad}/status`, { key: svc.keys.demo.read });
      expect(r.status, bad).toBe(400);
      expect(r.json).toEqual({ error: `The requested execution ID (ID: ${bad}) is invalid.` });
    }
    const unknown = await call(svc, 'GET', '/v1/execution/01ARZ3NDEKTSV4RRFFQ69G5FAV/status', { key: svc.keys.demo.read });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ error: 'Object not found' });
  });

  it('unknown routes are 404 and wrong methods 405 with Allow', async () => {
    const r = await call(svc, 'GET', '/v1/nowhere', { key: svc.keys.demo.read });
    expect(r.status).toBe(404);
    expect(r.json.error).toMatch(/no operation at GET \/api\/v1\/nowhere/);
    const outside = await call({ url: svc.origin }, 'GET', '/v1/sql/execute', { key: svc.keys.demo.read });
    expect(outside.status).toBe(404);
    const m = await call(svc, 'GET', '/v1/sql/execute', { key: svc.keys.demo.read });
    expect(m.status).toBe(405);
    expect(m.headers.allow).toBe('POST');
    expect(m.json.error).toMatch(/accepts POST/);
    const q = await call(svc, 'DELETE', '/v1/query/1', { key: svc.keys.demo.admin });
    expect(q.status).toBe(405);
    expect(q.headers.allow).toBe('GET, PATCH');
  });

  it('refuses oversized bodies with 413 and the limit', async () => {
    const big = JSON.stringify({ sql: `SELECT '${'x'.repeat(10_000)}'` });
    const r = await post('/v1/sql/execute', big);
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ error: 'Request body too large: the limit is 4096 bytes' });
    // Chunked (no Content-Length): refused while reading; the client may see the 413 or a closed socket.
    const chunked = await request(`${svc.url}/v1/sql/execute`, {
      method: 'POST',
      headers: { 'x-service-api-key': svc.keys.demo.write },
      body: Readable.from((function* () {
        for (let i = 0; i < 10; i++) yield Buffer.alloc(1024, 'x');
      })()),
    }).then(async (res) => ({ status: res.statusCode, text: await res.body.text() }), (err: unknown) => err);
    if (!(chunked instanceof Error)) expect(chunked).toMatchObject({ status: 413 });
    expect((await post('/v1/sql/execute', '{"sql":"SELECT 1"}')).status).toBe(200);
  });

  it('survives garbage on the socket, answering it with a JSON 400', async () => {
    const answer = await new Promise<string>((resolve) => {
      const port = Number(new URL(svc.origin).port);
      let text = '';
      const sock = connect(port, '127.0.0.1', () => sock.end('NOT HTTP AT ALL\r\n\r\n'));
      sock.on('data', (d) => (text += String(d)));
      sock.on('close', () => resolve(text));
      sock.on('error', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1.1 400 Bad Request\r\n[^]*\r\n\r\n\{"error":"Bad Request: the request is not valid HTTP\/1.1"\}$/);
    const id = await runSql(svc, 'SELECT 1 AS still_alive');
    expect(id).toMatch(/^01/);
  });

  it('bad percent-encoding in a path segment is 400', async () => {
    const r = await call({ url: svc.url }, 'GET', '/v1/query/%E0%A4%A/results', { key: svc.keys.demo.read });
    expect(r.status).toBe(400);
  });
});
