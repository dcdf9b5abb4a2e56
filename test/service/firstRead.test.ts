// The first read of a fresh result. By default (engine.encode_results: on_first_read) each format is
// encoded when a reader first asks for it, and that read is served from the files as the encoder
// writes them; a format nobody reads is never written. With at_completion every format is written
// as the execution's last step and published with the result. A stop while an encoding is written
// (cancel, expiry, the process killed) leaves nothing half-written.
// Results are served the same whoever ran the SQL: these services do not wall teams apart
// (walledTeams: false saves each start the team instances; tenancy is tested in walls.http.test.ts).
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, open, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ARROW_STREAM_MEDIA_TYPE } from '../../src/protocol/index.ts';
import { ManualClock } from '../../src/service/clock.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { call, executeSql, LONG_SQL, runSql, status, waitFor, waitRunning } from './api.ts';

const ROWS = 20_000;
const PAGE = 3_000;
let svc: TestService;
const dirs: string[] = [];
beforeAll(async () => {
  svc = await startTestService({ walledTeams: false, sampleRows: ROWS, limits: { page_rows: PAGE }, encodeMinBytes: 0 });
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

/** Whether the result's encoding of that format is written whole. */
function stored(s: TestService, id: string, format: Format): boolean {
  return existsSync(join(resultsDir(s), `${id}.enc`, format, 'info.json'));
}

/** The formats of the result's encoding directory, whole or not. */
async function formatsOnDisk(s: TestService, id: string): Promise<string[]> {
  const enc = join(resultsDir(s), `${id}.enc`);
  return existsSync(enc) ? (await readdir(enc)).filter((n) => n !== 'frames').sort() : [];
}

const columnsOf = async (s: TestService, id: string): Promise<string> =>
  `&columns=${encodeURIComponent((await status(s, id)).result_metadata.column_names.map((n: string) => `"${n}"`).join(','))}`;

describe('the first read of a fresh result (encode_results: on_first_read, the default)', () => {
  it('encodes only the format read, serves it from the encoder, and equals the warm read and the page query byte for byte', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
    // COMPLETED with nothing encoded: no format was asked for yet.
    expect(await formatsOnDisk(svc, id)).toEqual([]);
    const columns = await columnsOf(svc, id);
    const written: string[] = [];
    for (const format of ['json', 'csv', 'arrow'] as const) {
      const first = await readAll(svc, id, format);
      await svc.whenEncoded(id);
      written.push(format);
      expect(stored(svc, id, format), format).toBe(true);
      // Each read wrote its own format, and no other.
      expect(await formatsOnDisk(svc, id)).toEqual([...written].sort());
      const warm = await readAll(svc, id, format);
      expect(warm, format).toEqual(first);
      // The page query (every column asked for by name) builds the same bytes.
      expect(await readAll(svc, id, format, columns), format).toEqual(first);
    }
    expect((await readdir(resultsDir(svc))).filter((n) => n.includes('.tmp'))).toEqual([]);
  });

  it('a result read only as Arrow leaves no JSON or CSV encoding on disk; its pages\' metadata is the JSON pages\'', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id DESC');
    const first = await readAll(svc, id, 'arrow');
    // result_set_bytes and row counts of each Arrow page (from the Arrow encoding's own index)
    // equal those of the JSON page of the same rows (built per request: no JSON encoding).
    const columns = await columnsOf(svc, id);
    for (const offset of [0, 3 * PAGE, ROWS - (ROWS % PAGE)]) {
      const arrow = await request(`${svc.url}/v1/execution/${id}/results?offset=${offset}&limit=${PAGE}`, { headers: { 'x-service-api-key': svc.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
      await arrow.body.arrayBuffer();
      const json = await call(svc, 'GET', `/v1/execution/${id}/results?offset=${offset}&limit=${PAGE}${columns}`, { key: svc.keys.demo.read });
      expect(Number(arrow.headers['x-sluice-result-set-bytes']), `offset ${offset}`).toBe(json.json.result.metadata.result_set_bytes);
      expect(Number(arrow.headers['x-sluice-row-count'])).toBe(json.json.result.metadata.row_count);
    }
    await svc.whenEncoded(id);
    expect(await formatsOnDisk(svc, id)).toEqual(['arrow']);
    expect(stored(svc, id, 'arrow')).toBe(true);
    expect(await readAll(svc, id, 'arrow')).toEqual(first);
    expect(await formatsOnDisk(svc, id)).toEqual(['arrow']);
  });

  it('a result cut to max_result_bytes: its Arrow pages\' metadata is the JSON pages\' (the chunks summed by the Arrow encoder)', async () => {
    const s = await startTestService({ walledTeams: false, sampleRows: ROWS, encodeMinBytes: 0, limits: { max_result_bytes: 1_000_000 } });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      const st = await status(s, id);
      expect(st.state).toBe('QUERY_STATE_COMPLETED_PARTIAL');
      const total: number = st.result_metadata.total_row_count;
      expect(total).toBeLessThan(ROWS);
      const columns = await columnsOf(s, id);
      const pageRows = Math.floor(250_000 / st.result_metadata.column_names.length);
      for (let offset = 0; offset < total; offset += pageRows) {
        const q = `offset=${offset}&limit=${pageRows}&allow_partial_results=true`;
        const arrow = await request(`${s.url}/v1/execution/${id}/results?${q}`, { headers: { 'x-service-api-key': s.keys.demo.read, accept: ARROW_STREAM_MEDIA_TYPE } });
        await arrow.body.arrayBuffer();
        expect(arrow.statusCode).toBe(200);
        const json = await call(s, 'GET', `/v1/execution/${id}/results?${q}${columns}`, { key: s.keys.demo.read });
        expect(Number(arrow.headers['x-sluice-result-set-bytes']), `offset ${offset}`).toBe(json.json.result.metadata.result_set_bytes);
        expect(Number(arrow.headers['x-sluice-row-count'])).toBe(json.json.result.metadata.row_count);
      }
      await s.whenEncoded(id);
      expect(stored(s, id, 'arrow')).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('the first JSON read right after completion is byte-identical to a later read', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY id');
    const first = await readAll(svc, id, 'json');
    await svc.whenEncoded(id);
    expect(await readAll(svc, id, 'json')).toEqual(first);
    expect(await formatsOnDisk(svc, id)).toEqual(['json']);
  });

  it('two first readers at once share one encoder: identical bytes, one encoding written', async () => {
    const id = await runSql(svc, 'SELECT * FROM sample.events ORDER BY value DESC, id');
    const rows = join(resultsDir(svc), `${id}.enc`, 'json', 'rows.json');
    // The first page of one reader: the encoder runs, its file is there.
    const head = await page(svc, id, 'json', 0);
    const written = await open(rows, 'r');
    try {
      const [a, b] = await Promise.all([readAll(svc, id, 'json'), readAll(svc, id, 'json')]);
      expect(b).toEqual(a);
      expect(a[0]).toBe(head.toString('utf8').replace(/,"next_uri":"[^"]*"/, ''));
      await svc.whenEncoded(id);
      // The file being written when the first page was served is the one stored: no second
      // encoder replaced it.
      const held = await written.stat();
      expect(held.nlink).toBe(1);
      expect(statSync(rows).ino).toBe(held.ino);
      expect(stored(svc, id, 'json')).toBe(true);
    } finally {
      await written.close();
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
    const s = await startTestService({ walledTeams: false, sampleRows: 250_000, encodeMinBytes: 0 });
    try {
      // 250,000 rows: room for a loaded machine (the default wait is 20 s).
      const id = await executeSql(s, 'SELECT * FROM sample.events ORDER BY id');
      expect((await waitFor(s, id, undefined, s.keys.demo.read, 120_000)).state).toBe('QUERY_STATE_COMPLETED');
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
      await s.whenEncoded(id);
      expect(stored(s, id, 'json') && stored(s, id, 'csv')).toBe(true);
    } finally {
      await s.close();
    }
  }, 180_000);

  it('of rows larger than the encoder\'s buffers (4 MB) equals the page query', async () => {
    // Rendering a row copies its text a few times (each `||`): room for that in the engine.
    const s = await startTestService({ walledTeams: false, sampleRows: 10, encodeMinBytes: 0, engine: { memory_limit: '1GiB' } });
    try {
      // Texts of 1.3 and 2.8 MB between small rows: the second one's rendered JSON and CSV together
      // pass the split's 4 MB buffers, and are written past them.
      const id = await runSql(s, "SELECT i, CASE WHEN i IN (2, 5) THEN repeat('x', (i * 1024 + 512) * 512) || '\"' ELSE 'small' END AS t FROM range(8) r(i) ORDER BY i");
      for (const path of ['results', 'results/csv']) {
        const enc = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read });
        const dyn = await call(s, 'GET', `/v1/execution/${id}/${path}`, { key: s.keys.demo.read, query: { columns: 'i,t' } });
        expect(enc.status).toBe(200);
        expect(enc.text.length).toBeGreaterThan(4 * 1024 * 1024);
        expect(enc.text.replace(/,"next_uri":"[^"]*"/, '')).toBe(dyn.text.replace(/,"next_uri":"[^"]*"/, ''));
      }
      await s.whenEncoded(id);
      expect(stored(s, id, 'json') && stored(s, id, 'csv')).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe('engine.encode_results: at_completion', () => {
  it('publishes every format before the status says COMPLETED; each read equals the warm read and the page query byte for byte', async () => {
    const s = await startTestService({ walledTeams: false, sampleRows: ROWS, limits: { page_rows: PAGE }, encodeMinBytes: 0, engine: { encode_results: 'at_completion' } });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      // Nothing is left to write once the execution is COMPLETED: the encodings are in place.
      for (const format of ['json', 'csv', 'arrow'] as const) expect(stored(s, id, format), format).toBe(true);
      expect((await readdir(resultsDir(s))).filter((n) => n.includes('.tmp'))).toEqual([]);
      const columns = await columnsOf(s, id);
      for (const format of ['json', 'csv', 'arrow'] as const) {
        const first = await readAll(s, id, format);
        expect(await readAll(s, id, format), format).toEqual(first);
        expect(await readAll(s, id, format, columns), format).toEqual(first);
      }
    } finally {
      await s.close();
    }
  });
});

describe('engine.encode_results: when_idle', () => {
  it('completes without the encodings, serves the first read by the page query, and encodes once the service is idle', async () => {
    const s = await startTestService({ walledTeams: false, sampleRows: 5_000, encodeMinBytes: 0, engine: { encode_results: 'when_idle' } });
    try {
      // An execution kept running holds the service busy, so no encoding may start however late
      // this test looks (a loaded machine saw the result encoded by the time its completion was
      // polled): the check does not race the idle wait.
      const busy = await executeSql(s, LONG_SQL);
      await waitRunning(s, busy);
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      expect(stored(s, id, 'json')).toBe(false);
      const first = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(first.status).toBe(200);
      expect(stored(s, id, 'json')).toBe(false);
      expect((await call(s, 'POST', `/v1/execution/${busy}/cancel`, { key: s.keys.demo.write })).status).toBe(200);
      await s.whenEncoded(id);
      for (const format of ['json', 'csv', 'arrow'] as const) expect(stored(s, id, format), format).toBe(true);
      const again = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(again.text).toBe(first.text);
    } finally {
      await s.close();
    }
  });
});

describe('a stop while the encodings are written', () => {
  it('at completion, a cancel fails the execution as CANCELED and leaves no result, no encoding, no temporary file', async () => {
    const s = await startTestService({ walledTeams: false, sampleRows: 300_000, encodeMinBytes: 0, engine: { encode_results: 'at_completion' } });
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
      expect(stored(s, again, 'json')).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('the process killed (SIGKILL) while a first read is encoded: after a restart nothing half-written is left or served', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-first-read-kill-'));
    dirs.push(dataDir);
    const helpers = new URL('../helpers/service.ts', import.meta.url).href;
    const script = `
      const { startTestService } = await import(${JSON.stringify(helpers)});
      const s = await startTestService({ walledTeams: false, dataDir: ${JSON.stringify(dataDir)}, sampleRows: 300000, encodeMinBytes: 0 });
      console.log('url ' + s.url);
      setInterval(() => undefined, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const results = join(dataDir, 'engine', 'results');
    let id = '';
    try {
      const url = await new Promise<string>((ok, fail) => {
        createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('url ') && ok(line.slice(4)));
        child.once('exit', (code) => fail(new Error(`service exited ${code}`)));
      });
      const first = { url, keys: { demo: { write: 'sk_demo_write', read: 'sk_demo_read' } } } as TestService;
      id = await runSql(first, 'SELECT * FROM sample.events ORDER BY id');
      // A reader of the last page: the encoder starts and writes every row before it.
      void call(first, 'GET', `/v1/execution/${id}/results`, { key: first.keys.demo.read, query: { offset: 290_000, limit: 10_000 } }).catch(() => undefined);
      const json = join(results, `${id}.enc`, 'json');
      while (!existsSync(join(json, 'rows.json')) || existsSync(join(json, 'info.json'))) {
        expect(existsSync(join(json, 'info.json')), 'the encoding ended before it was seen').toBe(false);
        expect(child.exitCode).toBe(null);
        await new Promise((r) => setTimeout(r, 1));
      }
      child.kill('SIGKILL');
      await new Promise((ok) => child.once('exit', ok));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    const second = await startTestService({ walledTeams: false, dataDir, sampleRows: 300_000, encodeMinBytes: 0 });
    try {
      // The unfinished format is gone; the result is there, and encoded again when read.
      expect(await formatsOnDisk(second, id)).toEqual([]);
      expect((await readdir(results)).filter((n) => n.includes('.tmp'))).toEqual([]);
      const columns = (await status(second, id)).result_metadata.column_names.join(',');
      const q = { offset: 123_456, limit: 500 };
      const enc = await call(second, 'GET', `/v1/execution/${id}/results`, { key: second.keys.demo.read, query: q });
      const dyn = await call(second, 'GET', `/v1/execution/${id}/results`, { key: second.keys.demo.read, query: { ...q, columns } });
      expect(enc.status).toBe(200);
      expect(enc.text.replace(/,"next_uri":"[^"]*"/, '')).toBe(dyn.text.replace(/,"next_uri":"[^"]*"/, ''));
      await second.whenEncoded(id);
      expect(stored(second, id, 'json')).toBe(true);
    } finally {
      await second.close();
    }
  }, 120_000);

  it('a result expired while its first read is encoded answers EXPIRED and leaves no file of it', async () => {
    // Expired by retention (its expiry time passes): the result store's bound never drops a result being read.
    const clock = new ManualClock();
    const s = await startTestService({ walledTeams: false, sampleRows: 300_000, encodeMinBytes: 0, clock });
    try {
      const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
      // The first page is served once the encoder has written it; the last page's reader then
      // waits for the encoder (it is less than eight pages ahead).
      const pageRows = 31_250;
      expect((await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read, query: { limit: pageRows } })).status).toBe(200);
      const reads = call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read, query: { offset: 300_000 - pageRows, limit: pageRows } });
      expect(stored(s, id, 'json'), 'the encoding ended before the result expired').toBe(false);
      clock.advance(91 * 86_400_000);
      const deadline = Date.now() + 30_000;
      while ((await status(s, id)).state !== 'QUERY_STATE_EXPIRED' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      // The read in flight answers as a read of an expired result does: its state, no result.
      const answer = await reads;
      expect(answer.status).toBe(200);
      expect(answer.json.state).toBe('QUERY_STATE_EXPIRED');
      expect(answer.json.result).toBeUndefined();
      const later = await call(s, 'GET', `/v1/execution/${id}/results`, { key: s.keys.demo.read });
      expect(later.json.state).toBe('QUERY_STATE_EXPIRED');
      const left = async (): Promise<string[]> => (await readdir(resultsDir(s))).filter((n) => n.startsWith(id));
      for (let i = 0; i < 200 && (await left()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await left()).toEqual([]);
    } finally {
      await s.close();
    }
  }, 120_000);

  it('a service stopped while a first read is encoded closes, and leaves nothing half-written', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-first-read-stop-'));
    dirs.push(dataDir);
    const s = await startTestService({ walledTeams: false, dataDir, sampleRows: 300_000, encodeMinBytes: 0 });
    const id = await runSql(s, 'SELECT * FROM sample.events ORDER BY id');
    const reads = call(s, 'GET', `/v1/execution/${id}/results/csv`, { key: s.keys.demo.read, query: { offset: 290_000, limit: 10_000 } }).catch((err: unknown) => err);
    const csv = join(dataDir, 'engine', 'results', `${id}.enc`, 'csv');
    while (!existsSync(join(csv, 'rows.csv'))) await new Promise((r) => setTimeout(r, 1));
    await s.close();
    await reads;
    expect(existsSync(join(csv, 'info.json')) || !existsSync(csv)).toBe(true);
  }, 120_000);
});
