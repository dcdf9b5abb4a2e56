// The first read of a fresh result is served from its encodings, like every later read: they are
// written as the execution's last step and published with the result. A stop while they are
// written (cancel, or the process killed) leaves nothing half-published.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, runSql, status, waitFor } from './api.ts';

const ROWS = 20_000;
const PAGE = 3_000;
let svc: TestService;
const dirs: string[] = [];
beforeAll(async () => {
  svc = await startTestService({ sampleRows: ROWS, limits: { page_rows: PAGE }, encodeMinBytes: 0 });
});
afterAll(async () => {
  await svc?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

type Format = 'json' | 'csv' | 'arrow';

async function page(s: TestService, id: string, format: Format, offset: number, extra = ''): Promise<Buffer> {
  const path = format === 'csv' ? 'results/csv' : 'results';
  const accept = format === 'arrow' ? ARROW_STREAM_MEDIA_TYPE : format === 'csv' ? 'text/csv' : 'application/json';
  const res = await request(`${s.url}/v1/execution/${id}/${path}?offset=${offset}&limit=${PAGE}${extra}`, {
    headers: { 'x-service-api-key': s.keys.demo.read, accept },
  });
  const body = Buffer.from(await res.body.arrayBuffer());
  expect(res.statusCode, body.toString().slice(0, 300)).toBe(200);
  return body;
}

/** Every page of the result in one format, in order (JSON without its next_uri, which names the host). */
async function readAll(s: TestService, id: string, format: Format, extra = ''): Promise<string[]> {
  const pages: string[] = [];
  for (let offset = 0; offset < ROWS; offset += PAGE) {
    const body = await page(s, id, format, offset, extra);
    pages.push(format === 'json' ? body.toString('utf8').replace(/,"next_uri":"[^"]*"/, '') : body.toString('base64'));
  }
  return pages;
}

function resultsDir(s: TestService): string {
  return join(s.dataDir, 'engine', 'results');
}

describe('the first read of a fresh result', () => {
  it('is served from the encodings, published before the status says COMPLETED, and equals the warm read and the page query byte for byte', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
    // Nothing is left to write once the execution is COMPLETED: the encodings are in place.
    const enc = join(resultsDir(svc), `${id}.enc`);
    expect(existsSync(join(enc, 'info.json'))).toBe(true);
    expect(existsSync(join(enc, 'arrow', 'arrow.index'))).toBe(true);
    expect((await readdir(resultsDir(svc))).filter((n) => n.includes('.tmp') || n.includes('rendered'))).toEqual([]);
    expect(existsSync(join(enc, 'rows.rendered'))).toBe(false);
    const columns = `&columns=${encodeURIComponent((await status(svc, id)).result_metadata.column_names.map((n: string) => `"${n}"`).join(','))}`;
    for (const format of ['json', 'csv', 'arrow'] as const) {
      const first = await readAll(svc, id, format);
      const warm = await readAll(svc, id, format);
      expect(warm, format).toEqual(first);
      // The page query (every column asked for by name) builds the same bytes.
      expect(await readAll(svc, id, format, columns), format).toEqual(first);
    }
  });

  it('serves readers that start at once, in every format, each the same bytes', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id DESC');
    const readers = (['json', 'csv', 'arrow', 'json', 'arrow', 'csv'] as const).map(async (format) => ({ format, pages: await readAll(svc, id, format) }));
    const got = await Promise.all(readers);
    for (const format of ['json', 'csv', 'arrow'] as const) {
      const same = got.filter((g) => g.format === format);
      expect(same).toHaveLength(2);
      expect(same[1]!.pages).toEqual(same[0]!.pages);
    }
    expect(JSON.parse(got[0]!.pages[0]!).result.rows[0].id).toBe(ROWS - 1);
  });

  it('of a result of several DuckDB row groups (122,880 rows) and many result chunks equals the page query across their boundaries', async () => {
    const s = await startTestService({ sampleRows: 250_000, encodeMinBytes: 0 });
    try {
      // 250,000 rows: room for a loaded machine (the default wait is 20 s).
      const id = await executeSql(s, 'SELECT * FROM sample.events ORDER BY id');
      expect((await waitFor(s, id, undefined, s.keys.demo.read, 120_000)).state).toBe('QUERY_STATE_COMPLETED');
      expect(existsSync(join(resultsDir(s), `${id}.enc`, 'info.json'))).toBe(true);
      const columns = (await status(s, id)).result_metadata.column_names.join(',');
      for (const [offset, limit] of [[122_870, 20], [245_750, 20], [249_990, 100], [0, 3]]) {
        for (const path of ['results', 'results/csv']) {
          const q = { offset: offset!, limit: limit! };
          const enc = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read, query: q });
          const dyn = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read, query: { ...q, columns } });
          expect(enc.status).toBe(200);
          expect(enc.text.replace(/,"next_uri":"[^"]*"/, ''), `${path} at ${offset}`).toBe(dyn.text.replace(/,"next_uri":"[^"]*"/, ''));
        }
      }
    } finally {
      await s.close();
    }
  }, 180_000);

  it('of rows larger than the encoder\'s buffers (4 MB) equals the page query', async () => {
    // Rendering a row copies its text a few times (each `||`): room for that in the engine.
    const s = await startTestService({ sampleRows: 10, encodeMinBytes: 0, engine: { memory_limit: '1GiB' } });
    try {
      // Texts of 1.3 and 2.8 MB between small rows: the second one's rendered JSON and CSV together
      // pass the split's 4 MB buffers, and are written past them.
      const id = await runSql(s, "SELECT i, CASE WHEN i IN (2, 5) THEN repeat('x', (i * 1024 + 512) * 512) || '\"' ELSE 'small' END AS t FROM range(8) r(i) ORDER BY i");
      expect(existsSync(join(resultsDir(s), `${id}.enc`, 'info.json'))).toBe(true);
      for (const path of ['results', 'results/csv']) {
        const enc = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read });
        const dyn = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read, query: { columns: 'i,t' } });
        expect(enc.status).toBe(200);
        expect(enc.text.length).toBeGreaterThan(4 * 1024 * 1024);
        expect(enc.text.replace(/,"next_uri":"[^"]*"/, '')).toBe(dyn.text.replace(/,"next_uri":"[^"]*"/, ''));
      }
    } finally {
      await s.close();
    }
  });
});

describe('engine.encode_results: when_idle', () => {
  it('completes without the encodings, serves the first read by the page query, and encodes once the service is idle', async () => {
    const s = await startTestService({ sampleRows: 5_000, encodeMinBytes: 0, engine: { encode_results: 'when_idle' } });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      const enc = join(resultsDir(s), `${id}.enc`);
      expect(existsSync(enc)).toBe(false);
      const first = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(first.status).toBe(200);
      await s.whenEncoded(id);
      expect(existsSync(join(enc, 'info.json'))).toBe(true);
      const again = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(again.text).toBe(first.text);
    } finally {
      await s.close();
    }
  });
});

describe('a stop while the encodings are written', () => {
  it('a cancel fails the execution as CANCELED and leaves no result, no encoding, no temporary file', async () => {
    const s = await startTestService({ sampleRows: 300_000, encodeMinBytes: 0 });
    try {
      const id = await executeSql(s, 'SELECT * FROM sample.events ORDER BY id');
      const tmp = join(resultsDir(s), `${id}.enc.tmp`);
      // The encoding is the execution's last step: cancel once its directory appears.
      while (!existsSync(tmp)) {
        expect((await status(s, id)).is_execution_finished, 'the execution finished before its encoding was seen').toBe(false);
        await new Promise((r) => setTimeout(r, 1));
      }
      const cancel = await call(s, 'POST', `/v1/execution/${id}/cancel`, { key: s.keys.demo.write });
      expect(cancel.status).toBe(200);
      const done = await waitFor(s, id);
      expect(done.state).toBe('QUERY_STATE_CANCELLED');
      // The status says CANCELED at once; the engine removes what it wrote as its execution unwinds.
      const left = async (): Promise<string[]> => (await readdir(resultsDir(s))).filter((n) => n.startsWith(id));
      for (let i = 0; i < 600 && (await left()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await left()).toEqual([]);
      // The service goes on: the same query completes, encoded.
      const again = await runSql(s, 'SELECT * FROM sample.events ORDER BY id LIMIT 1000');
      expect(existsSync(join(resultsDir(s), `${again}.enc`, 'info.json'))).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('the process killed (SIGKILL) mid-encoding: after a restart nothing half-written is left or served', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-first-read-kill-'));
    dirs.push(dataDir);
    const helpers = new URL('../helpers/service.ts', import.meta.url).href;
    const script = `
      const { startTestService } = await import(${JSON.stringify(helpers)});
      const s = await startTestService({ dataDir: ${JSON.stringify(dataDir)}, sampleRows: 300000, encodeMinBytes: 0 });
      console.log('url ' + s.url);
      setInterval(() => undefined, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const url = await new Promise<string>((ok, fail) => {
        createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('url ') && ok(line.slice(4)));
        child.once('exit', (code) => fail(new Error(`service exited ${code}`)));
      });
      const first = { url } as TestService;
      const keys = { demo: { write: 'sk_demo_write', read: 'sk_demo_read' } };
      const res = await call(first, 'POST', '/v1/sql/execute', { key: keys.demo.write, body: { sql: 'SELECT * FROM sample.events ORDER BY id' } });
      const id = res.json.execution_id as string;
      const results = join(dataDir, 'engine', 'results');
      while (!existsSync(join(results, `${id}.enc.tmp`))) {
        expect(child.exitCode).toBe(null);
        await new Promise((r) => setTimeout(r, 1));
      }
      child.kill('SIGKILL');
      await new Promise((ok) => child.once('exit', ok));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    const second = await startTestService({ dataDir, sampleRows: 300_000, encodeMinBytes: 0 });
    try {
      const names = await readdir(join(dataDir, 'engine', 'results'));
      expect(names.filter((n) => n.includes('.tmp') || n.includes('rendered'))).toEqual([]);
      // An encoding is published only whole, and only beside its result.
      for (const n of names.filter((x) => x.endsWith('.enc'))) {
        expect(existsSync(join(dataDir, 'engine', 'results', n, 'info.json'))).toBe(true);
        expect(names).toContain(n.replace(/\.enc$/, '.duckdb'));
      }
      // The restarted service runs and encodes as before.
      const id = await runSql(second, 'SELECT * FROM sample.events ORDER BY id LIMIT 5000');
      expect(existsSync(join(dataDir, 'engine', 'results', `${id}.enc`, 'info.json'))).toBe(true);
    } finally {
      await second.close();
    }
  });
});
