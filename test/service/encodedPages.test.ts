// Pre-encoded results: unfiltered pages are byte ranges of files the engine wrote once. Each page
// is compared with the page the per-request query builds for the same rows (asking for every
// column by name takes that path), byte for byte.
// Results are served the same whoever ran the SQL: these services do not wall teams apart
// (walledTeams: false saves each start the team instances; tenancy is tested in walls.http.test.ts).
import { existsSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { ManualClock } from '../../src/service/clock.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, runSql, status } from './api.ts';

const ODD_SQL = `SELECT * FROM (VALUES
  (1, 'plain', 'x'),
  (2, 'comma, "quote"' || chr(10) || 'newline', ''),
  (3, chr(1) || 'ctrl' || chr(9) || 'tab', NULL),
  (4, '😀 ünïcode ' || chr(13), 'a,b'),
  (5, NULL, '"')
) AS t(id, "naïve ""name""", "c,2") ORDER BY id`;

let svc: TestService;
const dirs: string[] = [];
beforeAll(async () => {
  svc = await startTestService({ walledTeams: false, limits: { page_rows: 1000 }, encodeMinBytes: 0 });
});
afterAll(async () => {
  await svc?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const quoted = (names: string[]): string => names.map((n) => `"${n.replaceAll('"', '""')}"`).join(',');

/** Every page of the result at this page size, encoded and per-request, as JSON and CSV. */
async function comparePages(s: TestService, id: string, limit: number): Promise<number> {
  const st = await status(s, id);
  const total: number = st.result_metadata.total_row_count;
  const columns = quoted(st.result_metadata.column_names);
  let pages = 0;
  for (let offset = 0; offset <= total + 1; offset += limit) {
    const q = { offset, limit };
    const enc = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read, query: q });
    const dyn = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read, query: { ...q, columns } });
    expect(enc.status).toBe(200);
    expect(Number(enc.headers['content-length'])).toBe(Buffer.byteLength(enc.text));
    // Identical but for next_uri, which repeats the request's own parameters.
    expect(JSON.stringify(enc.json.result)).toBe(JSON.stringify(dyn.json.result));
    expect(enc.json.next_offset).toBe(dyn.json.next_offset);
    expect(enc.text.replace(/,"next_uri":"[^"]*"/, '')).toBe(dyn.text.replace(/,"next_uri":"[^"]*"/, ''));
    const encCsv = await call(s, 'GET', `/v1/execution/${id}/results/csv`, { key: s.keys.demo.read, query: q });
    const dynCsv = await call(s, 'GET', `/v1/execution/${id}/results/csv`, { key: s.keys.demo.read, query: { ...q, columns } });
    expect(encCsv.status).toBe(200);
    expect(encCsv.text).toBe(dynCsv.text);
    expect(encCsv.headers['x-service-next-offset']).toBe(dynCsv.headers['x-service-next-offset']);
    pages++;
  }
  return pages;
}

describe('pre-encoded results', () => {
  it('serve every page of sample.all_types byte for byte as the page query builds it', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.all_types ORDER BY 1');
    for (const limit of [1, 2, 1000]) expect(await comparePages(svc, id, limit)).toBeGreaterThan(0);
    // Encoded by the first reads (JSON and CSV: comparePages reads both).
    await svc.whenEncoded(id);
    for (const format of ['json', 'csv']) expect(existsSync(join(svc.dataDir, 'engine', 'results', `${id}.enc`, format, 'info.json'))).toBe(true);
    for (const limit of [1, 1000]) await comparePages(svc, id, limit);
  });

  it('serve odd texts (quotes, commas, control characters, non-ASCII, odd column names) byte for byte', async () => {
    const id = await runSql(svc, ODD_SQL);
    await svc.whenEncoded(id);
    for (const limit of [1, 3]) await comparePages(svc, id, limit);
    const csv = await call(svc, 'GET', `/v1/execution/${id}/results/csv`, { key: svc.keys.demo.read });
    expect(csv.text.split('\n')[0]).toBe('column0,"naïve ""name""","c,2"'.replace('column0', 'id'));
  });

  it('serve empty and column-less results, and pages past the end', async () => {
    for (const sql of ['SELECT 1 AS x WHERE false', 'SELECT * FROM sample.events ORDER BY id LIMIT 7']) {
      const id = await runSql(svc, sql);
      await svc.whenEncoded(id);
      await comparePages(svc, id, 3);
      const past = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read, query: { offset: 1000 } });
      expect(past.status).toBe(200);
      expect(past.json.result.rows).toEqual([]);
      expect(past.json).not.toHaveProperty('next_offset');
    }
  });

  it('are deleted with their result when it expires', async () => {
    const clock = new ManualClock();
    const s = await startTestService({ walledTeams: false, clock, limits: { retention_days: 1 }, encodeMinBytes: 0 });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id LIMIT 20');
      expect((await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read })).status).toBe(200);
      await s.whenEncoded(id);
      const enc = join(s.dataDir, 'engine', 'results', `${id}.enc`);
      expect(existsSync(enc)).toBe(true);
      clock.advance(2 * 86_400_000);
      expect((await status(s, id)).state).toBe('QUERY_STATE_EXPIRED');
      for (let i = 0; i < 100 && existsSync(enc); i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(enc)).toBe(false);
    } finally {
      await s.close();
    }
  });

  it('after a crash while encoding: the half-written encoding is removed, never served, and the result is encoded again', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-encoded-restart-'));
    dirs.push(dataDir);
    const first = await startTestService({ walledTeams: false, dataDir, sampleRows: 50, encodeMinBytes: 0 });
    const id = await runSql(first, 'SELECT * FROM sample.events ORDER BY id');
    const page = await call(first, 'GET', `/v1/execution/${id}/results`, { key: first.keys.demo.read, query: { limit: 7, offset: 3 } });
    await first.whenEncoded(id);
    await first.close();

    // What a crash mid-encoding leaves: a format written without its info.json (on a first read),
    // an encoding under its temporary name (at completion), and an encoding whose result was
    // being dropped.
    const results = join(dataDir, 'engine', 'results');
    await rm(join(results, `${id}.enc`, 'json', 'info.json'));
    await writeFile(join(results, `${id}.enc`, 'json', 'rows.json'), '{"id":"torn');
    await mkdir(join(results, `${id}.enc.tmp`));
    await writeFile(join(results, `${id}.enc.tmp`, 'rows.json'), '{"id":"torn');
    await mkdir(join(results, 'gone.enc'));
    await writeFile(join(results, 'gone.enc', 'info.json'), '{}');

    const second = await startTestService({ walledTeams: false, dataDir, sampleRows: 50, encodeMinBytes: 0 });
    try {
      const names = await readdir(results);
      expect(names).not.toContain(`${id}.enc.tmp`);
      expect(names).not.toContain('gone.enc');
      expect(existsSync(join(results, `${id}.enc`, 'json'))).toBe(false);
      const again = await call(second, 'GET', `/v1/execution/${id}/results`, { key: second.keys.demo.read, query: { limit: 7, offset: 3 } });
      const port = (t: string): string => t.replace(/127\.0\.0\.1:\d+/, 'HOST');
      expect(port(again.text)).toBe(port(page.text));
      await second.whenEncoded(id);
      expect(existsSync(join(results, `${id}.enc`, 'json', 'info.json'))).toBe(true);
      const encoded = await call(second, 'GET', `/v1/execution/${id}/results`, { key: second.keys.demo.read, query: { limit: 7, offset: 3 } });
      expect(port(encoded.text)).toBe(port(page.text));
    } finally {
      await second.close();
    }
  });

  it('after a crash while its Arrow chunks were written: they are removed, the JSON encoding stays, Arrow pages are encoded again', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-encoded-arrow-restart-'));
    dirs.push(dataDir);
    const first = await startTestService({ walledTeams: false, dataDir, sampleRows: 50, encodeMinBytes: 0 });
    const id = await runSql(first, 'SELECT * FROM sample.events ORDER BY id');
    expect((await call(first, 'GET', `/v1/execution/${id}/results`, { key: first.keys.demo.read })).status).toBe(200);
    const arrowPage = async (svc: TestService): Promise<Buffer> => {
      const res = await request(`${svc.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': svc.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
      expect(res.statusCode).toBe(200);
      return Buffer.from(await res.body.arrayBuffer());
    };
    const before = await arrowPage(first);
    await first.whenEncoded(id);
    await first.close();

    // The JSON encoding was written, the Arrow chunks were being written.
    const enc = join(dataDir, 'engine', 'results', `${id}.enc`);
    await rm(join(enc, 'arrow', 'info.json'));
    await writeFile(join(enc, 'arrow', 'rows.arrow'), 'torn');

    const second = await startTestService({ walledTeams: false, dataDir, sampleRows: 50, encodeMinBytes: 0 });
    try {
      expect(existsSync(join(enc, 'arrow'))).toBe(false);
      expect(existsSync(join(enc, 'json', 'info.json'))).toBe(true);
      expect((await arrowPage(second)).equals(before)).toBe(true);
      await second.whenEncoded(id);
      expect(existsSync(join(enc, 'arrow', 'info.json'))).toBe(true);
      expect((await arrowPage(second)).equals(before)).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('a client that disconnects mid-body: the service closes cleanly and keeps serving', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
    await svc.whenEncoded(id);
    const full = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
    expect(full.text.length).toBeGreaterThan(100_000);
    for (const [path, accept] of [['results', 'application/json'], ['results/csv', 'text/csv'], ['results', 'application/vnd.apache.arrow.stream']] as const) {
      for (let i = 0; i < 5; i++) {
        const got = await new Promise<number>((ok, fail) => {
          const req = get(`${svc.url}/v1/execution/${id}/${path}`, { headers: { 'x-service-api-key': svc.keys.demo.read, accept } }, (res) => {
            res.once('data', (chunk: Buffer) => {
              req.destroy();
              ok(chunk.length);
            });
          });
          req.on('error', (err) => (req.destroyed ? undefined : fail(err)));
        });
        expect(got).toBeGreaterThan(0);
      }
    }
    const again = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: svc.keys.demo.read });
    expect(again.status).toBe(200);
    expect(again.text).toBe(full.text);
  });

  it('pages of many chunks served at once, to readers fast and slow, are each the page served alone', async () => {
    // The service reads files into buffers it reuses once the socket has written them: responses
    // in flight together must not share one. (A buffer handed back before its write completes
    // cannot be provoked here: the loopback's kernel buffers take a whole page at once.)
    const big = await startTestService({ walledTeams: false, sampleRows: 64_000, encodeMinBytes: 0 });
    const id = await runSql(big, 'SELECT * FROM sample.events ORDER BY id');
    await big.whenEncoded(id);
    const pages = [0, 32_000];
    for (const accept of ['application/json', ARROW_STREAM_MEDIA_TYPE]) {
      const alone = new Map<number, Buffer>();
      for (const offset of pages) {
        const res = await request(`${big.url}/v1/execution/${id}/results?offset=${offset}&limit=32000`, { headers: { 'x-service-api-key': big.keys.demo.read, accept } });
        alone.set(offset, Buffer.from(await res.body.arrayBuffer()));
      }
      expect(alone.get(0)!.length).toBeGreaterThan(3 * 256 * 1024);
      const together = await Promise.all(
        pages.flatMap((offset) =>
          [0, 10, 10].map(async (pauseMs) => {
            const res = await request(`${big.url}/v1/execution/${id}/results?offset=${offset}&limit=32000`, { headers: { 'x-service-api-key': big.keys.demo.read, accept } });
            const chunks: Buffer[] = [];
            for await (const chunk of res.body) {
              chunks.push(chunk as Buffer);
              if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
            }
            return [offset, Buffer.concat(chunks)] as const;
          }),
        ),
      );
      for (const [offset, bytes] of together) expect(bytes.equals(alone.get(offset)!), `${accept} at ${offset}`).toBe(true);
    }
    await big.close();
  });

  it('a result that expires while a page is streamed: the page is completed, later requests see EXPIRED', async () => {
    const clock = new ManualClock();
    const s = await startTestService({ walledTeams: false, clock, limits: { retention_days: 1 }, encodeMinBytes: 0 });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      await s.whenEncoded(id);
      const expected = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      const res = await new Promise<IncomingMessage>((ok, fail) => {
        get(`${s.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': s.keys.demo.read } }, ok).on('error', fail);
      });
      res.pause();
      clock.advance(2 * 86_400_000);
      expect((await status(s, id)).state).toBe('QUERY_STATE_EXPIRED');
      const enc = join(s.dataDir, 'engine', 'results', `${id}.enc`);
      for (let i = 0; i < 100 && existsSync(enc); i++) await new Promise((r) => setTimeout(r, 20));
      expect(existsSync(enc)).toBe(false);
      const chunks: Buffer[] = [];
      for await (const chunk of res) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString('utf8')).toBe(expected.text);
      const after = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(after.json.state).toBe('QUERY_STATE_EXPIRED');
    } finally {
      await s.close();
    }
  });
});
